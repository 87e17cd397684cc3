/*
 * obj: the gate and the switchboard of requests on objects.
 *
 * Requests arrive redirected by a proxy (signed: served as they are) or
 * straight from a client that computed placement itself (unsigned: served
 * when this target owns the object by its map, else redirected to the
 * owner). A request is authenticated first (a proxy's signature, or the
 * client's own credentials: auth_keys), then its bucket looked up in the
 * BMD and the caller's access decided by the one rule (authz.h; a proxy
 * has decided for what it routes), then it goes to one handler by what it
 * asks:
 *
 *   a subresource (?tagging, ?acl, ...)   subres.c (501 for the unknown)
 *   a multipart upload (?uploads, ...)    mpu.c
 *   ?transform= (GET only)                checked by xfget.c, then read as any GET
 *   GET, HEAD                             neighbour.c (a neighbour's newer copy
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
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "authz.h"
#include "bmd.h"
#include "cmap.h"
#include "del.h"
#include "err.h"
#include "neighbour.h"
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
#include "xfer.h"
#include "xfget.h"

/* A DELETE once the neighbours sent what they had newer (neighbour.h). */
static void del_next(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                     int backed, char *mkey, size_t klen, const char *name, int unsure)
{
    del_object(t, r, bk, name, mkey, klen, backed, 0, unsure); /* takes mkey */
}

/* A native request's query key that Shoal does not serve (NULL: none): a
 * name S3 gives a subresource (the native API has none), or a key with
 * no value but the native flags, evict and archlist. Taking either for the plain
 * operation would write or delete what the client did not ask to. */
static const char *native_unknown(const struct http_req *r, size_t *kl)
{
    for (const char *q = r->query; *q;) {
        size_t n = strcspn(q, "&");
        size_t kn = strcspn(q, "=&");
        int flag = (kn == 5 && !memcmp(q, "evict", 5)) || (kn == 8 && !memcmp(q, "archlist", 8));
        if (kn && (s3sub_named(q, kn) || (kn == n && !flag))) {
            *kl = kn;
            return q;
        }
        q += n + (q[n] == '&');
    }
    return NULL;
}

static void obj_dispatch(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                         const char *name, char *mkey, size_t klen)
{
    size_t ul;
    const char *unknown = target_is_s3(r) ? NULL : native_unknown(r, &ul);
    if (unknown) {
        free(mkey);
        http_reply_error(r, 501, "?%.*s is not implemented on the native API (S3's "
                                 "subresources are served by the S3 API)", (int)(ul > 64 ? 64 : ul),
                         unknown);
        return;
    }
    char flag[8];
    if (xfget_asked(r) && xfget_refused(r)) {
        free(mkey);              /* never the untransformed bytes in its stead */
        return;
    }
    int evict = http_query_get(r, "evict", flag, sizeof(flag)) >= 0;
    const char *spec = NULL;
    const char *scheme = bmd_backend_scheme(bk, &spec);
    int backed = scheme != NULL;
    int read_only = scheme && !strcmp(scheme, "http"); /* an HTTP origin */
    if (read_only && !evict && (r->method == HTTP_M_PUT || r->method == HTTP_M_DELETE)) {
        free(mkey);
        http_resp_header_str(r, "Allow", "GET, HEAD");
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
        neighbour_get(t, r, bk, backed, mkey, klen, name); /* takes mkey */
        return;
    case HTTP_M_PUT:
        put_object(t, r, name, bk, mkey, klen, NULL); /* takes mkey */
        return;
    case HTTP_M_DELETE:
        if (backed && evict)     /* only this copy: whatever the neighbours hold stays */
            del_object(t, r, bk, name, mkey, klen, 0, 1, 0);
        else
            neighbour_first(t, r, bk, backed, mkey, klen, name, del_next); /* takes mkey */
        return;
    default:
        free(mkey);
        http_resp_header_str(r, "Allow", "GET, HEAD, PUT, DELETE");
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

/* A request the bucket leaves to the object's own ACL (authz.h:
 * AUTHZ_IF_OBJECT) by who (NULL: unsigned): 1 when the ACL grants it, 0
 * when it does not, -ENOENT when there is no object (or its latest
 * version is a delete marker). */
static int object_allowed(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                          const char *who, const char *mkey, size_t klen)
{
    enum authz_op op = authz_op_of(r, 1);
    if (!authz_object_need(op))
        return 0;
    struct objmeta *m = xmalloc(sizeof(*m));
    char vid[64], *vkey = NULL;
    size_t vkl;
    int named = http_query_get(r, "versionId", vid, sizeof(vid)) > 0 && store_vid_valid(vid);
    struct store_mp *mp = store_pick(&t->store, mkey, klen);
    int rc = named ? store_version_find(&t->store, mp, mkey, klen, vid, &vkey, &vkl, m)
                   : store_get(&t->store, mp, mkey, klen, m);   /* a version: its own ACL */
    free(vkey);
    int ok = rc == -ENOENT || (!rc && store_is_marker(m)) ? -ENOENT
             : !rc && target_acl_allows(m, bk->props, who, op);
    free(m);
    return ok;
}

/* who may not do r to the object at mkey: 403, but 404 when there is
 * none and who may list the bucket, as S3 tells a caller who could see
 * that from a listing; never for a bucket with a backend, which may hold
 * the object still. */
static void refuse_read(struct http_req *r, const struct bmd_bucket *bk, int pa,
                        const struct authz_who *who, const char *name)
{
    if (pa == -ENOENT && authz_decide(bk->props, who, AUTHZ_LIST) == AUTHZ_ALLOW &&
        !bmd_has_backend(bk))
        err_reply(r, S3E_NO_SUCH_KEY, "object '%s' not found", name);
    else
        err_reply(r, S3E_ACCESS_DENIED, "Access Denied");
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
     * expiry; it decided who may), or a client's own credentials (checked
     * by s3root already for S3 at the root), or none (an unsigned read of
     * something public). */
    struct authz_who who;
    if (r->auth)
        authz_who_set(&who, &t->conf, auth_enabled(&t->node.auth), r->auth);
    else if (!node_identify(&t->node, r, &who))
        return;
    int routed = who.node;
    if (objname_parse(rest, rlen, &on, err, sizeof(err)) ||
        objname_provider(r, provider, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return;
    }
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, provider, on.bucket) : NULL;
    if (!bk) {
        long long mine = b ? (long long)b->snap.version : 0;
        bmd_unref(b);
        uint64_t theirs;
        if (routed && xfer_bmd_behind(r, "shoal_bmd", mine, &theirs)) {
            /* routed by newer bucket metadata than this target has: it
             * joined a moment ago and its copy is on the way */
            http_resp_header_str(r, "Retry-After", "1");
            err_reply(r, S3E_SERVICE_UNAVAILABLE, "bucket metadata v%llu is not here yet (v%lld)",
                      (unsigned long long)theirs, mine);
            return;
        }
        err_reply(r, S3E_NO_SUCH_BUCKET, "bucket '%s' not found", on.bucket);
        return;
    }
    /* the one rule (authz.h); a proxy names who when the object's ACL
     * decides */
    char wbuf[160];
    const char *routed_who;
    int v = !routed ? (int)authz_decide(bk->props, &who, authz_op_of(r, 1))
            : target_routed_who(r, wbuf, sizeof(wbuf), &routed_who) ? AUTHZ_IF_OBJECT
                                                                    : AUTHZ_ALLOW;
    if (routed && v == AUTHZ_IF_OBJECT)
        who = (struct authz_who){.access = routed_who, .enforced = 1};
    if (v == AUTHZ_DENY) {
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
    int pa = v == AUTHZ_IF_OBJECT ? object_allowed(t, r, bk, who.access, mkey, klen) : 1;
    if (pa <= 0) {
        free(mkey);
        refuse_read(r, bk, pa, &who, name);
    } else {
        obj_dispatch(t, r, bk, name, mkey, klen);
    }
    free(name);
    bmd_unref(b);
}
