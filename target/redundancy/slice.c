/*
 * slice: erasure-coded slices between targets (see slice.h).
 */
#include "slice.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bmd.h"
#include "ecode.h"
#include "nodeclient.h"
#include "http.h"
#include "inbody.h"
#include "iopool.h"
#include "log.h"
#include "node.h"
#include "objname.h"
#include "objmeta.h"
#include "pump.h"
#include "space.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"
#include "xxh.h"

#define SLICE_TIMEOUT_MS (6L * 3600 * 1000)
#define SLICE_IDLE_S 30

char *slice_key(const char *mkey, size_t klen, int idx, size_t *sklen)
{
    char *k = xmalloc(klen + 3);
    memcpy(k, mkey, klen);
    k[0] = 's';
    k[klen] = '\0';
    k[klen + 1] = (char)(idx + 1);
    k[klen + 2] = '\0';
    *sklen = klen + 2;
    return k;
}

char *slice_obj_key(const char *skey, size_t sklen, size_t *klen, int *idx)
{
    if (sklen < 4 || skey[0] != 's' || skey[sklen - 2] != '\0' || !skey[sklen - 1] ||
        (uint8_t)skey[sklen - 1] > SLICE_MAX)
        return NULL;
    *idx = (uint8_t)skey[sklen - 1] - 1;
    *klen = sklen - 2;
    char *k = xmalloc(*klen + 1);
    memcpy(k, skey, *klen);
    k[0] = 'o';
    k[*klen] = '\0';
    return k;
}

/* The URL of the slice route at base for mkey, with query after provider. */
static char *slice_url(struct target *t, const char *method, const char *base, const char *mkey,
                       size_t klen, const char *query)
{
    const char *prov, *bucket, *name;
    size_t nl;
    xfer_key_parts(mkey, klen, &prov, &bucket, &name, &nl);
    char *en = http_pct_encode(name, nl, 1);
    char *url = node_signed_urlf(&t->node, method, base,
                                 "/v1/internal/slice/%s/%s?provider=%s&%s", bucket, en, prov,
                                 query);
    free(en);
    return url;
}

/* Does mp hold slice skey as new as version, of the code (d, p), with its
 * data file whole? (An older one, or one of another code or with its file
 * gone, is replaced by a copy of that version.) */
static int slice_held(struct store *st, const char *skey, size_t sklen, uint64_t version,
                      int d, int p)
{
    struct store_mp *mp = store_pick(st, skey, sklen);
    struct objmeta m;
    if (store_get(st, mp, skey, sklen, &m) || m.version < version)
        return 0;
    if (m.version > version)
        return 1;
    int fd = store_data_open(mp, skey, sklen, &m);
    struct stat sb;
    int whole = fd >= 0 && !fstat(fd, &sb) && (uint64_t)sb.st_size == m.size;
    if (fd >= 0)
        close(fd);
    return whole && m.ec.d == d && m.ec.p == p;
}

/* ---- sending ---------------------------------------------------------------------------- */

struct send {
    struct target *t;
    struct nodeclient *hc;
    char *url, *mkey;            /* the receiver's; the object's */
    size_t klen;
    struct objmeta rec;          /* the slice's */
    int fd;
    uint64_t off, len;
    char meta[OBJMETA_MAX];
    size_t meta_len, meta_sent;
    struct event_base *base;
    struct pump *pump;
    struct nodeclient_xfer *hx;
    slice_done_fn done;
    void *arg;
};

static ssize_t send_read(void *arg, char *buf, size_t n)
{
    struct send *s = arg;
    if (s->meta_sent < s->meta_len) {
        size_t k = s->meta_len - s->meta_sent < n ? s->meta_len - s->meta_sent : n;
        memcpy(buf, s->meta + s->meta_sent, k);
        s->meta_sent += k;
        return (ssize_t)k;
    }
    return s->len ? NODECLIENT_READ_SOCKET : 0;
}

static void send_pumped(void *arg, const char *err, enum pump_side side)
{
    struct send *s = arg;
    (void)side;
    pump_free(s->pump);
    s->pump = NULL;
    if (err)
        log_warn("sending a slice: %s", err);
    nodeclient_upload_moved(s->hx, err == NULL);
}

static void send_socket(void *arg, struct nodeclient_xfer *hx, int fd)
{
    struct send *s = arg;
    s->pump = pump_start_file(s->base, s->fd, s->off, fd, s->len, SLICE_IDLE_S, send_pumped, s);
    if (!s->pump)
        nodeclient_upload_moved(hx, 0);
}

static void send_end(struct send *s, int rc)
{
    s->done(s->arg, rc);
    free(s->url);
    free(s->mkey);
    free(s);
}

static void held_done(void *arg, int held)
{
    struct send *s = arg;
    if (!held)
        log_warn("a slice was not taken (the upload broke, and it is not there)");
    send_end(s, held ? 0 : -EIO);
}

static void send_done(void *arg, struct nodeclient_xfer *hx, int status, const char *err)
{
    struct send *s = arg;
    (void)hx;
    pump_free(s->pump);
    s->pump = NULL;
    close(s->fd);
    if (!status) {               /* the receiver may have answered early and closed */
        struct xfer_loop lp = {s->base, NULL, s->hc};
        slice_ask_held(s->t, &lp, s->url, s->mkey, s->klen, s->rec.ec.idx, s->rec.version,
                       s->rec.ec.d, s->rec.ec.p, held_done, s);
        return;
    }
    if (status != 200 && status != 201)
        log_warn("a slice was not taken: answered %d", status);
    (void)err;
    send_end(s, status == 200 || status == 201 ? 0 : status == 507 ? -ENOSPC : -EIO);
}

static int send_file(void *arg, int *fd, uint64_t *off)
{
    struct send *s = arg;
    *fd = s->fd;
    *off = s->off;
    return 0;
}

static const struct nodeclient_ops send_ops = {
    .on_read = send_read,
    .on_done = send_done,
    .on_socket = send_socket,
    .on_file = send_file,
};

void slice_send(struct target *t, const struct xfer_loop *lp, const char *url, const char *mkey,
                size_t klen, const struct objmeta *rec, int fd, uint64_t off, slice_done_fn done,
                void *arg)
{
    struct send *s = xcalloc(1, sizeof(*s));
    s->t = t;
    s->hc = lp->hc;
    s->fd = fd;
    s->off = off;
    s->len = rec->size;
    s->meta_len = objmeta_encode_meta(rec, s->meta);
    s->base = lp->base;
    s->done = done;
    s->arg = arg;
    s->url = xstrdup(url);
    s->mkey = xfer_key_dup(mkey, klen);
    s->klen = klen;
    s->rec = *rec;
    char q[128];
    snprintf(q, sizeof(q), "idx=%d&meta=%zu&version=%llu&d=%d&p=%d", rec->ec.idx, s->meta_len,
             (unsigned long long)rec->version, rec->ec.d, rec->ec.p);
    char *u = slice_url(t, "PUT", url, mkey, klen, q);
    s->hx = nodeclient_start(lp->hc, "PUT", u, NULL, 0, (int64_t)(s->meta_len + s->len),
                             SLICE_TIMEOUT_MS, &send_ops, s);
    free(u);
}

struct ask {
    void (*done)(void *arg, int held);
    void *arg;
};

static void asked_held(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct ask *a = arg;
    (void)err;
    json_t *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    a->done(a->arg, json_is_true(json_object_get(j, "held")));
    json_decref(j);
    free(a);
}

void slice_ask_held(struct target *t, const struct xfer_loop *lp, const char *url,
                    const char *mkey, size_t klen, int idx, uint64_t version, int d, int p,
                    void (*done)(void *arg, int held), void *arg)
{
    struct ask *a = xcalloc(1, sizeof(*a));
    a->done = done;
    a->arg = arg;
    char q[128];
    snprintf(q, sizeof(q), "idx=%d&held=%llu&d=%d&p=%d", idx, (unsigned long long)version, d,
             p);
    char *u = slice_url(t, "GET", url, mkey, klen, q);
    nodeclient_request(lp->hc, "GET", u, NULL, 0, NULL, 30000, asked_held, a);
    free(u);
}

struct ensure_ask {
    void (*done)(void *arg, int rc);
    void *arg;
};

static void ensure_answered(void *arg, int status, const char *body, size_t len,
                            const char *err)
{
    struct ensure_ask *a = arg;
    (void)body;
    (void)len;
    (void)err;
    a->done(a->arg, status == 200 ? 0 : -EIO);
    free(a);
}

void slice_ask_ensure(struct target *t, const struct xfer_loop *lp, const char *url,
                      const char *mkey, size_t klen, void (*done)(void *arg, int rc),
                      void *arg)
{
    struct ensure_ask *a = xcalloc(1, sizeof(*a));
    a->done = done;
    a->arg = arg;
    char *u = slice_url(t, "POST", url, mkey, klen, "ensure=1");
    nodeclient_request(lp->hc, "POST", u, NULL, 0, NULL, 10L * 60 * 1000, ensure_answered, a);
    free(u);
}

/* ---- fetching --------------------------------------------------------------------------- */

struct fetch {
    struct target *t;
    struct store_mp *mp;         /* where a work file goes */
    int fd;                      /* the work file, once the slice is known large; else -1 */
    char *mem;                   /* a small slice's bytes */
    char path[4096];
    char *meta;
    size_t meta_len, meta_got;
    struct objmeta m;
    XXH3_state_t *xs;
    uint64_t got;
    int idx, bad;
    slice_got_fn done;
    void *arg;
};

static int fetch_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct fetch *f = arg;
    size_t n = xfer_record_len(x, status);
    if (!n)
        return 0;                /* none there (404), or a failure: on_done */
    f->meta_len = n;
    f->meta = xmalloc(n);
    return 0;
}

static int fetch_data(void *arg, struct nodeclient_xfer *x, const char *d, size_t n)
{
    struct fetch *f = arg;
    (void)x;
    if (!f->meta)
        return 0;
    if (f->meta_got < f->meta_len) {
        if (!xfer_meta_take(f->meta, f->meta_len, &f->meta_got, &d, &n))
            return 0;
        if (objmeta_decode(f->meta, f->meta_len, &f->m) || !f->m.ec.d ||
            (f->idx >= 0 && f->m.ec.idx != f->idx)) {
            f->bad = 1;
            return -1;
        }
        if (f->m.size <= SLICE_MEM_MAX) {
            f->mem = xmalloc(f->m.size ? f->m.size : 1);
        } else {
            uint64_t uid;
            f->fd = store_work_open(f->mp, &uid, f->path, sizeof(f->path));
            if (f->fd < 0)
                return -1;
        }
    }
    if (f->got + n > f->m.size) {
        f->bad = 1;
        return -1;
    }
    XXH3_64bits_update(f->xs, d, n);
    if (f->mem) {
        memcpy(f->mem + f->got, d, n);
        f->got += n;
        return 0;
    }
    f->got += n;
    while (n > 0) {              /* a work file, as an upload's body is written */
        ssize_t w = write(f->fd, d, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        d += w;
        n -= (size_t)w;
    }
    return 0;
}

static void fetch_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct fetch *f = arg;
    (void)x;
    (void)err;
    int rc = status == 404 || status == 204 ? -ENOENT : status != 200 ? -EIO : 0;
    if (!rc && (f->bad || f->meta_got < f->meta_len || !f->meta || f->got != f->m.size ||
                XXH3_64bits_digest(f->xs) != f->m.cksum))
        rc = -EBADMSG;           /* damaged on the way, or there */
    if (!rc && f->mem) {
        f->done(f->arg, 0, -1, NULL, f->mem, &f->m);
    } else if (!rc) {
        f->done(f->arg, 0, f->fd, f->path, NULL, &f->m);
    } else {
        if (f->fd >= 0) {
            close(f->fd);
            unlink(f->path);
        }
        free(f->mem);
        f->done(f->arg, rc, -1, NULL, NULL, NULL);
    }
    XXH3_freeState(f->xs);
    free(f->meta);
    free(f);
}

static const struct nodeclient_ops fetch_ops = {
    .on_headers = fetch_headers,
    .on_data = fetch_data,
    .on_done = fetch_done,
};

void slice_fetch(struct target *t, const struct xfer_loop *lp, const char *url, const char *mkey,
                 size_t klen, int idx, slice_got_fn done, void *arg)
{
    struct fetch *f = xcalloc(1, sizeof(*f));
    f->t = t;
    f->idx = idx;
    f->done = done;
    f->arg = arg;
    f->mp = store_place(&t->store, mkey, klen);
    f->fd = -1;
    f->xs = XXH3_createState();
    XXH3_64bits_reset(f->xs);
    char q[32];
    snprintf(q, sizeof(q), idx >= 0 ? "idx=%d" : "any=1", idx);
    char *u = slice_url(t, "GET", url, mkey, klen, q);
    nodeclient_start(lp->hc, "GET", u, NULL, 0, -1, SLICE_TIMEOUT_MS, &fetch_ops, f);
    free(u);
}

/* ---- receiving ------------------------------------------------------------------------ */

struct recv {
    struct target *t;
    struct http_req *r;
    char *mkey;                  /* the object's */
    size_t klen;
    char *skey;
    size_t sklen;
    int idx;
    struct inbody b;             /* the slice's record and bytes */
    uint64_t version;            /* a delete's */
    struct objmeta m;
    int rc;
};

static void recv_free(struct recv *v)
{
    inbody_free(&v->b);
    free(v->mkey);
    free(v->skey);
    free(v);
}

static void recv_fail(struct recv *v, int status, const char *msg)
{
    struct http_req *r = v->r;
    recv_free(v);
    inbody_refuse(r, status, msg);
}

static int recv_body(struct http_req *r, const char *d, size_t n)
{
    struct recv *v = r->data;
    int e = inbody_take(&v->b, d, n);
    if (e)
        recv_fail(v, e == ENOSPC ? 507 : 500, "cannot write the slice");
    return 0;
}

static void recv_commit_work(void *arg)
{
    struct recv *v = arg;
    struct store_x x = {.keep_version = v->m.version};
    int fd = v->b.fd;
    v->b.fd = -1;
    struct store *st = &v->t->store;
    uint64_t tomb = 0;           /* a slice of a version deleted here is dead */
    if (store_tomb_get(st, store_pick(st, v->mkey, v->klen), v->mkey, v->klen, &tomb) == 0 &&
        tomb >= v->m.version) {
        close(fd);
        unlink(v->b.work);
        v->rc = -EALREADY;
        return;
    }
    struct store_mp *at = store_pick(st, v->skey, v->sklen);
    struct objmeta old;          /* the same version of another code, or with its file gone */
    if (store_get(st, at, v->skey, v->sklen, &old) == 0 && old.version == v->m.version &&
        !slice_held(st, v->skey, v->sklen, old.version, v->m.ec.d, v->m.ec.p))
        store_delete_if(st, at, v->skey, v->sklen, old.uid);
    v->rc = store_commit_x(st, v->b.mp, v->skey, v->sklen, v->b.work, fd, &v->m, &x);
}

static void recv_done(void *arg)
{
    struct recv *v = arg;
    struct http_req *r = v->r;
    if (v->rc == -EALREADY)
        http_reply_json(r, 200, json_pack("{s:s}", "kept", "newer"));
    else if (v->rc)
        http_reply_error(r, err_status(v->rc), "cannot keep the slice: %s", strerror(-v->rc));
    else
        http_reply(r, 201, NULL, NULL, 0);
    r->data = NULL;
    recv_free(v);
    http_req_unref(r);
}

static void recv_end(struct http_req *r)
{
    struct recv *v = r->data;
    if (inbody_check(&v->b, &v->m) || !v->m.ec.d || v->m.ec.idx != v->idx) {
        recv_fail(v, 400, "the slice arrived damaged: its bytes do not match its record");
        return;
    }
    r->on_abort = NULL;          /* the commit owns v now */
    http_req_ref(r);
    iopool_submit(v->t->io, r->w->q, recv_commit_work, recv_done, v);
}

static void recv_abort(struct http_req *r)
{
    struct recv *v = r->data;
    r->data = NULL;
    recv_free(v);
}

static void recv_slice(struct recv *v, struct http_req *r)
{
    char num[24], dn[8], pn[8];
    uint64_t ver = 0;            /* what is here as new or newer: the bytes need not come */
    int n = http_query_get(r, "version", num, sizeof(num));
    struct store *st = &v->t->store;
    int d = http_query_get(r, "d", dn, sizeof(dn)) > 0 ? atoi(dn) : 0;
    int p = http_query_get(r, "p", pn, sizeof(pn)) > 0 ? atoi(pn) : 0;
    if (n > 0 && !parse_u64(num, (size_t)n, &ver) &&
        slice_held(st, v->skey, v->sklen, ver, d, p)) {
        recv_free(v);
        http_resp_close(r);
        http_reply_json(r, 200, json_pack("{s:s}", "kept", "newer"));
        return;
    }
    if (inbody_open(&v->b, v->t, r, store_place(st, v->skey, v->sklen))) {
        recv_free(v);
        return;
    }
    r->data = v;
    r->on_body = recv_body;
    r->on_end = recv_end;
    r->on_abort = recv_abort;
}

/* GET: the slice's record and bytes, unless the name was deleted since;
 * without an index, the first slice of the name held here. */
static void serve_slice(struct recv *v, struct http_req *r, int any)
{
    struct store *st = &v->t->store;
    char num[24], dn[8], pn[8];
    uint64_t want = 0;
    int n = http_query_get(r, "held", num, sizeof(num));
    if (n > 0 && !parse_u64(num, (size_t)n, &want)) {   /* ?held=V&d=D&p=P */
        int d = http_query_get(r, "d", dn, sizeof(dn)) > 0 ? atoi(dn) : 0;
        int p = http_query_get(r, "p", pn, sizeof(pn)) > 0 ? atoi(pn) : 0;
        http_reply_json(r, 200, json_pack("{s:b}", "held",
                                          slice_held(st, v->skey, v->sklen, want, d, p)));
        recv_free(v);
        return;
    }
    uint64_t newest = 0;         /* any: the newest slice of the name held here */
    int pick = -1;
    for (int i = 0; any && i < SLICE_MAX; i++) {
        size_t sl;
        char *sk = slice_key(v->mkey, v->klen, i, &sl);
        if (store_get(st, store_pick(st, sk, sl), sk, sl, &v->m) == 0 && v->m.version > newest)
            newest = v->m.version, pick = i;
        free(sk);
    }
    if (pick >= 0) {
        free(v->skey);
        v->skey = slice_key(v->mkey, v->klen, pick, &v->sklen);
    }
    struct store_mp *mp = store_pick(st, v->skey, v->sklen);
    uint64_t tomb = 0;
    int fd = -1;
    struct stat sb;
    if (store_get(st, mp, v->skey, v->sklen, &v->m) ||
        (store_tomb_get(st, store_pick(st, v->mkey, v->klen), v->mkey, v->klen, &tomb) == 0 &&
         tomb >= v->m.version) ||
        (fd = store_data_open(mp, v->skey, v->sklen, &v->m)) < 0 || fstat(fd, &sb) ||
        (uint64_t)sb.st_size != v->m.size) {
        if (fd >= 0)
            close(fd);
        http_reply_error(r, 404, "no such slice here");
    } else {
        xfer_reply_record(r, &v->m, fd);
    }
    recv_free(v);
}

void slice_drop_older(struct store *st, const char *mkey, size_t klen, uint64_t version)
{
    for (int i = 0; i < SLICE_MAX; i++) {
        size_t sl;
        char *sk = slice_key(mkey, klen, i, &sl);
        struct store_mp *mp = store_pick(st, sk, sl);
        struct objmeta m;
        if (store_get(st, mp, sk, sl, &m) == 0 && m.version < version)
            store_delete_if(st, mp, sk, sl, m.uid);
        free(sk);
    }
}

static void drop_work(void *arg)
{
    struct recv *v = arg;
    slice_drop_older(&v->t->store, v->mkey, v->klen, v->version);
}

static void drop_done(void *arg)
{
    struct recv *v = arg;
    http_reply(v->r, 204, NULL, NULL, 0);
    http_req_unref(v->r);
    recv_free(v);
}

static void ensured(void *arg, int failed)
{
    struct http_req *r = arg;
    if (failed)
        http_reply_error(r, 503, "%d slices were not taken", failed);
    else
        http_reply_json(r, 200, json_pack("{s:b}", "ensured", 1));
    http_req_unref(r);
}

void slice_handle(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    struct objname on;
    char err[256], provider[16], num[24];
    if (objname_parse_internal(rest, rlen, &on, err, sizeof(err)) ||
        objname_provider(r, provider, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return;
    }
    struct recv *v = xcalloc(1, sizeof(*v));
    v->t = t;
    v->r = r;
    v->b.fd = -1;
    v->mkey = store_mkey(provider, on.bucket, on.name, on.name_len, &v->klen);
    uint64_t idx = 0;
    int n = http_query_get(r, "idx", num, sizeof(num));
    int has_idx = n > 0 && !parse_u64(num, (size_t)n, &idx) && idx < SLICE_MAX;
    v->idx = (int)idx;
    v->skey = slice_key(v->mkey, v->klen, v->idx, &v->sklen);
    if (r->method == HTTP_M_DELETE) {
        n = http_query_get(r, "version", num, sizeof(num));
        if (n <= 0 || parse_u64(num, (size_t)n, &v->version) || !v->version) {
            http_reply_error(r, 400, "version=V (> 0) is needed");
            recv_free(v);
            return;
        }
        http_req_ref(r);
        iopool_submit(t->io, r->w->q, drop_work, drop_done, v);
        return;
    }
    if (r->method == HTTP_M_POST) {   /* the owner: make sure every slice is there */
        struct xfer_loop lp = {r->w->base, r->w->q, target_hc(r)};
        http_req_ref(r);
        ecode_ensure(t, &lp, v->mkey, v->klen, ensured, r);
        recv_free(v);
        return;
    }
    int any = r->method == HTTP_M_GET && http_query_get(r, "any", num, sizeof(num)) >= 0;
    if (!has_idx && !any) {
        http_reply_error(r, 400, "idx=0..%d is needed", SLICE_MAX - 1);
        recv_free(v);
    } else if (r->method == HTTP_M_GET) {
        serve_slice(v, r, any);
    } else if (r->method == HTTP_M_PUT) {
        recv_slice(v, r);
    } else {
        http_reply_error(r, 405, "GET, PUT, POST or DELETE");
        recv_free(v);
    }
}
