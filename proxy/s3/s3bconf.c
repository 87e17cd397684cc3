/*
 * s3bconf: bucket configurations (see s3bconf.h).
 *
 * Thread: the request's worker.
 */
#include "s3bconf.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "http.h"
#include "httpbody.h"
#include "s3.h"
#include "s3acl.h"
#include "s3bucket.h"
#include "s3cors.h"
#include "s3front.h"
#include "s3own.h"
#include "util.h"

#define BCONF_BODY_MAX (64u << 10)   /* a configuration's XML, at most */

struct bconf {
    enum s3sub_id id;
    const char *prop;            /* the bucket property that keeps it */
    const char *what;            /* named in a change's error */
    int (*parse)(const char *body, size_t len, json_t **v, enum s3e *code, char *msg,
                 size_t msglen);
    void (*xml)(struct gbuf *b, const json_t *v);
    enum s3e none;               /* GET without one */
    const char *none_msg;
    /* may the bucket (its properties) take v? 0, or an error answered */
    int (*fits)(struct http_req *r, const json_t *props, const json_t *v);
};

/* BucketOwnerEnforced turns ACLs off: S3 refuses it on a bucket whose ACL
 * grants anyone but the owner. */
static int ownership_fits(struct http_req *r, const json_t *props, const json_t *v)
{
    if (strcmp(json_string_value(v), "BucketOwnerEnforced"))
        return 0;
    const char *owner = s3own_owner(props);
    json_t *g = s3acl_grants(json_object_get(props, "acl"), owner);
    int priv = s3acl_private(g, owner);
    json_decref(g);
    if (priv)
        return 0;
    s3_fail(r, S3E_ACL_WITH_OWNERSHIP, "Bucket cannot have ACLs set with ObjectOwnership's "
                                       "BucketOwnerEnforced setting");
    return -1;
}

static void ownership_xml(struct gbuf *b, const json_t *v)
{
    s3own_ownership_xml(b, json_string_value(v));
}

static const struct bconf confs[] = {
    {S3SUB_CORS, "cors", "the bucket's CORS rules", s3cors_parse, s3cors_xml,
     S3E_NO_SUCH_CORS, "The CORS configuration does not exist", NULL},
    {S3SUB_PAB, "public_access_block", "the bucket's PublicAccessBlock", s3own_pab_parse,
     s3own_pab_xml, S3E_NO_SUCH_PAB, "The public access block configuration was not found",
     NULL},
    {S3SUB_OWNERSHIP, "object_ownership", "the bucket's OwnershipControls",
     s3own_ownership_parse, ownership_xml, S3E_NO_OWNERSHIP,
     "The bucket ownership controls were not found", ownership_fits},
};

struct put {
    const struct bconf *c;
    char *bucket;
};

static void put_free(void *arg)
{
    struct put *p = arg;
    free(p->bucket);
    free(p);
}

static void put_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct put *p = arg;
    char msg[300];
    enum s3e code;
    json_t *v = NULL;
    if (s3_check_md5(r, body, len)) {
        put_free(p);
        return;                  /* answered */
    }
    if (p->c->parse(body, len, &v, &code, msg, sizeof(msg))) {
        s3_fail(r, code, "%s", msg);
        put_free(p);
        return;
    }
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, p->bucket) : NULL;
    int refused = bk && p->c->fits && p->c->fits(r, bk->props, v);
    bmd_unref(m);
    if (refused)
        json_decref(v);
    else
        s3bucket_patch(r, p->bucket, json_pack("{s:o}", p->c->prop, v), p->c->what, 200);
    put_free(p);
}

void s3bconf_handle(struct http_req *r, const char *bucket, enum s3sub_id id)
{
    const struct bconf *c = NULL;
    for (size_t i = 0; i < ARRAY_LEN(confs); i++)
        if (confs[i].id == id)
            c = &confs[i];
    if (!c) {
        s3_fail(r, S3E_NOT_IMPLEMENTED, "this bucket configuration is not implemented");
        return;
    }
    if (r->method == HTTP_M_PUT) {
        struct put *p = xcalloc(1, sizeof(*p));
        p->c = c;
        p->bucket = xstrdup(bucket);
        node_read_body(r, BCONF_BODY_MAX, put_body, put_free, p);
        return;
    }
    if (r->method == HTTP_M_DELETE) {
        s3bucket_patch(r, bucket, json_pack("{s:n}", c->prop), c->what, 204);
        return;
    }
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, bucket) : NULL;
    json_t *v = bk ? json_incref(json_object_get(bk->props, c->prop)) : NULL;
    bmd_unref(m);
    if (!v || (json_is_array(v) && !json_array_size(v))) {
        s3_fail(r, c->none, "%s", c->none_msg);
    } else {
        struct gbuf b = {0};
        c->xml(&b, v);
        s3front_reply_xml(r, 200, &b);
    }
    json_decref(v);
}
