/*
 * obj: the gate and the switchboard of requests on objects.
 *
 * Requests arrive redirected by a proxy (signed: served as they are) or
 * straight from a client that computed placement itself (unsigned: served
 * when this target owns the object by its map, else redirected to the
 * owner). A request is authenticated first (a proxy's signature, or the
 * client's own credentials: auth_keys), then its bucket looked up in the
 * BMD, then it goes to one handler by what it asks:
 *
 *   a subresource (?tagging, ?acl, ...)   subres.c (501 for the unknown)
 *   a multipart upload (?uploads, ...)    mpu.c
 *   GET, HEAD                             gfn.c (a neighbour's newer copy
 *                                         first), then cold.c in a backed
 *                                         bucket (warm or cold), else get.c
 *   PUT                                   put.c
 *   DELETE                                del.c
 *
 * A bucket whose backend is an HTTP origin is read-only: PUT and DELETE
 * are refused (405) but for an evict, which drops only the cached copy.
 *
 * Thread: the request's worker.
 */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "bmd.h"
#include "cmap.h"
#include "del.h"
#include "err.h"
#include "gfn.h"
#include "http.h"
#include "mpu.h"
#include "obj.h"
#include "objname.h"
#include "put.h"
#include "s3.h"
#include "s3auth.h"
#include "s3own.h"
#include "s3sub.h"
#include "subres.h"
#include "target.h"
#include "util.h"
#include "vers.h"

/* A DELETE once the neighbours sent what they had newer (gfn.h). */
static void del_next(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                     int backed, char *mkey, size_t klen, const char *name, int unsure)
{
    del_object(t, r, bk, name, mkey, klen, backed, 0, unsure); /* takes mkey */
}

static void obj_dispatch(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                         const char *name, char *mkey, size_t klen)
{
    char flag[8];
    int evict = http_query_get(r, "evict", flag, sizeof(flag)) >= 0;
    const char *spec = json_string_value(json_object_get(bk->props, "backend"));
    int backed = bmd_has_backend(bk);
    int read_only = spec && strncmp(spec, "s3://", 5) != 0; /* an HTTP origin */
    if (read_only && !evict && (r->method == HTTP_M_PUT || r->method == HTTP_M_DELETE)) {
        free(mkey);
        http_resp_header(r, "Allow", "GET, HEAD");
        http_reply_error(r, 405, "bucket '%s' reads a read-only HTTP origin (%s)", bk->name,
                         spec);
        return;
    }
    if (vers_handle(t, r, bk, name, mkey, klen))
        return; /* took mkey */
    if (subres_handle(t, r, bk, name, mkey, klen))
        return; /* took mkey */
    if (mpu_handle(t, r, bk, name, mkey, klen))
        return; /* took mkey */
    switch (r->method) {
    case HTTP_M_GET:
    case HTTP_M_HEAD:
        gfn_get(t, r, bk, backed, mkey, klen, name); /* takes mkey */
        return;
    case HTTP_M_PUT:
        put_object(t, r, name, bk, mkey, klen, NULL); /* takes mkey */
        return;
    case HTTP_M_DELETE:
        if (backed && evict)     /* only this copy: whatever the neighbours hold stays */
            del_object(t, r, bk, name, mkey, klen, 0, 1, 0);
        else
            gfn_first(t, r, bk, backed, mkey, klen, name, del_next);   /* takes mkey */
        return;
    default:
        free(mkey);
        http_resp_header(r, "Allow", "GET, HEAD, PUT, DELETE");
        http_reply_error(r, 405, "method %s not allowed on objects", r->method_name);
    }
}

/* Not routed by a proxy: serve only what this target owns. Returns 1 when
 * it answered r with a redirect to the owner. */
static int redirect_to_owner(struct target *t, struct http_req *r, const char *provider,
                             const char *bucket, const char *name)
{
    size_t kl;
    char *key = node_obj_key(provider, bucket, name, &kl);
    struct cmap *m = cmap_current();
    const struct cmap_node *owner = m ? cmap_owner(m, key, kl) : NULL;
    free(key);
    if (!owner || !strcmp(owner->id, t->node.id)) {
        cmap_unref(m);
        return 0;
    }
    http_resp_header(r, "Location", "%s%s", owner->url, r->target);
    __atomic_add_fetch(&t->node.st.redirects, 1, __ATOMIC_RELAXED);
    if (target_is_s3(r))
        s3_redirect_reply(r, owner->url, bucket);
    else
        http_reply_error(r, 307, "object is owned by target %s", owner->id);
    cmap_unref(m);
    return 1;
}

/* A client's own credentials on an S3 request (at this target's root):
 * may its key do this to the bucket (s3own.h)? Owners and admin keys
 * only: a public-read object is read through a proxy. */
static int client_allowed(struct target *t, struct http_req *r, const struct bmd_bucket *bk)
{
    const struct s3auth_result *a = r->auth;
    if (!target_is_s3(r) || a->anonymous || !auth_enabled(&t->node.auth))
        return 1;
    int read = (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD) && !s3sub_find(r);
    return s3own_allows(bk->props, a->access,
                        s3own_admin(t->conf.admin_keys, t->conf.n_admin_keys, a->access),
                        read ? S3OWN_READ : S3OWN_WRITE);
}

/* A proxy's read for someone the bucket does not let (S3OWN_PUBLIC_QUERY):
 * only a public-read object is served. */
static int public_allowed(struct target *t, struct http_req *r, const char *mkey, size_t klen)
{
    char v[4];
    if (http_query_get(r, "shoal_public", v, sizeof(v)) == -1)
        return 1;
    struct ometa *m = xmalloc(sizeof(*m));
    int ok = (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD) &&
             !store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen, m) &&
             target_acl_public(m);
    free(m);
    return ok;
}

void obj_handle(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    struct objname on;
    char err[256], provider[16];
    char flag[4];
    if (http_req_header(r, S3_MODE_HEADER) || http_query_get(r, "shoal_s3", flag, sizeof(flag)) > 0)
        s3_mode(r);
    /* Routed here by a proxy (its signature covers method, path, query and
     * expiry), or a client's own credentials (checked by s3root already
     * for S3 at the root). */
    int routed = node_check_sig(&t->node, r) > 0;
    if (!routed && !r->auth && !node_authenticate(&t->node, r))
        return;
    if (objname_parse(rest, rlen, &on, err, sizeof(err)) ||
        objname_provider(r, provider, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return;
    }
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, provider, on.bucket) : NULL;
    if (!bk) {
        bmd_unref(b);
        err_reply(r, S3E_NO_SUCH_BUCKET, "bucket '%s' not found", on.bucket);
        return;
    }
    if (!routed && r->auth && !client_allowed(t, r, bk)) {
        bmd_unref(b);
        err_reply(r, S3E_ACCESS_DENIED, "Access Denied");
        return;
    }
    char *name = xstrndup(on.name, on.name_len);
    if (!routed && redirect_to_owner(t, r, provider, on.bucket, name)) {
        free(name);
        bmd_unref(b);
        return;
    }
    size_t klen;
    char *mkey = store_mkey(provider, on.bucket, on.name, on.name_len, &klen);
    if (routed && !public_allowed(t, r, mkey, klen)) {
        free(mkey);
        err_reply(r, S3E_ACCESS_DENIED, "Access Denied");
    } else {
        obj_dispatch(t, r, bk, name, mkey, klen);
    }
    free(name);
    bmd_unref(b);
}
