/*
 * shoal-target: owns mountpaths and serves the objects HRW places on it.
 *
 * Requests arrive redirected by a proxy (signed: served as they are) or
 * straight from a client that computed placement itself (unsigned: served
 * when this target owns the object by its map, else redirected to the
 * owner). Object data moves with sendfile on GET and streams through a
 * work file on PUT; every blocking step (fsync, RocksDB writes, listing,
 * unlink) runs on the I/O pool and completes back on the worker's loop.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "bmd.h"
#include "cmap.h"
#include "config.h"
#include "http.h"
#include "iopool.h"
#include "log.h"
#include "node.h"
#include "objname.h"
#include "store.h"
#include "target.h"
#include "s3.h"
#include "s3list.h"
#include "hcli.h"
#include "hdrparse.h"
#include "util.h"


#define LIST_MAX 10000

int target_errno_status(int rc)
{
    switch (rc) {
    case -ENOENT: return 404;
    case -ENOSPC: return 507;
    case -EDQUOT: return 507;
    default: return 500;
    }
}

int target_is_s3(const struct http_req *r)
{
    return r->on_error == s3_error_reply;
}

void target_meta_headers(struct http_req *r, const struct ometa *m)
{
    char date[64], etag[OMETA_ETAG_MAX + 1];
    s3_http_date(m->mtime_ns, date, sizeof(date));
    ometa_etag(m, etag, sizeof(etag));
    http_resp_header(r, "ETag", "%s", etag);
    http_resp_header(r, "X-Shoal-Checksum", "xxh3-64:%016llx", (unsigned long long)m->cksum);
    http_resp_header(r, "X-Shoal-Version", "%llu", (unsigned long long)m->version);
    http_resp_header(r, "Last-Modified", "%s", date);
    http_resp_header(r, "Accept-Ranges", "bytes");
    for (size_t off = 0; off < m->umeta_len;) {
        const char *k = m->umeta + off;
        const char *v = k + strlen(k) + 1;
        char name[OMETA_UMETA_MAX + 16];
        snprintf(name, sizeof(name), "x-amz-meta-%s", k);
        http_resp_header(r, name, "%s", v);
        off = (size_t)(v - m->umeta) + strlen(v) + 1;
    }
    s3sub_meta_headers(r, m);
}

/* ---- GET / HEAD ---------------------------------------------------------- */

/* Conditional GET/HEAD in RFC 9110's order: 0 to go on, or 412 / 304. */
static int check_conditions(const struct http_req *r, const struct ometa *m, const char *etag)
{
    const char *im = http_req_header(r, "If-Match");
    const char *inm = http_req_header(r, "If-None-Match");
    const char *ius = http_req_header(r, "If-Unmodified-Since");
    const char *ims = http_req_header(r, "If-Modified-Since");
    time_t mt = (time_t)(m->mtime_ns / 1000000000u), t;
    if (im) {
        if (!hdr_etag_listed(im, etag))
            return 412;
    } else if (ius && !s3_parse_http_date(ius, &t) && mt > t) {
        return 412;
    }
    if (inm) {
        if (hdr_etag_listed(inm, etag))
            return 304;
    } else if (ims && !s3_parse_http_date(ims, &t) && mt <= t) {
        return 304;
    }
    return 0;
}

/* S3's response-* query parameters override these response headers. */
static void s3_overrides(struct http_req *r, const struct ometa *m)
{
    static const char *const map[][2] = {
        {"response-content-language", "Content-Language"},
        {"response-expires", "Expires"},
        {"response-cache-control", "Cache-Control"},
        {"response-content-disposition", "Content-Disposition"},
        {"response-content-encoding", "Content-Encoding"},
    };
    char v[1024];
    if (http_query_get(r, "response-content-type", v, sizeof(v)) >= 0)
        http_resp_header(r, "Content-Type", "%s", v);
    else
        http_resp_header(r, "Content-Type", "%s", m->ctype[0] ? m->ctype : "binary/octet-stream");
    for (size_t i = 0; i < ARRAY_LEN(map); i++)
        if (http_query_get(r, map[i][0], v, sizeof(v)) >= 0)
            http_resp_header(r, map[i][1], "%s", v);
}

void target_serve_local(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                        const char *cache)
{
    struct store_mp *mp = store_pick(&t->store, mkey, klen);
    struct ometa m;
    int fd = -1, rc = 0;
    /* A PUT may replace the file between the lookup and the open; the
     * second round sees the new metadata. */
    for (int tries = 0; tries < 2 && fd < 0; tries++) {
        if ((rc = store_get(&t->store, mp, mkey, klen, &m)))
            break;
        if ((fd = store_data_open(mp, mkey, klen, m.uid)) < 0)
            rc = fd;
    }
    if (fd < 0) {
        node_count(&t->node, r->method == HTTP_M_HEAD ? ST_HEAD : ST_GET, target_errno_status(rc));
        if (rc == -ENOENT)
            http_reply_error(r, 404, "object not found");
        else
            http_reply_error(r, 500, "cannot read object: %s", strerror(-rc));
        return;
    }
    uint64_t off = 0, len = m.size;
    if (cache)
        http_resp_header(r, "X-Shoal-Cache", "%s", cache);
    target_meta_headers(r, &m);
    char etag[OMETA_ETAG_MAX + 1];
    ometa_etag(&m, etag, sizeof(etag));
    int cond = check_conditions(r, &m, etag);
    if (cond) {
        close(fd);
        node_count(&t->node, r->method == HTTP_M_HEAD ? ST_HEAD : ST_GET, cond);
        if (cond == 412) {
            r->err_code = "PreconditionFailed";
            http_reply_error(r, 412, "at least one of the preconditions did not hold");
        } else {
            http_resp_begin(r, 304, 0);
            http_resp_end(r);
        }
        return;
    }
    int rg = hdr_parse_range(http_req_header(r, "Range"), m.size, &off, &len);
    if (rg < 0) {
        close(fd);
        http_resp_header(r, "Content-Range", "bytes */%llu", (unsigned long long)m.size);
        node_count(&t->node, ST_GET, 416);
        http_reply_error(r, 416, "range not satisfiable for %llu bytes",
                         (unsigned long long)m.size);
        return;
    }
    if (target_is_s3(r))
        s3_overrides(r, &m);
    else
        http_resp_header(r, "Content-Type", "%s", m.ctype[0] ? m.ctype : "application/octet-stream");
    int status = 200;
    if (rg > 0) {
        status = 206;
        http_resp_header(r, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)off,
                         (unsigned long long)(off + len - 1), (unsigned long long)m.size);
    }
    http_resp_begin(r, status, (int64_t)len);
    http_resp_file(r, fd, (int64_t)off, (int64_t)len);
    http_resp_end(r);
    node_count(&t->node, r->method == HTTP_M_HEAD ? ST_HEAD : ST_GET, status);
    if (r->method != HTTP_M_HEAD)
        node_count_bytes(&t->node, 0, len);
}

/* ---- DELETE -------------------------------------------------------------- */

struct del {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    int rc;
    int remote_found;            /* the backend had it (or cannot tell) */
    struct backend b;
    char *name;
};

static void del_work(void *arg)
{
    struct del *d = arg;
    d->rc = store_delete(&d->t->store, store_pick(&d->t->store, d->mkey, d->klen), d->mkey,
                         d->klen);
    if (d->rc == -ENOENT && d->remote_found)
        d->rc = 0; /* gone from the backend; we had no copy */
}

static void del_done(void *arg)
{
    struct del *d = arg;
    if (d->rc == -ENOENT && target_is_s3(d->r))
        d->rc = 0; /* S3 deletes are idempotent: 204 for a missing key */
    int st = d->rc ? target_errno_status(d->rc) : 204;
    node_count(&d->t->node, ST_DELETE, st);
    if (d->rc == -ENOENT)
        http_reply_error(d->r, 404, "object not found");
    else if (d->rc)
        http_reply_error(d->r, st, "cannot delete object: %s", strerror(-d->rc));
    else
        http_reply(d->r, 204, NULL, NULL, 0);
    http_req_unref(d->r);
    backend_free(&d->b);
    free(d->name);
    free(d->mkey);
    free(d);
}

/* DELETE of a backed object: the backend's copy first, then ours. */
static void del_backend_done(void *arg, const struct backend_obj *o)
{
    struct del *d = arg;
    if (o->status != 404 && (o->status < 200 || o->status > 299)) {
        char msg[300];
        int st = backend_status(&d->b, o, msg, sizeof(msg));
        node_count(&d->t->node, ST_DELETE, st);
        http_reply_error(d->r, st, "%s", msg);
        http_req_unref(d->r);
        backend_free(&d->b);
        free(d->name);
        free(d->mkey);
        free(d);
        return;
    }
    d->remote_found = o->status != 404;
    iopool_submit(d->t->io, d->r->w->q, del_work, del_done, d);
}

/* ---- object dispatch ----------------------------------------------------- */

static void obj_dispatch(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                         const char *name, char *mkey, size_t klen);

static void obj_handle(struct target *t, struct http_req *r, const char *rest, size_t rlen)
{
    struct objname on;
    char err[256], provider[16];
    char flag[4];
    if (http_req_header(r, S3_MODE_HEADER) || http_query_get(r, "shoal_s3", flag, sizeof(flag)) > 0)
        s3_mode(r);
    /* Routed here by a proxy (its signature covers method, path, query and
     * expiry), or a client's own credentials (checked by s3_root already
     * for S3 at the root). */
    int routed = node_check_sig(&t->node, r) > 0;
    if (!routed && !r->auth && !node_authenticate(&t->node, r))
        return;
    if (objname_parse(rest, rlen, &on, err, sizeof(err)) ||
        objname_provider(r, provider, err, sizeof(err))) {
        node_count(&t->node, ST_OTHER, 400);
        http_reply_error(r, 400, "%s", err);
        return;
    }
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, provider, on.bucket) : NULL;
    if (!bk) {
        bmd_unref(b);
        node_count(&t->node, ST_OTHER, 404);
        r->err_code = "NoSuchBucket";
        http_reply_error(r, 404, "bucket '%s' not found", on.bucket);
        return;
    }
    char *name = xstrndup(on.name, on.name_len);
    if (!routed) {
        /* Not routed by a proxy: serve only what this target owns. */
        size_t kl;
        char *key = node_obj_key(provider, on.bucket, name, &kl);
        struct cmap *m = cmap_current();
        const struct cmap_node *owner = m ? cmap_owner(m, key, kl) : NULL;
        free(key);
        if (owner && strcmp(owner->id, t->node.id)) {
            http_resp_header(r, "Location", "%s%s", owner->url, r->target);
            __atomic_add_fetch(&t->node.st.redirects, 1, __ATOMIC_RELAXED);
            if (target_is_s3(r))
                s3_redirect_reply(r, owner->url, on.bucket);
            else
                http_reply_error(r, 307, "object is owned by target %s", owner->id);
            cmap_unref(m);
            free(name);
            bmd_unref(b);
            return;
        }
        cmap_unref(m);
    }
    size_t klen;
    char *mkey = store_mkey(provider, on.bucket, on.name, on.name_len, &klen);
    obj_dispatch(t, r, bk, name, mkey, klen);
    free(name);
    bmd_unref(b);
}

/*
 * S3 at the root ("/BUCKET/KEY"): s3cmd, redirected by a proxy in
 * s3_redirect mode, follows the TemporaryRedirect's <Endpoint> and re-sends
 * the request here, signed anew. It is verified with the cluster's S3 keys
 * and served like a routed S3 request; a key another target owns is
 * redirected there the same way. (The body's signed SHA-256, if any, is
 * not checked here; Content-MD5 is.)
 */
static void s3_root(struct target *t, struct http_req *r)
{
    s3_mode(r);
    struct s3auth_result *res = xmalloc(sizeof(*res));
    const char *code = NULL;
    char msg[300];
    int st = auth_client(&t->node.auth, r, time(NULL), res, &code, msg, sizeof(msg));
    if (st) {
        free(res);
        s3_error(r, st, code, "%s", msg);
        return;
    }
    r->auth = res; /* for the chunk signatures of a streaming upload */
    if (r->path_len < 2 || !memchr(r->path + 1, '/', r->path_len - 1)) {
        s3_error(r, 405, "MethodNotAllowed", "a target serves objects only; ask a proxy");
        return;
    }
    obj_handle(t, r, r->path + 1, r->path_len - 1);
}

static void obj_dispatch(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                         const char *name, char *mkey, size_t klen)
{
    char flag[8];
    int evict = http_query_get(r, "evict", flag, sizeof(flag)) >= 0;
    const char *spec = json_string_value(json_object_get(bk->props, "backend"));
    int backed = !strcmp(bk->provider, BMD_PROVIDER_S3) || (spec && spec[0]);
    int read_only = spec && strncmp(spec, "s3://", 5) != 0; /* an HTTP origin */
    if (read_only && !evict && (r->method == HTTP_M_PUT || r->method == HTTP_M_DELETE)) {
        free(mkey);
        node_count(&t->node, ST_OTHER, 405);
        http_resp_header(r, "Allow", "GET, HEAD");
        http_reply_error(r, 405, "bucket '%s' reads a read-only HTTP origin (%s)", bk->name,
                         spec);
        return;
    }
    if (s3sub_handle(t, r, bk, name, mkey, klen))
        return; /* took mkey */
    if (mpu_handle(t, r, bk, name, mkey, klen))
        return; /* took mkey */
    switch (r->method) {
    case HTTP_M_GET:
    case HTTP_M_HEAD:
        if (backed) {
            cold_get(t, r, bk, mkey, klen, name); /* takes mkey */
            return;
        }
        target_serve_local(t, r, mkey, klen, NULL);
        free(mkey);
        return;
    case HTTP_M_PUT: {
        target_put(t, r, name, bk, mkey, klen, NULL); /* takes mkey */
        return;
    }
    case HTTP_M_DELETE: {
        struct del *d = xcalloc(1, sizeof(*d));
        d->t = t;
        d->r = r;
        d->mkey = mkey;
        d->klen = klen;
        http_req_ref(r);
        if (backed && !evict) {
            backend_resolve(t, bk, &d->b);
            d->name = xstrdup(name);
            backend_delete(target_cli(r), &d->b, name, del_backend_done, d);
        } else {
            iopool_submit(t->io, r->w->q, del_work, del_done, d);
        }
        return;
    }
    default:
        free(mkey);
        http_resp_header(r, "Allow", "GET, HEAD, PUT, DELETE");
        http_reply_error(r, 405, "method %s not allowed on objects", r->method_name);
    }
}

/* ---- listing (for the proxy's merge) -------------------------------------- */

struct list {
    struct target *t;
    struct http_req *r;
    char provider[16], bucket[64], prefix[OBJNAME_MAX + 1], after[OBJNAME_MAX + 1],
        until[OBJNAME_MAX + 1], from[OBJNAME_MAX + 1];
    int limit, more, rc;
    json_t *arr;
};

static void list_work(void *arg)
{
    struct list *l = arg;
    l->rc = store_list(&l->t->store, l->provider, l->bucket, l->prefix, l->after, l->from,
                       l->until, l->limit, l->arr, &l->more);
}

static void list_done(void *arg)
{
    struct list *l = arg;
    node_count(&l->t->node, ST_LIST, l->rc ? 500 : 200);
    if (l->rc) {
        json_decref(l->arr);
        http_reply_error(l->r, 500, "cannot list: %s", strerror(-l->rc));
    } else {
        http_reply_json(l->r, 200, json_pack("{s:o, s:b}", "objects", l->arr, "more", l->more));
    }
    http_req_unref(l->r);
    free(l);
}

static void list_handle(struct target *t, struct http_req *r)
{
    struct list *l = xcalloc(1, sizeof(*l));
    char lim[16], err[256];
    l->t = t;
    l->r = r;
    l->limit = 1000;
    if (http_query_get(r, "bucket", l->bucket, sizeof(l->bucket)) < 1 ||
        !bmd_valid_name(l->bucket, strlen(l->bucket)) ||
        objname_provider(r, l->provider, err, sizeof(err)) ||
        http_query_get(r, "prefix", l->prefix, sizeof(l->prefix)) == -2 ||
        http_query_get(r, "after", l->after, sizeof(l->after)) == -2 ||
        http_query_get(r, "until", l->until, sizeof(l->until)) == -2 ||
        http_query_get(r, "from", l->from, sizeof(l->from)) == -2) {
        free(l);
        http_reply_error(r, 400, "bad list request");
        return;
    }
    if (http_query_get(r, "limit", lim, sizeof(lim)) > 0) {
        uint64_t v;
        if (parse_u64(lim, strlen(lim), &v) || v < 1 || v > LIST_MAX) {
            free(l);
            http_reply_error(r, 400, "limit must be 1..%d", LIST_MAX);
            return;
        }
        l->limit = (int)v;
    }
    l->arr = json_array();
    http_req_ref(r);
    iopool_submit(t->io, r->w->q, list_work, list_done, l);
}

/* ---- one page of a backend's listing ------------------------------------------ */

struct rlist {
    struct target *t;
    struct http_req *r;
    struct backend b;
};

static void rlist_done(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct rlist *l = arg;
    struct http_req *r = l->r;
    struct s3list sl;
    char err[300];
    if (o->status != 200) {
        int st = backend_status(&l->b, o, err, sizeof(err));
        http_reply_error(r, st, "%s", err);
    } else if (s3list_parse(body, len, &sl, err, sizeof(err))) {
        http_reply_error(r, 502, "backend %s sent a bad listing: %s", l->b.label, err);
    } else {
        json_t *arr = json_array();
        for (int i = 0; i < sl.n; i++)
            json_array_append_new(
                arr, json_pack("{s:s, s:I, s:s, s:s}", "name", sl.objs[i].key, "size",
                               (json_int_t)sl.objs[i].size, "etag",
                               sl.objs[i].etag ? sl.objs[i].etag : "", "last_modified",
                               sl.objs[i].last_modified ? sl.objs[i].last_modified : ""));
        const char *next = sl.truncated && sl.next_token ? sl.next_token : "";
        http_reply_json(r, 200, json_pack("{s:o, s:s}", "objects", arr, "next", next));
        s3list_free(&sl);
    }
    node_count(&l->t->node, ST_LIST, o->status == 200 ? 200 : 502);
    backend_free(&l->b);
    http_req_unref(r);
    free(l);
}

static void rlist_handle(struct target *t, struct http_req *r)
{
    char bucket[64], provider[16], prefix[OBJNAME_MAX + 1] = "", token[2048] = "", lim[16];
    char err[256];
    int limit = 1000;
    if (http_query_get(r, "bucket", bucket, sizeof(bucket)) < 1 ||
        objname_provider(r, provider, err, sizeof(err)) ||
        http_query_get(r, "prefix", prefix, sizeof(prefix)) == -2 ||
        http_query_get(r, "token", token, sizeof(token)) == -2) {
        http_reply_error(r, 400, "bad remote list request");
        return;
    }
    if (http_query_get(r, "limit", lim, sizeof(lim)) > 0) {
        uint64_t v;
        if (parse_u64(lim, strlen(lim), &v) || v < 1 || v > 1000) {
            http_reply_error(r, 400, "limit must be 1..1000 for a backend listing");
            return;
        }
        limit = (int)v;
    }
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = bmd_find(b, provider, bucket);
    struct rlist *l = xcalloc(1, sizeof(*l));
    if (bk)
        backend_resolve(t, bk, &l->b);
    bmd_unref(b);
    if (l->b.kind != BK_S3) {
        backend_free(&l->b);
        free(l);
        http_reply_error(r, bk ? 400 : 404, bk ? "bucket '%s' has no listable backend"
                                               : "bucket '%s' not found", bucket);
        return;
    }
    l->t = t;
    l->r = r;
    http_req_ref(r);
    backend_list(target_cli(r), &l->b, prefix, token, limit, rlist_done, l);
}

/* ---- bucket removal -------------------------------------------------------- */

struct purge {
    struct target *t;
    char *provider, *bucket;
};

static void purge_work(void *arg)
{
    struct purge *p = arg;
    struct bmd *b = bmd_current();
    int back = b && bmd_find(b, p->provider, p->bucket);
    bmd_unref(b);
    if (!back) {
        long n = store_purge(&p->t->store, p->provider, p->bucket);
        log_info("bucket %s/%s destroyed: %ld objects removed", p->provider, p->bucket, n);
    }
    free(p->provider);
    free(p->bucket);
    free(p);
}

/* Any thread: buckets gone from the new BMD lose their objects here. */
static void on_bmd(struct node *n, struct bmd *old_bmd, struct bmd *new_bmd)
{
    struct target *t = n->owner;
    if (!old_bmd || !t->io)
        return;
    for (int i = 0; i < old_bmd->n; i++) {
        const struct bmd_bucket *bk = &old_bmd->b[i];
        if (bmd_find(new_bmd, bk->provider, bk->name))
            continue;
        struct purge *p = xcalloc(1, sizeof(*p));
        p->t = t;
        p->provider = xstrdup(bk->provider);
        p->bucket = xstrdup(bk->name);
        iopool_submit(t->io, NULL, purge_work, NULL, p);
    }
}

/* ---- dispatch -------------------------------------------------------------- */

static int has_prefix(const struct http_req *r, const char *p, size_t *plen)
{
    *plen = strlen(p);
    return r->path_len >= *plen && !memcmp(r->path, p, *plen);
}

static void handle(struct http_req *r)
{
    struct target *t = r->w->ctx;
    size_t pl;
    if (node_handle(&t->node, r))
        return;
    if (has_prefix(r, "/v1/objects/", &pl)) {
        obj_handle(t, r, r->path + pl, r->path_len - pl);
        return;
    }
    if (has_prefix(r, "/v1/internal/", &pl) && node_check_sig(&t->node, r) != 1) {
        node_count(&t->node, ST_OTHER, 403);
        r->err_code = "AccessDenied";
        http_reply_error(r, 403, "internal endpoints take only cluster-signed requests");
        return;
    }
    if (http_path_is(r, "/v1/internal/list") && r->method == HTTP_M_GET) {
        list_handle(t, r);
        return;
    }
    if (http_path_is(r, "/v1/internal/uploads") && r->method == HTTP_M_GET) {
        mpu_list_handle(t, r);
        return;
    }
    if (http_path_is(r, "/v1/internal/list-remote") && r->method == HTTP_M_GET) {
        rlist_handle(t, r);
        return;
    }
    if (!has_prefix(r, "/v1/", &pl)) {
        s3_root(t, r);
        return;
    }
    node_count(&t->node, ST_OTHER, 404);
    http_reply_error(r, 404, "no such endpoint: %s %.*s", r->method_name, (int)r->path_len,
                     r->path);
}

static void worker_init(struct http_worker *w)
{
    w->local = hcli_new(w->base);
}

static void worker_fini(struct http_worker *w)
{
    hcli_free(w->local);
}

int main(int argc, char **argv)
{
    static struct target t;
    char err[512];
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        conf_usage(argv[0]);
        return 0;
    }
    node_block_signals();
    if (conf_load(&t.conf, argc, argv, err, sizeof(err))) {
        fprintf(stderr, "shoal-target: %s\n", err);
        conf_free(&t.conf);
        return 2;
    }
    log_init("shoal-target", (enum log_level)log_level_parse(t.conf.log_level));
    if (t.conf.n_mountpaths < 1) {
        fprintf(stderr, "shoal-target: option 'mountpaths' needs at least one directory\n");
        conf_free(&t.conf);
        return 2;
    }
    if (node_init(&t.node, &t.conf, NODE_TARGET, err, sizeof(err)) ||
        store_open(&t.store, t.conf.mountpaths, t.conf.n_mountpaths, t.conf.fsync, err,
                   sizeof(err))) {
        fprintf(stderr, "shoal-target: %s\n", err);
        store_close(&t.store);
        conf_free(&t.conf);
        return 1;
    }
    t.node.owner = &t;
    t.node.on_bmd = on_bmd;
    s3_cfg_resolve(&t.s3, t.conf.s3_endpoint, t.conf.s3_region, t.conf.s3_addressing,
                   t.conf.s3_access_key, t.conf.s3_secret_key, t.conf.s3_session_token,
                   t.conf.s3_profile);
    log_info("S3 backends: endpoint %s, region %s, %s addressing, %s", t.s3.endpoint,
             t.s3.region, t.s3.vhost ? "virtual-host" : "path",
             t.s3.access_key[0] ? "signed requests" : "anonymous requests");
    t.io = iopool_new(t.conf.io_threads);
    struct http_server_opts o = {
        .host = t.conf.host,
        .port = t.conf.port,
        .workers = t.conf.workers,
        .max_header_bytes = t.conf.max_header_bytes,
        .max_headers = t.conf.max_headers,
        .idle_timeout_s = t.conf.idle_timeout_s,
        .header_timeout_s = t.conf.header_timeout_s,
        .max_connections = t.conf.max_connections,
        .handler = handle,
        .ctx = &t,
        .worker_init = worker_init,
        .worker_fini = worker_fini,
    };
    struct http_server *srv = http_server_start(&o, err, sizeof(err));
    if (!srv) {
        fprintf(stderr, "shoal-target: %s\n", err);
        iopool_free(t.io);
        store_close(&t.store);
        conf_free(&t.conf);
        return 1;
    }
    node_start(&t.node);
    log_info("target %s listening on %s:%d with %d mountpaths", t.node.id, t.conf.host,
             t.conf.port, t.store.n);
    int sig = node_wait_signal();
    log_info("signal %d: shutting down", sig);
    http_server_stop(srv);
    node_stop(&t.node);
    iopool_free(t.io);
    store_close(&t.store);
    s3_cfg_free(&t.s3);
    conf_free(&t.conf);
    return 0;
}
