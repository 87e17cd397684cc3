/*
 * xfer: objects and tombstones between targets (see xfer.h).
 *
 * The sender reads the name's metadata record and opens its data file on
 * the I/O pool (one version: the file is named by its uid), then PUTs
 * record and bytes, the bytes spliced from the file into the socket
 * (common/pump.h). The receiver streams the bytes into a work file,
 * checking them against the record, and commits them with the record's
 * version, or not at all when it holds a newer one.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "bmd.h"
#include "cmap.h"
#include "err.h"
#include "nodeclient.h"
#include "inbody.h"
#include "http.h"
#include "iopool.h"
#include "log.h"
#include "place.h"
#include "node.h"
#include "objname.h"
#include "objmeta.h"
#include "pump.h"
#include "reb.h"
#include "space.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "writeback.h"
#include "xfer.h"
#include "xxh.h"

#define XFER_IDLE_S 30           /* a receiver that takes nothing for this long fails */
#define XFER_TIMEOUT_MS (6L * 3600 * 1000)
#define XFER_BEHIND_TRIES 8      /* a receiver behind on buckets: asked again over ~7 s */

int xfer_key_parts(const char *mkey, size_t klen, const char **provider, const char **bucket,
                   const char **name, size_t *nlen)
{
    const char *end = mkey + klen;
    const char *p = mkey + 1;
    const char *z1 = memchr(p, '\0', (size_t)(end - p));
    const char *z2 = z1 ? memchr(z1 + 1, '\0', (size_t)(end - z1 - 1)) : NULL;
    if (klen < 1 || !z2)
        return -1;
    *provider = p;
    *bucket = z1 + 1;
    *name = z2 + 1;
    *nlen = (size_t)(end - z2 - 1);
    return 0;
}

const struct bmd_bucket *xfer_key_bucket(const char *mkey, size_t klen, struct bmd **hold)
{
    const char *prov, *bucket, *name;
    size_t nl;
    *hold = bmd_current();
    if (!*hold || xfer_key_parts(mkey, klen, &prov, &bucket, &name, &nl))
        return NULL;
    return bmd_find(*hold, prov, bucket);
}

void xfer_reply_record(struct http_req *r, const struct objmeta *m, int fd)
{
    char *meta = xmalloc(OBJMETA_MAX);
    size_t ml = objmeta_encode_meta(m, meta);   /* the bytes follow it */
    http_resp_header(r, "X-Shoal-Meta-Len", "%zu", ml);
    http_resp_begin(r, 200, (int64_t)(ml + m->size));
    http_resp_write(r, meta, ml);
    http_resp_file(r, fd, 0, (int64_t)m->size);   /* takes fd */
    http_resp_end(r);
    free(meta);
}

size_t xfer_record_len(struct nodeclient_xfer *x, int status)
{
    const char *ml = status == 200 ? nodeclient_header(x, "X-Shoal-Meta-Len") : NULL;
    uint64_t n = 0;
    if (!ml || parse_u64(ml, strlen(ml), &n) || !n || n > OBJMETA_MAX)
        return 0;
    return (size_t)n;
}

int xfer_bmd_behind(struct http_req *r, const char *param, long long mine, uint64_t *theirs)
{
    char num[24];
    int n = http_query_get(r, param, num, sizeof(num));
    *theirs = 0;
    return n > 0 && !parse_u64(num, (size_t)n, theirs) && (long long)*theirs > mine;
}

char *xfer_key_dup(const char *mkey, size_t klen)
{
    char *k = xmalloc(klen + 1);
    memcpy(k, mkey, klen);
    k[klen] = '\0';
    return k;
}

char *xfer_key_show(const char *mkey, size_t klen)
{
    char *shown = xmalloc(klen + 1);
    memcpy(shown, mkey + 1, klen - 1);
    shown[klen - 1] = '\0';
    for (size_t i = 0; i + 1 < klen; i++)
        if (!shown[i])
            shown[i] = '/';
    return shown;
}

char *xfer_place_key(const char *mkey, size_t klen, size_t *len)
{
    const char *prov, *bucket, *name;
    size_t nl;
    if (xfer_key_parts(mkey, klen, &prov, &bucket, &name, &nl))
        return NULL;
    klen = objname_base_len(mkey, klen);   /* a version is placed with its name */
    char *k = xmalloc(klen);
    memcpy(k, mkey + 1, klen - 1);   /* "provider\0bucket\0name" */
    k[bucket - mkey - 2] = '/';
    k[name - mkey - 2] = '/';
    k[klen - 1] = '\0';
    *len = klen - 1;
    return k;
}

char *xfer_url(struct target *t, const char *method, const char *base, const char *mkey,
               size_t klen, const char *query)
{
    const char *prov, *bucket, *name;
    size_t nl;
    xfer_key_parts(mkey, klen, &prov, &bucket, &name, &nl);
    char *en = http_pct_encode(name, nl, 1);
    struct bmd *b = bmd_current();
    long long bv = b ? (long long)b->snap.version : 0;
    bmd_unref(b);
    char *url = node_signed_urlf(&t->node, method, base,
                                 "/v1/internal/xfer/%s/%s?provider=%s&bmd=%lld&%s", bucket, en,
                                 prov, bv, query);
    free(en);
    return url;
}

int xfer_meta_take(char *meta, size_t len, size_t *got, const char **d, size_t *n)
{
    size_t k = len - *got < *n ? len - *got : *n;
    memcpy(meta + *got, *d, k);
    *got += k;
    *d += k;
    *n -= k;
    return *got == len;
}

/* Is fd's file of size bytes? */
static int file_has_size(int fd, uint64_t size)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (uint64_t)st.st_size == size;
}

/* ---- sending ----------------------------------------------------------------------------- */

struct xfer {
    struct target *t;
    struct xfer_loop lp;
    char *url;                   /* the receiver's */
    char *mkey;
    size_t klen;
    uint64_t min_version;
    enum xfer_what what;
    struct objmeta m;            /* the object's, as opened */
    uint64_t tomb_version;
    int fd;
    int dirty;                   /* owed to its write-back backend */
    int urgent;                  /* a client waits: ahead of queued store work */
    int busy;                    /* the receiver said it serves clients */
    int had;                     /* the receiver had it already: nothing moved */
    int behind;                  /* times the receiver did not know the bucket yet */
    int rc;
    char *meta;                  /* the encoded record, sent first */
    size_t meta_len, meta_sent;
    struct pump *pump;
    struct nodeclient_xfer *hx;  /* the PUT, while it runs */
    xfer_done_fn done;
    void *arg;
};

static void xfer_free(struct xfer *x)
{
    pump_free(x->pump);
    if (x->fd >= 0)
        close(x->fd);
    free(x->meta);
    free(x->url);
    free(x->mkey);
    free(x);
}

static void xfer_finish(struct xfer *x, int rc)
{
    enum xfer_what what = x->had ? XFER_NONE : x->what;
    x->done(x->arg, rc, what, what == XFER_OBJECT ? x->m.size : 0, x->busy);
    xfer_free(x);
}

static void mark_work(void *arg);

/* On the I/O pool: one version of the name, object or tombstone; a copy
 * whose file is short is marked damaged instead (-EBADMSG). */
static void open_work(void *arg)
{
    struct xfer *x = arg;
    struct store *st = &x->t->store;
    struct store_mp *mp = store_pick(st, x->mkey, x->klen);
    x->rc = -ENOENT;
    for (int tries = 0; tries < 3; tries++) {   /* a new version may land in between */
        if (store_get(st, mp, x->mkey, x->klen, &x->m))
            break;
        if (x->m.version <= x->min_version || (x->m.flags & OBJMETA_F_DAMAGED))
            return;              /* a damaged copy is never handed on */
        x->fd = store_data_open(mp, x->mkey, x->klen, &x->m);
        if (x->fd >= 0 && !file_has_size(x->fd, x->m.size)) {   /* short: damaged */
            close(x->fd);
            x->fd = -1;
            x->what = XFER_NONE;
            mark_work(x);        /* x->rc: -EBADMSG */
            return;
        }
        if (x->fd >= 0) {
            x->what = XFER_OBJECT;
            x->dirty = writeback_owed(st, x->mkey, x->klen);
            x->meta = xmalloc(OBJMETA_MAX);
            x->meta_len = objmeta_encode_meta(&x->m, x->meta);
            x->rc = 0;
            return;
        }
    }
    if (store_tomb_get(st, mp, x->mkey, x->klen, &x->tomb_version) == 0 &&
        x->tomb_version > x->min_version) {
        x->what = XFER_TOMB;
        x->rc = 0;
    }
}

/* Who owns mkey under the current map: 1 this target, 0 the target at
 * url (when url is given), -1 another one. */
static int owner_of(struct target *t, const char *mkey, size_t klen, const char *url)
{
    size_t kl;
    struct cmap *m = cmap_current();
    char *key = xfer_place_key(mkey, klen, &kl);
    const struct cmap_node *owner = m && key ? cmap_owner(m, key, kl) : NULL;
    int who = !owner || !strcmp(owner->id, t->node.id) ? 1
              : url && !strcmp(owner->url, url)       ? 0
                                                       : -1;
    free(key);
    cmap_unref(m);
    return who;
}

/* Does this target hold a copy of mkey (size bytes) under the current map
 * (its owner, or a copy holder of a mirrored bucket)? */
static int holds(struct target *t, const char *mkey, size_t klen, uint64_t size)
{
    int copies = place_copies(mkey, klen, size);
    if (copies == 1)
        return owner_of(t, mkey, klen, NULL) == 1;
    struct cmap *m = cmap_current();
    int rank = m ? place_rank(m, mkey, klen, copies, t->node.id) : 0;
    cmap_unref(m);
    return rank >= 0;
}

/* On the I/O pool, once the receiver has it: our copy goes if the
 * receiver owns the name now (not if it changed meanwhile: -ESTALE). */
static void drop_work(void *arg)
{
    struct xfer *x = arg;
    /* only when it went to its owner: a target that asked for it with an
     * older map keeps a copy for now, and sends it on (reb_stray) */
    if (owner_of(x->t, x->mkey, x->klen, x->url) != 0 ||
        holds(x->t, x->mkey, x->klen, x->m.size))
        return;                  /* (a copy holder keeps its copy) */
    char *w = x->dirty ? store_side_key('w', x->mkey, x->klen) : NULL;
    struct store_x sx = {.drop = w, .drop_len = w ? x->klen : 0};
    struct store *st = &x->t->store;
    int rc = store_delete_x(st, store_pick(st, x->mkey, x->klen), x->mkey, x->klen, x->m.uid, &sx);
    if (rc && rc != -ESTALE && rc != -ENOENT)
        log_warn("cannot drop a copy sent away: %s", strerror(-rc));
    if (!rc)
        x->t->hooks->drop_local_copies(st, x->mkey, x->klen);   /* and its local copies */
    free(w);
}

static void dropped(void *arg)
{
    xfer_finish(arg, 0);
}

/* Are the bytes of x's copy here what its record says (size, checksum)? */
static int copy_good(struct xfer *x)
{
    struct store *st = &x->t->store;
    int fd = store_data_open(store_pick(st, x->mkey, x->klen), x->mkey, x->klen, &x->m);
    if (fd < 0)
        return 0;
    XXH3_state_t *xs = XXH3_createState();
    XXH3_64bits_reset(xs);
    char *buf = xmalloc(1 << 20);
    uint64_t got = 0;
    ssize_t n;
    while ((n = read(fd, buf, 1 << 20)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) {
            XXH3_64bits_update(xs, buf, (size_t)n);
            got += (uint64_t)n;
        }
    int good = n == 0 && got == x->m.size && XXH3_64bits_digest(xs) == x->m.cksum;
    XXH3_freeState(xs);
    free(buf);
    close(fd);
    return good;
}

/* The copy here is short, or the receiver found its bytes unlike their
 * record (422) and they are (read again: not a fault on the way): it is
 * damaged (-EBADMSG), kept and marked (repair.h) where nothing else has
 * its bytes, and never sent again. A copy read again whole and right was
 * not: -EIO, a failed send. */
static void mark_work(void *arg)
{
    struct xfer *x = arg;
    if (x->fd < 0 && x->what == XFER_OBJECT && copy_good(x)) {
        x->rc = -EIO;
        return;
    }
    x->rc = -EBADMSG;
    struct bmd *b;
    struct bmd_ec ec;
    const struct bmd_bucket *bk = xfer_key_bucket(x->mkey, x->klen, &b);
    int elsewhere = !bk || bmd_has_backend(bk) || bmd_ec(bk, &ec);
    bmd_unref(b);
    if (elsewhere)               /* its repair drops it: fetched again, or rebuilt */
        return;
    if (store_mark_damaged(&x->t->store, x->mkey, x->klen, x->m.uid) == 0) {
        char *shown = xfer_key_show(x->mkey, x->klen);
        log_warn("object %s: the copy here is damaged (sending it to %s): marked damaged",
                 shown, x->url);
        free(shown);
    }
}

static void marked(void *arg)
{
    struct xfer *x = arg;
    xfer_finish(x, x->rc);
}

static ssize_t send_read(void *arg, char *buf, size_t n)
{
    struct xfer *x = arg;
    if (x->meta_sent < x->meta_len) {
        size_t k = x->meta_len - x->meta_sent < n ? x->meta_len - x->meta_sent : n;
        memcpy(buf, x->meta + x->meta_sent, k);
        x->meta_sent += k;
        return (ssize_t)k;
    }
    return x->m.size ? NODECLIENT_READ_SOCKET : 0;
}

static void send_pumped(void *arg, const char *err, enum pump_side side)
{
    struct xfer *x = arg;
    (void)side;
    pump_free(x->pump);
    x->pump = NULL;
    if (err)
        log_warn("sending an object to %s: %s", x->url, err);
    nodeclient_upload_moved(x->hx, err == NULL);
}

static void send_socket(void *arg, struct nodeclient_xfer *hx, int fd)
{
    struct xfer *x = arg;
    x->pump = pump_start_file(x->lp.base, x->fd, 0, fd, x->m.size, XFER_IDLE_S, send_pumped, x);
    if (!x->pump)
        nodeclient_upload_moved(hx, 0);
}

/* A receiver that holds a version as new answers before the body and
 * closes; the upload may then fail before that answer is read. Whether
 * it holds it is asked again. */
static void held_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct xfer *x = arg;
    json_t *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    int held = json_is_true(json_object_get(j, "held"));
    json_decref(j);
    if (held) {
        close(x->fd);
        x->fd = -1;
        iopool_submit(x->t->io, x->lp.q, drop_work, dropped, x);
        return;
    }
    log_warn("sending to %s failed: %s", x->url, status ? "not taken" : (err ? err : "?"));
    xfer_finish(x, -EIO);
}

static void ask_held(struct xfer *x)
{
    char q[40];
    snprintf(q, sizeof(q), "held=%llu", (unsigned long long)x->m.version);
    char *url = xfer_url(x->t, "GET", x->url, x->mkey, x->klen, q);
    nodeclient_request(x->lp.hc, "GET", url, NULL, 0, NULL, 30000, held_done, x);
    free(url);
}

static void opened(void *arg);

static void send_again(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    opened(arg);
}

static void send_done(void *arg, struct nodeclient_xfer *hx, int status, const char *err)
{
    struct xfer *x = arg;
    const char *busy = status ? nodeclient_header(hx, "X-Shoal-Busy") : NULL;
    x->busy = busy && busy[0] == '1';
    x->hx = NULL;
    pump_free(x->pump);          /* an answer before the whole body: the receiver had it */
    x->pump = NULL;
    if (status == 200 || status == 201 || status == 204) {
        x->had = status == 200;  /* as new or newer there: counted as nothing sent */
        if (x->what == XFER_OBJECT) {
            close(x->fd);
            x->fd = -1;
            (x->urgent ? iopool_submit_first : iopool_submit)(x->t->io, x->lp.q, drop_work,
                                                              dropped, x);
            return;
        }
        xfer_finish(x, 0);
        return;
    }
    if (status == 503 && x->behind < XFER_BEHIND_TRIES) {
        /* it joined and its bucket metadata is on the way: again shortly */
        long ms = 250L << (x->behind > 2 ? 2 : x->behind);   /* 250, 500, then 1,000 */
        struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
        x->behind++;
        x->meta_sent = 0;
        event_base_once(x->lp.base, -1, EV_TIMEOUT, send_again, x, &tv);
        return;
    }
    if (x->what == XFER_OBJECT && status == 422) {
        close(x->fd);
        x->fd = -1;
        iopool_submit(x->t->io, x->lp.q, mark_work, marked, x);
        return;
    }
    if (x->what == XFER_OBJECT && status != 507) {
        /* the receiver may have answered early and closed, or refused a copy
         * it came to hold meanwhile (a read there brought it over) */
        if (status)
            log_warn("sending to %s: answered %d: does it hold the object?", x->url, status);
        ask_held(x);
        return;
    }
    log_warn("sending to %s: %s%d %s", x->url, status ? "answered " : "", status,
             status ? "" : (err ? err : "failed"));
    xfer_finish(x, status == 507 ? -ENOSPC : -EIO);
}

static int send_file(void *arg, int *fd, uint64_t *off)
{
    struct xfer *x = arg;
    *fd = x->fd;
    *off = 0;
    return 0;
}

static const struct nodeclient_ops send_ops = { /* the answer's body is not wanted */
    .on_read = send_read,
    .on_done = send_done,
    .on_socket = send_socket,
    .on_file = send_file,
};

static void opened(void *arg)
{
    struct xfer *x = arg;
    if (x->rc) {
        xfer_finish(x, x->rc);
        return;
    }
    char q[96], *url;
    if (x->what == XFER_TOMB) {
        snprintf(q, sizeof(q), "version=%llu", (unsigned long long)x->tomb_version);
        url = xfer_url(x->t, "DELETE", x->url, x->mkey, x->klen, q);
        x->hx = nodeclient_start_mem(x->lp.hc, "DELETE", url, NULL, 0, NULL, 0, XFER_TIMEOUT_MS,
                                     &send_ops, x);
    } else {
        snprintf(q, sizeof(q), "meta=%zu&version=%llu%s%s", x->meta_len,
                 (unsigned long long)x->m.version, x->dirty ? "&dirty=1" : "",
                 x->urgent ? "&urgent=1" : "");
        url = xfer_url(x->t, "PUT", x->url, x->mkey, x->klen, q);
        x->hx = nodeclient_start(x->lp.hc, "PUT", url, NULL, 0, (int64_t)(x->meta_len + x->m.size),
                                 XFER_TIMEOUT_MS, &send_ops, x);
    }
    free(url);
}

void xfer_send(struct target *t, const struct xfer_loop *lp, const char *url, const char *mkey,
               size_t klen, uint64_t min_version, int urgent, xfer_done_fn done, void *arg)
{
    struct xfer *x = xcalloc(1, sizeof(*x));
    x->t = t;
    x->lp = *lp;
    x->url = xstrdup(url);
    x->mkey = xmalloc(klen);
    memcpy(x->mkey, mkey, klen);
    x->klen = klen;
    x->min_version = min_version;
    x->urgent = urgent;
    x->fd = -1;
    x->done = done;
    x->arg = arg;
    (urgent ? iopool_submit_first : iopool_submit)(t->io, lp->q, open_work, opened, x);
}

/* ---- receiving ------------------------------------------------------------------------ */

struct recv {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    struct inbody b;             /* an object's record and bytes */
    int dirty;
    int urgent;                  /* a client waits for it */
    uint64_t version;            /* a tombstone's */
    struct objmeta m;
    int rc;
};

static void recv_free(struct recv *v)
{
    inbody_free(&v->b);
    free(v->mkey);
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
    if (e) {
        char msg[128];
        snprintf(msg, sizeof(msg), "cannot write object: %s", strerror(e));
        recv_fail(v, e == ENOSPC ? 507 : 500, msg);
    }
    return 0;
}

static void recv_commit_work(void *arg)
{
    struct recv *v = arg;
    struct store_x x = {0};
    char val[WRITEBACK_VAL_MAX];
    if (v->dirty)                /* still owed to the backend: so it is here */
        writeback_record(v->t, &x, v->mkey, v->klen, 0, val);
    x.keep_version = v->m.version;
    int fd = v->b.fd;
    v->b.fd = -1;
    v->rc = store_commit_x(&v->t->store, v->b.mp, v->mkey, v->klen, v->b.work, fd, &v->m, &x);
    free((char *)x.key);
}

static void recv_tomb_work(void *arg)
{
    struct recv *v = arg;
    struct store_x x = {.keep_version = v->version};
    struct store *st = &v->t->store;
    v->rc = store_delete_x(st, store_pick(st, v->mkey, v->klen), v->mkey, v->klen, 0, &x);
    if (v->rc == -ENOENT)
        v->rc = 0;               /* only the tombstone: applied all the same */
    if (v->rc == 0) {            /* and the slices and copies of what it deleted go too */
        v->t->hooks->drop_older_slices(st, v->mkey, v->klen, v->version);
        v->t->hooks->drop_local_copies(st, v->mkey, v->klen);
    }
}

static void copies_made(void *arg, int failed)
{
    if (failed)
        reb_stray(arg);          /* owed: the walk makes them (arg: the target) */
}

/* The owner of a mirrored object that came over keeps the copies that have
 * no target on its other drives (localcopy.h). */
static void local_copies(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                         uint64_t size)
{
    struct cmap *m = cmap_current();
    int want = m ? place_local_copies(t, m, mkey, klen, size) : 0;
    cmap_unref(m);
    if (want > 0) {
        struct xfer_loop lp = {r->w->base, r->w->q, target_hc(r)};
        t->hooks->sync_local_copies(t, &lp, mkey, klen, want, copies_made, t);
    }
}

static void recv_done(void *arg)
{
    struct recv *v = arg;
    struct http_req *r = v->r;
    if (reb_busy(v->t))
        http_resp_header_str(r, "X-Shoal-Busy", "1");
    if (v->rc == -EALREADY) {
        http_reply_json(r, 200, json_pack("{s:s}", "kept", "newer"));
    } else if (v->rc) {
        http_reply_error(r, err_status(v->rc), "cannot keep it: %s", strerror(-v->rc));
    } else {
        if (v->dirty)
            writeback_kick(v->t);
        if (v->b.meta && !holds(v->t, v->mkey, v->klen, v->m.size))
            reb_stray(v->t);     /* sent under an older map: on to its owner */
        else if (v->b.meta)      /* its copies on this target's other drives, if any */
            local_copies(v->t, r, v->mkey, v->klen, v->m.size);
        http_reply(r, v->b.meta ? 201 : 204, NULL, NULL, 0);
    }
    r->data = NULL;
    recv_free(v);
    http_req_unref(r);
}

static void recv_end(struct http_req *r)
{
    struct recv *v = r->data;
    if (inbody_check(&v->b, &v->m)) {
        /* 422, not 400: the sender's copy is damaged (xfer_send marks it) */
        recv_fail(v, 422, "the object arrived damaged: its bytes do not match its record");
        return;
    }
    r->on_abort = NULL;          /* the commit owns v now */
    http_req_ref(r);
    (v->urgent ? iopool_submit_first : iopool_submit)(v->t->io, r->w->q, recv_commit_work,
                                                      recv_done, v);
}

static void recv_abort(struct http_req *r)
{
    struct recv *v = r->data;
    r->data = NULL;
    recv_free(v);
}

static void recv_object(struct recv *v, struct http_req *r)
{
    char num[24];
    v->dirty = http_query_get(r, "dirty", num, sizeof(num)) > 0;
    v->urgent = http_query_get(r, "urgent", num, sizeof(num)) > 0;
    struct store_mp *at = store_pick(&v->t->store, v->mkey, v->klen);
    /* what is here already as new or newer: the bytes need not come */
    uint64_t ver = 0;
    int n = http_query_get(r, "version", num, sizeof(num));
    if (n > 0 && !parse_u64(num, (size_t)n, &ver) &&
        store_version(&v->t->store, at, v->mkey, v->klen) >= ver) {
        int busy = reb_busy(v->t);
        recv_free(v);
        http_resp_close(r);
        if (busy)
            http_resp_header_str(r, "X-Shoal-Busy", "1");
        http_reply_json(r, 200, json_pack("{s:s}", "kept", "newer"));
        return;
    }
    /* where it would go */
    if (inbody_open(&v->b, v->t, r, store_place(&v->t->store, v->mkey, v->klen))) {
        recv_free(v);
        return;
    }
    r->data = v;
    r->on_body = recv_body;
    r->on_end = recv_end;
    r->on_abort = recv_abort;
}

/* ---- a peer asks for a name ---------------------------------------------------------- */

static void asked_done(void *arg, int rc, enum xfer_what what, uint64_t bytes, int busy)
{
    struct http_req *r = arg;
    (void)bytes;
    (void)busy;
    static const char *const names[] = {"none", "object", "tomb"};
    if (rc == -EBADMSG)          /* a definite answer: the copy here is damaged too */
        http_reply_json(r, 200, json_pack("{s:s}", "sent", "damaged"));
    else if (rc && rc != -ENOENT)
        http_reply_error(r, 502, "cannot send it: %s", strerror(-rc));
    else
        http_reply_json(r, 200, json_pack("{s:s}", "sent", names[rc ? XFER_NONE : what]));
    http_req_unref(r);
}

static void recv_ask(struct recv *v, struct http_req *r)
{
    char num[24], to[72];
    uint64_t newer = 0;
    int n = http_query_get(r, "newer", num, sizeof(num));
    struct cmap *m = cmap_current();
    const struct cmap_node *nd =
        http_query_get(r, "to", to, sizeof(to)) > 0 && m ? cmap_find(m, to) : NULL;
    if (n < 0 || (n > 0 && parse_u64(num, (size_t)n, &newer)) || !nd ||
        nd->role != NODE_TARGET) {
        cmap_unref(m);
        http_reply_error(r, 400, "newer=VERSION and to=TARGET (in the map) are needed");
        recv_free(v);
        return;
    }
    /* Most often nothing here is newer: that answer needs no I/O thread
     * (a metadata read, as a GET makes on its worker). */
    struct store *st = &v->t->store;
    struct store_mp *mp = store_pick(st, v->mkey, v->klen);
    if (store_version(st, mp, v->mkey, v->klen) <= newer) {
        cmap_unref(m);
        recv_free(v);
        http_reply_json(r, 200, json_pack("{s:s}", "sent", "none"));
        return;
    }
    struct xfer_loop lp = {r->w->base, r->w->q, target_hc(r)};
    http_req_ref(r);
    xfer_send(v->t, &lp, nd->url, v->mkey, v->klen, newer, 1, asked_done, r);
    cmap_unref(m);
    recv_free(v);
}

/* GET: the object's record and bytes if newer than ?newer, for a
 * neighbour that serves them to its client as they come (neighbour.c). */
static void serve_copy(struct recv *v, struct http_req *r)
{
    char num[24];
    uint64_t newer = 0, want = 0;
    int n = http_query_get(r, "newer", num, sizeof(num));
    struct store *st = &v->t->store;
    struct store_mp *mp = store_pick(st, v->mkey, v->klen);
    int fd = -1;
    int h = http_query_get(r, "held", num, sizeof(num));
    if (h > 0 && !parse_u64(num, (size_t)h, &want)) {   /* ?held=V: is V or newer here? */
        int held = store_version(st, mp, v->mkey, v->klen) >= want;
        http_reply_json(r, 200, json_pack("{s:b}", "held", held));
        recv_free(v);
        return;
    }
    if (n > 0 && parse_u64(num, (size_t)n, &newer)) {
        http_reply_error(r, 400, "newer=VERSION");
    } else if (store_get(st, mp, v->mkey, v->klen, &v->m) || v->m.version <= newer ||
               (v->m.flags & OBJMETA_F_DAMAGED) ||
               (fd = store_data_open(mp, v->mkey, v->klen, &v->m)) < 0 ||
               !file_has_size(fd, v->m.size)) {
        if (fd >= 0) {           /* a damaged copy is never handed on */
            log_error("a neighbour asked for a copy whose data file is short: not sent");
            close(fd);
        }
        http_reply(r, 204, NULL, NULL, 0);   /* nothing newer here */
    } else {
        xfer_reply_record(r, &v->m, fd);
    }
    recv_free(v);
}

void xfer_handle(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    struct objname on;
    char err[256], provider[16];
    if (objname_parse_internal(rest, rlen, &on, err, sizeof(err)) ||
        objname_provider(r, provider, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return;
    }
    struct bmd *b = bmd_current();
    int known = b && bmd_find(b, provider, on.bucket);
    long long mine = b ? (long long)b->snap.version : 0;
    bmd_unref(b);
    if (!known) {
        /* a sender with newer bucket metadata: this target has just joined
         * and its copy is on the way (503: asked again) */
        uint64_t theirs;
        if (xfer_bmd_behind(r, "bmd", mine, &theirs)) {
            http_resp_header_str(r, "Retry-After", "1");
            http_reply_error(r, 503, "bucket metadata v%llu is not here yet (v%lld)",
                             (unsigned long long)theirs, mine);
            return;
        }
        http_reply_error(r, 404, "bucket '%s' not found", on.bucket);
        return;
    }
    struct recv *v = xcalloc(1, sizeof(*v));
    v->t = t;
    v->r = r;
    v->b.fd = -1;
    v->mkey = store_mkey(provider, on.bucket, on.name, on.name_len, &v->klen);
    char num[24];
    int n;
    switch (r->method) {
    case HTTP_M_GET:
        serve_copy(v, r);
        return;
    case HTTP_M_PUT:
        recv_object(v, r);
        return;
    case HTTP_M_POST:
        recv_ask(v, r);
        return;
    case HTTP_M_DELETE:
        n = http_query_get(r, "version", num, sizeof(num));
        if (n <= 0 || parse_u64(num, (size_t)n, &v->version) || !v->version) {
            http_reply_error(r, 400, "version=V (> 0) is needed");
            recv_free(v);
            return;
        }
        http_req_ref(r);
        iopool_submit(t->io, r->w->q, recv_tomb_work, recv_done, v);
        return;
    default:
        http_resp_header_str(r, "Allow", "GET, PUT, POST, DELETE");
        http_reply_error(r, 405, "method %s not allowed here", r->method_name);
        recv_free(v);
    }
}
