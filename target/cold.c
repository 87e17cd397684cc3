/*
 * cold: GET and HEAD of objects in buckets with a backend.
 *
 * Warm: the object is on the drives; it is served from there without a
 * word to the backend, unless the bucket asks for validate_warm_get, in
 * which case a HEAD to the backend decides: same ETag, serve it; changed,
 * fetch again; gone, drop the local copy and answer 404.
 *
 * Cold: one fetch per object, however many GETs ask. The first GET of a
 * missing object becomes the leader: it fetches from the backend, writes
 * the work file while checksumming, and streams the same bytes to its
 * client (the requested range of them) with backpressure: when the
 * client's output buffer grows past COLD_HIGH, the transfer is paused until
 * it drains. GETs that arrive meanwhile wait on the fetch (from whichever
 * worker they are on) and are served from the drives once it is committed.
 * A fetch that fails before any byte reached the client is retried with
 * backoff; one that fails mid-stream closes the client's connection, so
 * the client sees a truncated body, never a short one that looks whole,
 * and commits nothing.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "hcli.h"
#include "hdrparse.h"
#include "http.h"
#include "iopool.h"
#include "log.h"
#include "loopq.h"
#include "target.h"
#include "util.h"

#define COLD_HIGH (8u << 20)

struct waiter {
    struct waiter *next;
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    int status;                  /* 0: fetched; else the error to answer */
    int late;                    /* joined once the backend transfer was over */
    char msg[300];
};

struct fetch {
    struct fetch *next;          /* in the table */
    char *mkey;
    size_t klen;
    struct waiter *waiters;
    int transferred;             /* the backend's bytes are all in; committing */
};

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fetch *table;

struct cold {
    struct target *t;
    struct http_req *r;          /* NULL once the client is gone */
    struct fetch *f;
    struct hcli *cli;
    struct loopq *cli_q;         /* the leader's loop, for the commit's completion */
    struct backend b;
    char *name;
    char *mkey;
    size_t klen;
    struct store_mp *mp;
    int fd;
    char work[PATH_MAX];
    /* the client is fed from the work file with sendfile, through a dup of
     * fd that lives as long as libevent needs it */
    struct evbuffer_file_segment *seg;
    XXH3_state_t *xs;
    struct hcli_xfer *x;
    struct event *timer;
    int attempt;
    int status;                  /* backend status of the current attempt */
    int64_t expect;              /* backend Content-Length, -1 unknown */
    uint64_t got;
    int range;                   /* client asked for a range: 1, none 0, bad -1 */
    uint64_t roff, rlen;
    int streaming;               /* the client's response has begun */
    int held;                    /* the client's last byte waits for the commit */
    char held_byte;
    int paused;
    int rc;                      /* local write error */
    struct backend_obj obj;
    char errbody[512];
    size_t errlen;
    struct ometa m;
};

static void cold_attempt(struct cold *c);

/* ---- the fetch table ----------------------------------------------------- */

static void waiter_run(void *arg)
{
    struct waiter *w = arg;
    if (w->status == 0)
        target_serve_local(w->t, w->r, w->mkey, w->klen, w->late ? "hit" : "miss");
    else
        http_reply_error(w->r, w->status, "%s", w->msg);
    http_req_unref(w->r);
    free(w->mkey);
    free(w);
}

/* Leave the table and hand every waiter its answer. status 0: success. */
static void fetch_finish(struct fetch *f, int status, const char *msg)
{
    pthread_mutex_lock(&table_mu);
    for (struct fetch **pp = &table; *pp; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    }
    struct waiter *w = f->waiters;
    pthread_mutex_unlock(&table_mu);
    while (w) {
        struct waiter *next = w->next;
        w->status = status;
        snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
        loopq_post(w->r->w->q, waiter_run, w);
        w = next;
    }
    free(f->mkey);
    free(f);
}

/* Join a fetch in flight (returns NULL) or start a new one (returns it,
 * and the caller leads). */
static struct fetch *fetch_join(struct target *t, struct http_req *r, const char *mkey,
                                size_t klen)
{
    pthread_mutex_lock(&table_mu);
    for (struct fetch *f = table; f; f = f->next) {
        if (f->klen == klen && !memcmp(f->mkey, mkey, klen)) {
            struct waiter *w = xcalloc(1, sizeof(*w));
            w->t = t;
            w->r = r;
            w->mkey = xstrndup(mkey, klen);
            w->klen = klen; /* the caller's reference on r passes to the waiter */
            w->late = f->transferred;
            w->next = f->waiters;
            f->waiters = w;
            pthread_mutex_unlock(&table_mu);
            return NULL;
        }
    }
    struct fetch *f = xcalloc(1, sizeof(*f));
    f->mkey = xstrndup(mkey, klen);
    f->klen = klen;
    f->next = table;
    table = f;
    pthread_mutex_unlock(&table_mu);
    return f;
}

/* ---- the leader ------------------------------------------------------------ */

static void cold_free(struct cold *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        unlink(c->work);
    }
    if (c->timer)
        event_free(c->timer);
    if (c->seg)
        evbuffer_file_segment_free(c->seg); /* libevent keeps it while it still sends */
    XXH3_freeState(c->xs);
    backend_free(&c->b);
    if (c->r) {
        c->r->on_abort = NULL;
        c->r->on_drain = NULL;
        c->r->data = NULL;
        http_req_unref(c->r);
    }
    free(c->name);
    free(c->mkey);
    free(c);
}

static void cold_client_gone(struct http_req *r)
{
    struct cold *c = r->data;
    /* Keep fetching: the object is still worth caching for the next GET. */
    c->r = NULL;
    r->data = NULL;
    http_req_unref(r);
    if (c->paused && c->x) {
        c->paused = 0;
        hcli_resume(c->x);
    }
}

static void cold_drain(struct http_req *r)
{
    struct cold *c = r->data;
    if (c->paused && c->x && http_resp_pending(r) < COLD_HIGH / 2) {
        c->paused = 0;
        hcli_resume(c->x);
    }
}

/* Headers that describe what the backend said of the object. */
static void backend_headers(struct http_req *r, const struct backend_obj *o, const char *cache)
{
    if (o->etag[0])
        http_resp_header(r, "ETag", "%s", o->etag);
    if (o->last_modified[0])
        http_resp_header(r, "Last-Modified", "%s", o->last_modified);
    http_resp_header(r, "X-Shoal-Cache", "%s", cache);
}

static void begin_client(struct cold *c)
{
    struct http_req *r = c->r;
    c->streaming = 1;
    if (!r)
        return;
    backend_headers(r, &c->obj, "miss");
    http_resp_header(r, "Accept-Ranges", "bytes");
    http_resp_header(r, "Content-Type", "application/octet-stream");
    if (c->expect < 0) {
        c->range = 0; /* unknown size: the whole object, chunked */
        http_resp_begin(r, 200, -1);
        return;
    }
    c->range = hdr_parse_range(http_req_header(r, "Range"), (uint64_t)c->expect, &c->roff,
                                  &c->rlen);
    if (c->range < 0) {
        /* nothing to stream to this client; the fetch still fills the cache */
        http_resp_header(r, "Content-Range", "bytes */%lld", (long long)c->expect);
        http_reply_error(r, 416, "range not satisfiable for %lld bytes", (long long)c->expect);
        return;
    }
    if (c->range == 0) {
        c->roff = 0;
        c->rlen = (uint64_t)c->expect;
        http_resp_begin(r, 200, c->expect);
    } else {
        http_resp_header(r, "Content-Range", "bytes %llu-%llu/%lld",
                         (unsigned long long)c->roff,
                         (unsigned long long)(c->roff + c->rlen - 1), (long long)c->expect);
        http_resp_begin(r, 206, (int64_t)c->rlen);
    }
}

static int cold_headers(void *arg, struct hcli_xfer *x, int status)
{
    struct cold *c = arg;
    c->status = status;
    backend_obj_from(&c->obj, x, status, NULL);
    if (status == 200) {
        c->expect = c->obj.size;
        begin_client(c);
        if (c->expect > 0 && !c->seg) {
            int dfd = dup(c->fd);
            if (dfd >= 0) {
                c->seg = evbuffer_file_segment_new(dfd, 0, c->expect,
                                                   EVBUF_FS_CLOSE_ON_FREE |
                                                       EVBUF_FS_DISABLE_MMAP |
                                                       EVBUF_FS_DISABLE_LOCKING);
                if (!c->seg)
                    close(dfd);
            }
        }
    }
    return 0;
}

static int cold_data(void *arg, struct hcli_xfer *x, const char *p, size_t n)
{
    struct cold *c = arg;
    if (c->status != 200) {
        size_t room = sizeof(c->errbody) - 1 - c->errlen, k = n < room ? n : room;
        memcpy(c->errbody + c->errlen, p, k);
        c->errlen += k;
        c->errbody[c->errlen] = '\0';
        return 0;
    }
    XXH3_64bits_update(c->xs, p, n);
    for (size_t off = 0; off < n;) {
        ssize_t w = write(c->fd, p + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            c->rc = -errno;
            return -1;
        }
        off += (size_t)w;
    }
    struct http_req *r = c->r;
    if (r && c->range >= 0 && !r->resp_done) {
        /* the part of [got, got+n) that falls in the client's range */
        uint64_t a = c->got, b = c->got + n;
        uint64_t lo = a > c->roff ? a : c->roff;
        uint64_t hi = c->range == 0 && c->expect < 0 ? b
                      : b < c->roff + c->rlen       ? b
                                                    : c->roff + c->rlen;
        /* A read to the object's end keeps its last byte until the copy is
         * committed: once a client has the whole object, it is cached. */
        if (hi > lo && c->expect > 0 && hi == (uint64_t)c->expect) {
            c->held = 1;
            c->held_byte = p[hi - 1 - a];
            hi--;
        }
        if (hi > lo && c->seg)
            http_resp_segment(r, c->seg, (int64_t)lo, (int64_t)(hi - lo));
        else if (hi > lo)
            http_resp_write(r, p + (lo - a), hi - lo);
        if (http_resp_pending(r) > COLD_HIGH && !c->paused) {
            c->paused = 1;
            hcli_pause(x);
        }
    }
    c->got += n;
    return 0;
}

static void commit_work(void *arg)
{
    struct cold *c = arg;
    int fd = c->fd;
    c->fd = -1;
    c->rc = store_commit(&c->t->store, c->mp, c->mkey, c->klen, c->work, fd, &c->m);
}

static void commit_done(void *arg)
{
    struct cold *c = arg;
    /* the bytes are the backend's either way; the commit decides caching */
    if (c->r && c->held) {
        http_resp_write(c->r, &c->held_byte, 1);
        http_resp_end(c->r);
    }
    if (c->rc)
        log_error("cold GET of %s from %s: cannot commit: %s", c->name, c->b.label,
                  strerror(-c->rc));
    else
        log_debug("cold GET of %s from %s: %llu bytes cached", c->name, c->b.label,
                  (unsigned long long)c->got);
    fetch_finish(c->f, c->rc ? 500 : 0, c->rc ? "cannot cache the object" : NULL);
    cold_free(c);
}

static void cold_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cold_attempt(arg);
}

static void cold_fail(struct cold *c, int status, const char *msg)
{
    log_warn("cold GET of %s: %s", c->name, msg);
    if (c->r) {
        if (c->streaming && c->range >= 0)
            http_resp_abort(c->r);
        else if (!c->r->resp_started)
            http_reply_error(c->r, status, "%s", msg);
    }
    fetch_finish(c->f, status, msg);
    cold_free(c);
}

static void cold_done(void *arg, struct hcli_xfer *x, int status, const char *err)
{
    struct cold *c = arg;
    (void)x;
    c->x = NULL;
    int ok = status == 200 && c->rc == 0 && (c->expect < 0 || c->got == (uint64_t)c->expect);
    if (ok) {
        if (c->r && c->range >= 0 && !c->held)
            http_resp_end(c->r);
        c->m.size = c->got;
        c->m.cksum = XXH3_64bits_digest(c->xs);
        snprintf(c->m.backend_etag, sizeof(c->m.backend_etag), "%s", c->obj.etag);
        pthread_mutex_lock(&table_mu);
        c->f->transferred = 1;
        pthread_mutex_unlock(&table_mu);
        iopool_submit(c->t->io, c->cli_q, commit_work, commit_done, c);
        return;
    }
    char msg[300] = "";
    if (c->rc) {
        snprintf(msg, sizeof(msg), "cannot write the object locally: %s", strerror(-c->rc));
        cold_fail(c, c->rc == -ENOSPC ? 507 : 500, msg);
        return;
    }
    if (status == 200) {
        snprintf(msg, sizeof(msg), "backend %s ended the body after %llu of %lld bytes",
                 c->b.label, (unsigned long long)c->got, (long long)c->expect);
        status = 0;
    }
    int code = status ? status : 0;
    if (!c->streaming && backend_retryable(code) && c->attempt <= c->b.retries) {
        int ms = backend_backoff_ms(c->attempt);
        log_info("cold GET of %s from %s: %s; retry in %d ms", c->name, c->b.label,
                 code ? "server error" : (err ? err : "?"), ms);
        if (ftruncate(c->fd, 0) == 0 && lseek(c->fd, 0, SEEK_SET) == 0) {
            XXH3_64bits_reset(c->xs);
            c->got = 0;
            struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
            if (!c->timer)
                c->timer = evtimer_new(hcli_base(c->cli), cold_retry_cb, c);
            evtimer_add(c->timer, &tv);
            return;
        }
    }
    if (status != 200 || c->streaming == 0) {
        struct backend_obj o = c->obj;
        o.status = code;
        if (!code)
            snprintf(o.err, sizeof(o.err), "%.250s", err ? err : msg);
        else if (c->errlen) {
            const char *s = strstr(c->errbody, "<Code>"), *e = s ? strstr(s, "</Code>") : NULL;
            if (s && e)
                snprintf(o.err, sizeof(o.err), "%.*s", (int)(e - s - 6), s + 6);
        }
        int st = backend_status(&c->b, &o, msg, sizeof(msg));
        cold_fail(c, st, msg);
        return;
    }
    cold_fail(c, 502, msg);
}

static const struct hcli_ops cold_ops = {cold_headers, cold_data, NULL, cold_done};

static void cold_attempt(struct cold *c)
{
    struct s3_req q;
    c->attempt++;
    c->status = 0;
    c->errlen = 0;
    backend_get_req(&c->b, c->name, &q);
    c->x = hcli_start(c->cli, "GET", q.url, (const char *const *)q.hdrs, q.n, -1,
                      (long)c->b.timeout_s * 1000, &cold_ops, c);
    s3_req_free(&q);
}

static void cold_lead(struct target *t, struct http_req *r, struct fetch *f,
                      const struct backend *b, char *mkey, size_t klen, const char *name)
{
    struct cold *c = xcalloc(1, sizeof(*c));
    c->t = t;
    c->r = r;
    c->f = f;
    c->cli = target_cli(r);
    c->cli_q = r->w->q;
    c->b = *b; /* takes the resolved backend */
    c->name = xstrdup(name);
    c->mkey = mkey;
    c->klen = klen;
    c->expect = -1;
    c->mp = store_pick(&t->store, mkey, klen);
    c->xs = XXH3_createState();
    XXH3_64bits_reset(c->xs);
    r->data = c; /* the caller's reference on r passes to c */
    r->on_abort = cold_client_gone;
    r->on_drain = cold_drain;
    c->fd = store_work_open(c->mp, &c->m.uid, c->work, sizeof(c->work));
    if (c->fd < 0) {
        int rc = c->fd;
        c->fd = -1;
        char msg[200];
        snprintf(msg, sizeof(msg), "cannot create a work file: %s", strerror(-rc));
        cold_fail(c, rc == -ENOSPC ? 507 : 500, msg);
        return;
    }
    cold_attempt(c);
}

/* ---- entry points ------------------------------------------------------------ */

struct probe {
    struct target *t;
    struct http_req *r;
    struct backend b;
    char *mkey;
    size_t klen;
    char *name;
    int have_local;
    struct ometa m;
};

static void probe_free(struct probe *p)
{
    backend_free(&p->b);
    free(p->mkey);
    free(p->name);
    http_req_unref(p->r);
    free(p);
}

/* Lead or join the fetch of an object; takes b, mkey and one reference on
 * r from the caller. */
static void go_cold(struct target *t, struct http_req *r, struct backend *b, char *mkey,
                    size_t klen, const char *name)
{
    struct fetch *f = fetch_join(t, r, mkey, klen);
    if (!f) {
        backend_free(b);
        free(mkey);
        return;
    }
    cold_lead(t, r, f, b, mkey, klen, name);
}

struct drop {
    struct target *t;
    char *mkey;
    size_t klen;
};

static void drop_work(void *arg)
{
    struct drop *d = arg;
    store_delete(&d->t->store, store_pick(&d->t->store, d->mkey, d->klen), d->mkey, d->klen);
    free(d->mkey);
    free(d);
}

/* HEAD of an object the drives do not hold: the backend answers. */
static void head_remote_done(void *arg, const struct backend_obj *o)
{
    struct probe *p = arg;
    struct http_req *r = p->r;
    if (o->status == 200) {
        backend_headers(r, o, "none");
        http_resp_header(r, "X-Shoal-Cached", "false");
        http_resp_begin(r, 200, o->size >= 0 ? o->size : 0);
        http_resp_end(r);
    } else {
        char msg[300];
        int st = backend_status(&p->b, o, msg, sizeof(msg));
        http_reply_error(r, st, "%s", msg);
    }
    probe_free(p);
}

/* validate_warm_get: the backend's HEAD decides what a warm GET serves. */
static void validate_done(void *arg, const struct backend_obj *o)
{
    struct probe *p = arg;
    if (o->status == 404) {
        struct drop *d = xcalloc(1, sizeof(*d));
        d->t = p->t;
        d->mkey = xstrndup(p->mkey, p->klen);
        d->klen = p->klen;
        iopool_submit(p->t->io, NULL, drop_work, NULL, d);
        http_reply_error(p->r, 404, "object is gone from backend %s", p->b.label);
        probe_free(p);
        return;
    }
    /* A fetch may have committed a newer copy while the HEAD was out. */
    struct ometa now;
    if (store_get(&p->t->store, store_pick(&p->t->store, p->mkey, p->klen), p->mkey, p->klen,
                  &now) == 0)
        p->m = now;
    if (o->status == 200 && strcmp(o->etag, p->m.backend_etag) && p->r->method == HTTP_M_GET) {
        /* changed in the backend: fetch the new version */
        struct backend b = p->b;
        memset(&p->b, 0, sizeof(p->b));
        char *mkey = p->mkey;
        p->mkey = NULL;
        http_req_ref(p->r);
        go_cold(p->t, p->r, &b, mkey, p->klen, p->name);
        probe_free(p);
        return;
    }
    if (o->status != 200)
        log_warn("validating %s against %s failed (%d %s); serving the cached copy", p->name,
                 p->b.label, o->status, o->err);
    target_serve_local(p->t, p->r, p->mkey, p->klen, "hit");
    probe_free(p);
}

void cold_get(struct target *t, struct http_req *r, const struct bmd_bucket *bk, char *mkey,
              size_t klen, const char *name)
{
    struct probe *p = xcalloc(1, sizeof(*p));
    p->t = t;
    p->r = r;
    backend_resolve(t, bk, &p->b);
    p->mkey = mkey;
    p->klen = klen;
    p->name = xstrdup(name);
    http_req_ref(r);
    p->have_local = store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen,
                              &p->m) == 0;
    if (p->have_local && !p->b.validate_warm_get) {
        target_serve_local(t, r, mkey, klen, "hit");
        probe_free(p);
        return;
    }
    if (p->have_local) {
        backend_head(target_cli(r), &p->b, name, validate_done, p);
        return;
    }
    if (r->method == HTTP_M_HEAD) {
        backend_head(target_cli(r), &p->b, name, head_remote_done, p);
        return;
    }
    struct backend b = p->b;
    memset(&p->b, 0, sizeof(p->b));
    p->mkey = NULL;
    http_req_ref(r);
    go_cold(t, r, &b, mkey, klen, name);
    probe_free(p);
}
