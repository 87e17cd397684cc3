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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "s3list.h"
#include "hcli.h"
#include "util.h"


#define LIST_MAX 10000

static void http_date(uint64_t ns, char *out, size_t n)
{
    time_t t = (time_t)(ns / 1000000000u);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static int errno_status(int rc)
{
    switch (rc) {
    case -ENOENT: return 404;
    case -ENOSPC: return 507;
    case -EDQUOT: return 507;
    default: return 500;
    }
}

static void meta_headers(struct http_req *r, const struct ometa *m)
{
    char date[64];
    http_date(m->mtime_ns, date, sizeof(date));
    if (m->backend_etag[0])
        http_resp_header(r, "ETag", "%s", m->backend_etag);
    else
        http_resp_header(r, "ETag", "\"%016llx\"", (unsigned long long)m->cksum);
    http_resp_header(r, "X-Shoal-Checksum", "xxh3-64:%016llx", (unsigned long long)m->cksum);
    http_resp_header(r, "X-Shoal-Version", "%llu", (unsigned long long)m->version);
    http_resp_header(r, "Last-Modified", "%s", date);
    http_resp_header(r, "Accept-Ranges", "bytes");
}

/* ---- GET / HEAD ---------------------------------------------------------- */

/*
 * Range: one "bytes=a-b", "bytes=a-" or "bytes=-n". Returns 1 with
 * [*off, *off+*len) for a satisfiable range, 0 to serve the whole object
 * (no header, several ranges, or syntax we ignore as RFC 9110 allows), -1
 * for an unsatisfiable one (416).
 */
int target_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (!h || strncmp(h, "bytes=", 6) || strchr(h, ','))
        return 0;
    const char *s = h + 6, *dash = strchr(s, '-');
    if (!dash)
        return 0;
    uint64_t a, b;
    size_t al = (size_t)(dash - s), bl = strlen(dash + 1);
    if (al == 0) {
        if (parse_u64(dash + 1, bl, &b) || b == 0)
            return bl ? (b == 0 ? -1 : 0) : 0;
        if (size == 0)
            return -1;
        *len = b > size ? size : b;
        *off = size - *len;
        return 1;
    }
    if (parse_u64(s, al, &a))
        return 0;
    if (bl == 0) {
        b = size ? size - 1 : 0;
    } else {
        if (parse_u64(dash + 1, bl, &b) || b < a)
            return 0;
        if (b >= size)
            b = size ? size - 1 : 0;
    }
    if (a >= size)
        return -1;
    *off = a;
    *len = b - a + 1;
    return 1;
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
        node_count(&t->node, r->method == HTTP_M_HEAD ? ST_HEAD : ST_GET, errno_status(rc));
        if (rc == -ENOENT)
            http_reply_error(r, 404, "object not found");
        else
            http_reply_error(r, 500, "cannot read object: %s", strerror(-rc));
        return;
    }
    uint64_t off = 0, len = m.size;
    if (cache)
        http_resp_header(r, "X-Shoal-Cache", "%s", cache);
    int rg = target_parse_range(http_req_header(r, "Range"), m.size, &off, &len);
    meta_headers(r, &m);
    if (rg < 0) {
        close(fd);
        http_resp_header(r, "Content-Range", "bytes */%llu", (unsigned long long)m.size);
        node_count(&t->node, ST_GET, 416);
        http_reply_error(r, 416, "range not satisfiable for %llu bytes",
                         (unsigned long long)m.size);
        return;
    }
    http_resp_header(r, "Content-Type", "application/octet-stream");
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

/* ---- PUT ----------------------------------------------------------------- */

struct put {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    char *name;
    struct store_mp *mp;
    int fd;                      /* -1 once closed or handed to the commit */
    char work[PATH_MAX];
    XXH3_state_t *xs;
    uint64_t size;
    struct ometa m;
    int rc;
    struct backend b;            /* write-through target, kind BK_NONE if none */
};

static void put_free(struct put *p)
{
    backend_free(&p->b);
    if (p->fd >= 0) {
        close(p->fd);
        unlink(p->work);
    }
    XXH3_freeState(p->xs);
    free(p->mkey);
    free(p->name);
    free(p);
}

/* A write failed: answer now (the connection closes after the answer) and
 * drop the work file; the request's body hooks are detached. */
static void put_fail(struct put *p, int rc)
{
    struct http_req *r = p->r;
    struct store_mp *mp = p->mp;
    r->data = NULL;
    r->on_body = NULL;
    r->on_end = NULL;
    r->on_abort = NULL;
    put_free(p);
    int st = errno_status(rc);
    node_count(&((struct target *)r->w->ctx)->node, ST_PUT, st);
    http_resp_close(r);
    if (st == 507)
        http_reply_error(r, 507, "out of space on mountpath %s", mp->dir);
    else
        http_reply_error(r, 500, "cannot write object: %s", strerror(-rc));
}

static int put_body(struct http_req *r, const char *d, size_t n)
{
    struct put *p = r->data;
    XXH3_64bits_update(p->xs, d, n);
    p->size += n;
    while (n > 0) {
        ssize_t w = write(p->fd, d, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            put_fail(p, -errno);
            return 0;
        }
        d += w;
        n -= (size_t)w;
    }
    return 0;
}

static void put_commit_work(void *arg)
{
    struct put *p = arg;
    int fd = p->fd;
    p->fd = -1; /* store_commit closes it */
    p->rc = store_commit(&p->t->store, p->mp, p->mkey, p->klen, p->work, fd, &p->m);
}

static void put_commit_done(void *arg)
{
    struct put *p = arg;
    struct http_req *r = p->r;
    if (p->rc) {
        int st = errno_status(p->rc);
        node_count(&p->t->node, ST_PUT, st);
        http_reply_error(r, st, "cannot commit object: %s", strerror(-p->rc));
    } else {
        char ck[17];
        snprintf(ck, sizeof(ck), "%016llx", (unsigned long long)p->m.cksum);
        meta_headers(r, &p->m);
        node_count(&p->t->node, ST_PUT, 201);
        node_count_bytes(&p->t->node, p->size, 0);
        http_reply_json(r, 201,
                        json_pack("{s:s, s:s, s:I, s:s, s:I}", "bucket",
                                  strchr(p->mkey + 1, '\0') + 1, "name", p->name, "size",
                                  (json_int_t)p->m.size, "checksum", ck, "version",
                                  (json_int_t)p->m.version));
    }
    r->data = NULL;
    put_free(p);
    http_req_unref(r);
}

/* Write-through: the backend has the object (or refused it). */
static void put_backend_done(void *arg, const struct backend_obj *o)
{
    struct put *p = arg;
    struct http_req *r = p->r;
    if (o->status < 200 || o->status > 299) {
        char msg[300];
        int st = backend_status(&p->b, o, msg, sizeof(msg));
        node_count(&p->t->node, ST_PUT, st);
        http_reply_error(r, st, "write-through failed: %s", msg);
        r->data = NULL;
        put_free(p);
        http_req_unref(r);
        return;
    }
    snprintf(p->m.backend_etag, sizeof(p->m.backend_etag), "%s", o->etag);
    iopool_submit(p->t->io, r->w->q, put_commit_work, put_commit_done, p);
}

static void put_end(struct http_req *r)
{
    struct put *p = r->data;
    p->m.size = p->size;
    p->m.cksum = XXH3_64bits_digest(p->xs);
    /* From here the commit owns p; a dying connection must not free it. */
    r->on_abort = NULL;
    http_req_ref(r);
    if (p->b.kind == BK_S3)
        backend_put(target_cli(r), &p->b, p->name, p->fd, (int64_t)p->size, put_backend_done,
                    p);
    else
        iopool_submit(p->t->io, r->w->q, put_commit_work, put_commit_done, p);
}

static void put_abort(struct http_req *r)
{
    struct put *p = r->data;
    r->data = NULL;
    put_free(p); /* the work file goes: nothing was committed */
}

static void obj_put(struct target *t, struct http_req *r, const struct objname *on,
                    const struct bmd_bucket *bk, char *mkey, size_t klen)
{
    struct put *p = xcalloc(1, sizeof(*p));
    backend_resolve(t, bk, &p->b);
    p->t = t;
    p->r = r;
    p->mkey = mkey;
    p->klen = klen;
    p->name = xstrndup(on->name, on->name_len);
    p->mp = store_pick(&t->store, mkey, klen);
    p->fd = store_work_open(p->mp, &p->m.uid, p->work, sizeof(p->work));
    if (p->fd < 0) {
        int rc = p->fd;
        p->fd = -1;
        put_free(p);
        node_count(&t->node, ST_PUT, errno_status(rc));
        http_reply_error(r, errno_status(rc), "cannot create work file: %s", strerror(-rc));
        return;
    }
    p->xs = XXH3_createState();
    XXH3_64bits_reset(p->xs);
    r->data = p;
    r->on_body = put_body;
    r->on_end = put_end;
    r->on_abort = put_abort;
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
    int st = d->rc ? errno_status(d->rc) : 204;
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
        http_reply_error(r, 404, "bucket '%s' not found", on.bucket);
        return;
    }
    int sig = node_check_sig(&t->node, r);
    if (sig < 0) {
        bmd_unref(b);
        node_count(&t->node, ST_OTHER, 403);
        http_reply_error(r, 403, "bad or expired redirect signature");
        return;
    }
    char *name = xstrndup(on.name, on.name_len);
    if (sig == 0) {
        /* Not routed by a proxy: serve only what this target owns. */
        size_t kl;
        char *key = node_obj_key(provider, on.bucket, name, &kl);
        struct cmap *m = cmap_current();
        const struct cmap_node *owner = m ? cmap_owner(m, key, kl) : NULL;
        free(key);
        if (owner && strcmp(owner->id, t->node.id)) {
            http_resp_header(r, "Location", "%s%s", owner->url, r->target);
            __atomic_add_fetch(&t->node.st.redirects, 1, __ATOMIC_RELAXED);
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
        struct objname on = {.name = name, .name_len = strlen(name)};
        obj_put(t, r, &on, bk, mkey, klen); /* takes mkey */
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
            json_array_append_new(arr, json_pack("{s:s, s:I, s:s}", "name", sl.objs[i].key,
                                                 "size", (json_int_t)sl.objs[i].size, "etag",
                                                 sl.objs[i].etag ? sl.objs[i].etag : ""));
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
    if (http_path_is(r, "/v1/internal/list") && r->method == HTTP_M_GET) {
        list_handle(t, r);
        return;
    }
    if (http_path_is(r, "/v1/internal/list-remote") && r->method == HTTP_M_GET) {
        rlist_handle(t, r);
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
