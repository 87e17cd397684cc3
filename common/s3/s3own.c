/*
 * s3own: bucket ownership and canned ACLs (see s3own.h).
 */
#include "s3own.h"

#include <stdio.h>
#include <string.h>

#include "bmd.h"
#include "s3.h"
#include "util.h"

void s3own_xml(struct gbuf *b, const char *owner)
{
    s3_xml_elem(b, "ID", owner ? owner : S3_OWNER_ID);
    s3_xml_elem(b, "DisplayName", owner ? owner : S3_OWNER_ID);
}

void s3own_of_bucket(const char *name, char *out, size_t n)
{
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, name) : NULL;
    const char *owner = bk ? s3own_owner(bk->props) : NULL;
    snprintf(out, n, "%s", owner ? owner : S3_OWNER_ID);
    bmd_unref(m);
}

const char *s3own_owner(const json_t *props)
{
    return json_string_value(json_object_get(props, "owner"));
}

int s3own_public(const json_t *props)
{
    const char *acl = json_string_value(json_object_get(props, "acl"));
    return acl && !strcmp(acl, "public-read");
}
