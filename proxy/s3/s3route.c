/*
 * s3route: the S3 API of the proxies, at /s3/ (path style: /s3/BUCKET/KEY),
 * at the root of the S3 port, and virtual-host style where the Host names
 * a bucket.
 *
 * Every request is verified first (s3auth) and every error is S3 XML.
 * Then it is a request on the service (ListBuckets), on a bucket
 * (s3bucket.c, s3listing.c: a subresource is served or refused, never
 * taken for the plain operation), or on an object (s3fwd.c). Each is
 * named an operation (r->op: s3.get, s3.list ...) by which the node
 * counts it once it is answered (nodemetrics.h).
 *
 * Thread: the worker's loop.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "authz.h"
#include "bmd.h"
#include "buckets.h"
#include "http.h"
#include "proxy.h"
#include "s3.h"
#include "s3auth.h"
#include "s3bconf.h"
#include "s3bucket.h"
#include "s3cors.h"
#include "s3front.h"
#include "s3fwd.h"
#include "s3listing.h"
#include "s3own.h"
#include "s3route.h"
#include "s3sub.h"
#include "s3user.h"
#include "util.h"

/* A bucket's subresource (served for r's method: s3sub_serves) or the
 * bucket itself. */
static void bucket_request(struct http_req *r, const char *b, const struct authz_who *who)
{
    const struct s3sub *sub = s3sub_find(r);
    if (sub && !s3sub_serves(sub, 0, r->method)) {
        s3sub_refuse(r, sub, 0);
        return;
    }
    if (r->method == HTTP_M_PUT && !sub) {
        s3bucket_create(r, b, who);
        return;
    }
    if (!buckets_exist(BMD_PROVIDER_SHOAL, b)) {
        s3_fail(r, S3E_NO_SUCH_BUCKET, "the specified bucket does not exist");
        return;
    }
    switch (sub ? sub->id : 0) {
    case S3SUB_LOCATION: s3bucket_location(r, b); return;
    case S3SUB_VERSIONING: s3bucket_versioning(r, b); return;
    case S3SUB_UPLOADS: s3listing_uploads(r, b); return;
    case S3SUB_DELETE: s3bucket_delete_objects(r, b); return;
    case S3SUB_VERSIONS: s3listing_objects(r, b, S3LISTING_VERSIONS); return;
    case S3SUB_TAGGING: s3bucket_tagging(r, b); return;
    case S3SUB_CORS:
    case S3SUB_PAB:
    case S3SUB_OWNERSHIP: s3bconf_handle(r, b, sub->id); return;
    case S3SUB_ACL: s3bucket_acl(r, b); return;
    case 0: break;
    default: /* served by the table, unknown here: never the plain operation */
        s3sub_refuse(r, sub, 0);
        return;
    }
    if (r->method == HTTP_M_HEAD) {
        s3bucket_head(r);
    } else if (r->method == HTTP_M_DELETE) {
        s3bucket_delete(r, b);
    } else if (r->method == HTTP_M_GET) {
        char lt[8];
        int v2 = http_query_get(r, "list-type", lt, sizeof(lt)) >= 0 && !strcmp(lt, "2");
        s3listing_objects(r, b, v2 ? S3LISTING_V2 : S3LISTING_V1);
    } else {
        s3_fail(r, S3E_NOT_IMPLEMENTED, "%s on a bucket is not implemented", r->method_name);
    }
}

/* The bucket a virtual-host style request names in its Host header
 * ("BUCKET.anything"), when that bucket exists; IP literals name none. */
static int vhost_bucket(const struct http_req *r, char *out, size_t n)
{
    const char *h = http_req_header(r, "Host");
    const char *dot = h ? strchr(h, '.') : NULL;
    if (!dot || dot == h || (size_t)(dot - h) >= n)
        return 0;
    size_t hl = strcspn(h, ":");
    if (strspn(h, "0123456789.") >= hl || h[0] == '[')
        return 0;
    memcpy(out, h, (size_t)(dot - h));
    out[dot - h] = '\0';
    return bmd_valid_name(out, strlen(out)) && buckets_exist(BMD_PROVIDER_SHOAL, out);
}

/* What an S3 request names, parsed from its path (and Host). */
enum s3what { S3W_SERVICE, S3W_BUCKET, S3W_OBJECT, S3W_BAD_BUCKET };

static enum s3what s3_parse(const struct http_req *r, const char *rest, size_t rl,
                            char bucket[S3_BUCKET_LEN], const char **key, size_t *klen)
{
    *key = rest;
    *klen = rl;
    if (vhost_bucket(r, bucket, S3_BUCKET_LEN))
        return rl == 0 ? S3W_BUCKET : S3W_OBJECT;
    if (rl == 0)
        return S3W_SERVICE;
    const char *slash = memchr(rest, '/', rl);
    size_t bl = slash ? (size_t)(slash - rest) : rl;
    if (bl == 0 || bl >= S3_BUCKET_LEN || memchr(rest, '\0', bl))
        return S3W_BAD_BUCKET;
    memcpy(bucket, rest, bl);
    bucket[bl] = '\0';
    if (!slash || bl + 1 == rl)
        return S3W_BUCKET;
    *key = slash + 1;
    *klen = rl - bl - 1;
    return S3W_OBJECT;
}

/* ---- metrics ------------------------------------------------------------------ */

/* The operations S3 requests are counted as (r->op, by which the node
 * labels their counts and latencies: nodemetrics.h): object requests by
 * method, the object and upload listings as list, the rest (bucket
 * operations, ListBuckets, POST on objects, paths that name no valid
 * bucket) as other. */
static const char *op_of(const struct http_req *r, enum s3what w)
{
    if (w == S3W_OBJECT)
        return r->method == HTTP_M_GET      ? "s3.get"
               : r->method == HTTP_M_HEAD   ? "s3.head"
               : r->method == HTTP_M_PUT    ? "s3.put"
               : r->method == HTTP_M_DELETE ? "s3.delete"
                                            : "s3.other";
    if (w == S3W_BUCKET && r->method == HTTP_M_GET) {
        const struct s3sub *sub = s3sub_find(r);
        if (!sub || sub->id == S3SUB_VERSIONS || sub->id == S3SUB_UPLOADS)
            return "s3.list";
    }
    return "s3.other";
}

/* ---- who may ------------------------------------------------------------------ */

/* Does r ask for response-* overrides of the answer's headers (which
 * S3 takes only from signed requests)? */
static int overrides(const struct http_req *r)
{
    for (const char *q = r->query; *q; q += strcspn(q, "&"), q += *q == '&')
        if (!strncmp(q, "response-", 9))
            return 1;
    return 0;
}

/* The gate on a bucket or an object once keys are configured (authz.h):
 * 0 to go on (*object_decides: only if the object's own ACL grants it,
 * which its target decides), or -1 with r answered. unsigned_: r carries
 * no signature. */
static int gate(struct http_req *r, enum s3what w, const char *b, const struct authz_who *who,
                int unsigned_, int *object_decides)
{
    *object_decides = 0;
    const struct s3sub *sub = s3sub_find(r);
    int create = w == S3W_BUCKET && r->method == HTTP_M_PUT && !sub;
    enum authz_op need = authz_op_of(r, w == S3W_OBJECT);
    int v = authz_decide_named(BMD_PROVIDER_SHOAL, b, who, need);
    int exists = v >= 0, ok = v == AUTHZ_ALLOW;
    if (unsigned_ && (create || (!ok && v != AUTHZ_IF_OBJECT) || overrides(r))) {
        if (!exists && !create)
            s3_fail(r, S3E_NO_SUCH_BUCKET, "the specified bucket does not exist");
        else if (overrides(r) && (ok || v == AUTHZ_IF_OBJECT))
            s3_fail(r, S3E_INVALID_REQUEST, "Request specific response headers cannot be used "
                                            "for anonymous GET requests.");
        else
            s3_fail(r, S3E_ACCESS_DENIED, "Access Denied");
        return -1;
    }
    if (!exists) {
        if (unsigned_) {
            s3_fail(r, S3E_NO_SUCH_BUCKET, "the specified bucket does not exist");
            return -1;
        }
        return 0;                /* 404 or CreateBucket, answered further on */
    }
    if (ok || create)
        return 0;                /* CreateBucket decides by the owner itself */
    if (v == AUTHZ_IF_OBJECT) {
        *object_decides = 1;
        return 0;
    }
    s3_fail(r, S3E_ACCESS_DENIED, "Access Denied");
    return -1;
}

/* x-amz-expected-bucket-owner, when sent, must name the bucket's owner
 * (its canonical ID, s3user.h): 1, or 0 with r answered 403. */
static int expected_owner(struct http_req *r, const char *bucket)
{
    const char *want = http_req_header(r, "x-amz-expected-bucket-owner");
    if (!want || !buckets_exist(BMD_PROVIDER_SHOAL, bucket))
        return 1;
    char owner[128], buf[S3USER_ID_MAX];
    s3own_of_bucket(bucket, owner, sizeof(owner));
    const char *id = owner[0] ? s3user_id(owner, buf, sizeof(buf)) : S3_OWNER_ID;
    if (!strcmp(want, id))
        return 1;
    s3_fail(r, S3E_ACCESS_DENIED, "Access Denied: the bucket's owner is not the one expected");
    return 0;
}

/* ---- entry -------------------------------------------------------------------- */


void s3route(struct http_req *r, const char *rest, size_t rl)
{
    struct proxy *p = r->w->ctx;
    char bucket[S3_BUCKET_LEN], msg[300];
    const char *key;
    enum s3e code;
    size_t klen;
    enum s3what w = s3_parse(r, rest, rl, bucket, &key, &klen);
    r->op = op_of(r, w);
    s3_mode(r);
    if (r->method == HTTP_M_OPTIONS) {   /* a CORS preflight */
        s3cors_preflight(r, w == S3W_BUCKET || w == S3W_OBJECT ? bucket : NULL);
        return;
    }
    if (w == S3W_BUCKET || w == S3W_OBJECT)
        s3cors_actual(r, bucket);    /* on whatever the answer is */
    struct s3auth_result auth = {0};
    /* a signature, or a bearer token (auth.h): the same keys as the native API */
    int st = auth_client(&p->node.auth, r, time(NULL), &auth, &code, msg, sizeof(msg));
    /* unsigned: a read of a public bucket or object, or 404 for no bucket */
    int unsigned_ = st && !auth_presented(r) && (w == S3W_BUCKET || w == S3W_OBJECT);
    if (st && !unsigned_) {
        s3_fail(r, code, "%s", msg);
        return;
    }
    if (unsigned_)
        auth.anonymous = 1;      /* nothing verified: no payload or chunk to check */
    struct authz_who who;
    authz_who_set(&who, &p->conf, auth_enabled(&p->node.auth), unsigned_ ? NULL : &auth);
    int object_decides = 0;
    if (who.enforced && (w == S3W_BUCKET || w == S3W_OBJECT) &&
        gate(r, w, bucket, &who, unsigned_, &object_decides))
        return;
    if ((w == S3W_BUCKET || w == S3W_OBJECT) && !expected_owner(r, bucket))
        return;
    switch (w) {
    case S3W_SERVICE:
        if (r->method == HTTP_M_GET)
            s3bucket_list_all(r, &who);
        else
            s3_fail(r, S3E_METHOD_NOT_ALLOWED, "only GET (ListBuckets) is allowed here");
        return;
    case S3W_BAD_BUCKET:
        s3_fail(r, S3E_INVALID_BUCKET_NAME, "the specified bucket is not valid");
        return;
    case S3W_BUCKET:
        bucket_request(r, bucket, &who);
        return;
    case S3W_OBJECT:
        s3fwd_object(r, bucket, &auth, &who, key, klen, object_decides);
        return;
    }
}
