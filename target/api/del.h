/*
 * del: DELETE of an object (del.c).
 */
#ifndef SHOAL_TARGET_DEL_H
#define SHOAL_TARGET_DEL_H

#include <stddef.h>

struct target;
struct http_req;
struct bmd_bucket;

/* Delete the object name (store key mkey, klen bytes; taken) of bucket bk
 * and answer r: 204, or 404 when there was nothing to delete (204 in S3
 * mode: S3 deletes are idempotent). through: the bucket's backend deletes
 * its copy first (a backed bucket, not an evict). evict: only this copy
 * goes, without a tombstone. elsewhere: the name may be on a target that
 * is away (neighbour.h): 204 even when it is not here. On r's worker. */
void del_object(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                const char *name, char *mkey, size_t klen, int through, int evict,
                int elsewhere);

#endif
