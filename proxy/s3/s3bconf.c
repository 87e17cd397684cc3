/*
 * s3bconf: bucket configurations (see s3bconf.h).
 *
 * Thread: the request's worker.
 */
#include "s3bconf.h"

#include <jansson.h>
#include <stdlib.h>

#include "bmd.h"
#include "http.h"
#include "httpbody.h"
#include "s3.h"
#include "s3bucket.h"
#include "s3cors.h"
#include "s3front.h"
#include "util.h"

/* The bucket's property name (a new reference, or NULL). */
static json_t *prop_of(const char *bucket, const char *name)
{
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, bucket) : NULL;
    json_t *v = bk ? json_incref(json_object_get(bk->props, name)) : NULL;
    bmd_unref(m);
    return v;
}

static void cors_body(struct http_req *r, void *arg, char *body, size_t len)
{
    char *bucket = arg, msg[300];
    enum s3e code;
    json_t *rules;
    if (!s3_check_md5(r, body, len)) {
        if (s3cors_parse(body, len, &rules, &code, msg, sizeof(msg)))
            s3_fail(r, code, "%s", msg);
        else
            s3bucket_patch(r, bucket, json_pack("{s:o}", "cors", rules),
                           "the change of the bucket's CORS rules", 200);
    }
    free(bucket);
}

void s3bconf_cors(struct http_req *r, const char *bucket)
{
    if (r->method == HTTP_M_PUT) {
        node_read_body(r, S3CORS_BODY_MAX, cors_body, free, xstrdup(bucket));
        return;
    }
    if (r->method == HTTP_M_DELETE) {
        s3bucket_patch(r, bucket, json_pack("{s:n}", "cors"),
                       "the removal of the bucket's CORS rules", 204);
        return;
    }
    json_t *rules = prop_of(bucket, "cors");
    if (!json_array_size(rules)) {
        s3_fail(r, S3E_NO_SUCH_CORS, "The CORS configuration does not exist");
    } else {
        struct gbuf b = {0};
        s3cors_xml(&b, rules);
        s3front_reply_xml(r, 200, &b);
    }
    json_decref(rules);
}
