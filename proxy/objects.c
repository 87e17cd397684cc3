/*
 * objects: the native object API on a proxy. A proxy holds no object data:
 * a request for /v1/objects/BUCKET/NAME is answered with a 307 to the
 * owning target, whose Location carries this proxy's signature over the
 * method, path, the client's whole query and an expiry, so the target
 * can tell a routed request from a stray one. The S3 front end sends its
 * object requests to the same owner with the same signed URLs.
 *
 * A target this proxy cannot reach (reach.h) is not sent clients: a read
 * of a name it owns goes to the next holder of the name's copies or
 * slices, and anything else gets 503 with Retry-After, until the target
 * answers again or the primary marks it down and the map moves its names.
 * A write never goes to a holder while the map still names the owner, so
 * no copy gets a version the owner missed. The hot path pays one look at
 * the owner's flag.
 */
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "bmd.h"
#include "buckets.h"
#include "cmap.h"
#include "http.h"
#include "objects.h"
#include "objname.h"
#include "proxy.h"
#include "reach.h"
#include "s3own.h"
#include "util.h"

const struct cmap_node *objects_owner(const struct cmap *m, const char *provider,
                                      const char *bucket, const char *name)
{
    if (!m)
        return NULL;
    size_t kl;
    char *key = node_obj_key(provider, bucket, name, &kl);
    const struct cmap_node *owner = cmap_owner(m, key, kl);
    free(key);
    return owner;
}

/* How many targets hold provider/bucket's names: its mirror copies, or
 * for erasure coding the owner and every slice (a small object's copies
 * are among them); 1 when only the owner does. */
static int holders_of(const char *provider, const char *bucket)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, provider, bucket) : NULL;
    struct bmd_ec ec;
    int k = !bk ? 1 : bmd_ec(bk, &ec) ? 1 + ec.d + ec.p : bmd_copies(bk);
    bmd_unref(b);
    return k < CMAP_COPIES_MAX ? k : CMAP_COPIES_MAX;
}

const struct cmap_node *objects_pick(const struct cmap *m, const char *provider,
                                     const char *bucket, const char *name, int read,
                                     const struct cmap_node **lost)
{
    const struct cmap_node *owner = objects_owner(m, provider, bucket, name);
    *lost = NULL;
    if (!owner || !reach_down(owner))
        return owner;
    *lost = owner;
    int k = read ? holders_of(provider, bucket) : 1;
    if (k < 2)
        return NULL;
    const struct cmap_node *h[CMAP_COPIES_MAX];
    size_t kl;
    char *key = node_obj_key(provider, bucket, name, &kl);
    int n = cmap_holders(m, key, kl, h, k);
    free(key);
    for (int i = 1; i < n; i++)
        if (!reach_down(h[i]))
            return h[i];
    return NULL;
}

char *objects_url(const struct node *n, const struct cmap_node *owner, const char *method,
                  const char *bucket, const char *name, size_t nlen, const char *query)
{
    char *en = http_pct_encode(name, nlen, 1);
    char *path = xstrcat("/v1/objects/", bucket, "/", en, NULL);
    /* the bucket metadata this proxy routed by: a target that joined a
     * moment ago and has none as new says so (503), not "no such bucket" */
    struct bmd *b = bmd_current();
    int64_t v = b ? (int64_t)b->snap.version : 0;
    bmd_unref(b);
    struct gbuf q = {0};
    if (query && query[0])
        gbuf_strs(&q, query, "&", NULL);
    gbuf_str(&q, "shoal_bmd=");
    gbuf_i64(&q, v);
    char *url =
        node_signed_url(n, !strcmp(method, "HEAD") ? "GET" : method, owner->url, path, q.p);
    gbuf_free(&q);
    free(path);
    free(en);
    return url;
}

static int has_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            return 1;
    return 0;
}

/* The 307's JSON body. Ids and URLs are plain tokens (cluster_join), the
 * path is percent-encoded; only a client's query may need escaping. */
static char *redirect_body(const char *id, const char *url)
{
    if (!strpbrk(url, "\"\\") && !has_ctl(url))
        return xasprintf("{\"target\":\"%s\",\"location\":\"%s\"}\n", id, url);
    json_t *j = json_pack("{s:s, s:s}", "target", id, "location", url);
    char *body = j ? json_dumps(j, JSON_COMPACT) : xstrdup("{}");
    json_decref(j);
    return body;
}

static void redirect(struct proxy *p, struct http_req *r, const char *rest, size_t rlen);

static void redirect_again(struct http_req *r)
{
    static const char objs[] = "/v1/objects/";
    redirect(r->w->ctx, r, r->path + sizeof(objs) - 1, r->path_len - (sizeof(objs) - 1));
}

/* May the caller do what r asks of an object of the bucket (authz.h)? 1
 * to go on, with *pub when only the object's own ACL may allow it (its
 * target decides); 0 with r answered 403. */
static int allowed(struct http_req *r, const struct authz_who *who, const char *provider,
                   const char *bucket, int *pub)
{
    int v = authz_decide_named(provider, bucket, who, authz_op_of(r, 1));
    if (v == AUTHZ_DENY) {
        http_reply_error(r, 403, "access denied: %s may not %s objects of bucket '%s'",
                         who->access ? who->access : "an unsigned request",
                         r->method == HTTP_M_GET || r->method == HTTP_M_HEAD ? "read" : "change",
                         bucket);
        return 0;
    }
    *pub = v == AUTHZ_IF_OBJECT;
    return 1;
}

static void redirect(struct proxy *p, struct http_req *r, const char *rest, size_t rlen)
{
    struct objname on;
    struct authz_who who;
    char err[256], provider[16];
    if (!node_identify(&p->node, r, &who))
        return;
    if (objname_parse(rest, rlen, &on, err, sizeof(err)) ||
        objname_provider(r, provider, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return;
    }
    if (r->method != HTTP_M_GET && r->method != HTTP_M_HEAD && r->method != HTTP_M_PUT &&
        r->method != HTTP_M_DELETE) {
        http_resp_header_str(r, "Allow", "GET, HEAD, PUT, DELETE");
        http_reply_error(r, 405, "method %s not allowed on objects", r->method_name);
        return;
    }
    int exists = buckets_exist(provider, on.bucket);
    if (!exists && strcmp(provider, BMD_PROVIDER_SHOAL) && who.enforced && !who.access &&
        !who.admin) {
        http_reply_error(r, 403, "access denied: an unsigned request adds no bucket");
        return;
    }
    if (!exists && strcmp(provider, BMD_PROVIDER_SHOAL)) {
        /* a remote bucket named by its provider joins on first use */
        buckets_ensure(r, provider, on.bucket, redirect_again);
        return;
    }
    if (!exists) {
        http_reply_error(r, 404, "bucket '%s' not found", on.bucket);
        return;
    }
    int pub = 0;
    if (!allowed(r, &who, provider, on.bucket, &pub))
        return;
    char *name = xstrndup(on.name, on.name_len);
    struct cmap *m = cmap_current();
    const struct cmap_node *lost;
    const struct cmap_node *owner = objects_pick(m, provider, on.bucket, name,
                                                 r->method == HTTP_M_GET ||
                                                     r->method == HTTP_M_HEAD,
                                                 &lost);
    if (!owner) {
        if (lost) {
            http_resp_header_str(r, "Retry-After", "1");
            http_reply_error(r, 503, "target %s, which holds '%s', cannot be reached from "
                             "this proxy", lost->id, name);
        } else {
            http_reply_error(r, 503, "no storage target is in the cluster");
        }
        cmap_unref(m);
        free(name);
        return;
    }
    /* the signature covers the client's whole query too, and who asks
     * when the object's ACL decides */
    char *wq = pub ? s3own_who_query(&who) : NULL;
    char *q = pub ? xasprintf("%s%s%s", r->query, r->query[0] ? "&" : "", wq) : NULL;
    free(wq);
    char *url = objects_url(&p->node, owner, r->method_name, on.bucket, name, on.name_len,
                            q ? q : r->query);
    free(q);
    http_resp_header_str(r, "Location", url);
    __atomic_add_fetch(&p->node.st.redirects, 1, __ATOMIC_RELAXED);
    char *body = redirect_body(owner->id, url);
    cmap_unref(m);
    free(url);
    free(name);
    http_reply(r, 307, "application/json", body, strlen(body));
    free(body);
}

/* Who asks is decided per bucket, once it is known (allowed). */
void objects_route(struct http_req *r, const char *rest, size_t rlen)
{
    redirect(r->w->ctx, r, rest, rlen);
}
