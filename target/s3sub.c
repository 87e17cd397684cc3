/*
 * s3sub: S3 subresources of objects on the target (placeholder until the
 * subresource table lands).
 */
#include <stddef.h>

#include "target.h"

int s3sub_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                 const char *name, char *mkey, size_t klen)
{
    (void)t, (void)r, (void)bk, (void)name, (void)mkey, (void)klen;
    return 0;
}
