/*
 * writeback: the write-back queue and its uploader (see writeback.h).
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "bmd.h"
#include "backendmpu.h"
#include "http.h"
#include "iopool.h"
#include "job.h"
#include "log.h"
#include "loopq.h"
#include "listpage.h"
#include "objname.h"
#include "store.h"
#include "target.h"
#include "targetmetrics.h"
#include "util.h"
#include "writeback.h"

#define WRITEBACK_SCAN 512       /* records looked at per scan */
#define WRITEBACK_PAUSE_MAX_MS 60000
#define FLUSH_POLL_MS 200

struct writeback;

struct up {
    struct writeback *q;
    struct up *next;             /* in flight */
    char *mkey;
    size_t klen;
    char val[WRITEBACK_VAL_MAX]; /* the record as read: dropped only if still this */
    char *name;
    struct backend b;
    struct store_mp *mp;
    int fd;
    uint64_t size;
    int rc;
};

/* The uploader's state, made by writeback_start (t->writeback). */
struct writeback {
    struct target *t;
    struct http_worker *w;
    struct event *timer;
    int kicked;                  /* atomic: a look is posted */
    int urgent;                  /* atomic: a flush started, the pause ends */
    int flushes;                 /* atomic: flush jobs waiting */
    uint64_t last_put_ms;        /* atomic: the last record made */
    uint64_t deferred_since_ms;  /* uploads wait for quiet since (0: not waiting) */
    int scanning, again;         /* the loop's */
    struct up *inflight;
    int n_inflight;
    int failures;
    uint64_t pause_until_ms;
};

static struct writeback *writeback_of(const struct target *t)
{
    return __atomic_load_n(&t->wbq, __ATOMIC_ACQUIRE);
}

static uint64_t seq_ctr;         /* atomic; from the wall clock, so it grows across restarts */

static uint64_t next_seq(void)
{
    uint64_t cur = __atomic_load_n(&seq_ctr, __ATOMIC_RELAXED), nxt;
    do {
        uint64_t now = wall_ns();
        nxt = now > cur ? now : cur + 1;
    } while (!__atomic_compare_exchange_n(&seq_ctr, &cur, nxt, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return nxt;
}

static uint64_t rec_seq(const char *val, size_t n)
{
    char buf[WRITEBACK_VAL_MAX];
    snprintf(buf, sizeof(buf), "%.*s", (int)n, val);
    return n > 2 ? strtoull(buf + 2, NULL, 10) : 0;
}

void writeback_record(const struct target *t, struct store_x *x, const char *mkey, size_t klen,
                      int del, char *buf)
{
    struct writeback *q = writeback_of(t);
    if (q)
        __atomic_store_n(&q->last_put_ms, mono_ns() / 1000000, __ATOMIC_RELAXED);
    snprintf(buf, WRITEBACK_VAL_MAX, "%c %llu", del ? 'D' : 'P', (unsigned long long)next_seq());
    memset(x, 0, sizeof(*x));
    x->key = store_side_key('w', mkey, klen);
    x->key_len = klen;
    x->val = buf;
    x->val_len = strlen(buf);
}

int writeback_commit(struct target *t, struct store_mp *mp, const char *mkey, size_t klen,
                     const char *work, int fd, struct objmeta *m, const struct store_x *cond)
{
    struct store *s = &t->store;
    struct store_x x;
    char val[WRITEBACK_VAL_MAX];
    writeback_record(t, &x, mkey, klen, 0, val);
    if (cond) {
        x.if_none = cond->if_none;
        x.if_none_match = cond->if_none_match;
        x.if_match = cond->if_match;
    }
    int rc = store_commit_x(s, mp, mkey, klen, work, fd, m, &x);
    free((char *)x.key);
    return rc;
}

int writeback_owed(struct store *s, const char *mkey, size_t klen)
{
    char *w = store_side_key('w', mkey, klen), *v = NULL;
    size_t vl;
    int owed = store_kv_get(s, store_pick(s, mkey, klen), w, klen, &v, &vl) == 0;
    free(v);
    free(w);
    return owed;
}

/* ---- one upload ------------------------------------------------------------------- */

static void scan(struct writeback *q);

static void up_free(struct up *u)
{
    if (u->fd >= 0)
        close(u->fd);
    backend_free(&u->b);
    free(u->mkey);
    free(u->name);
    free(u);
}

/* Out of flight; more may start. */
static void up_over(struct up *u)
{
    struct writeback *q = u->q;
    for (struct up **pp = &q->inflight; *pp; pp = &(*pp)->next)
        if (*pp == u) {
            *pp = u->next;
            break;
        }
    q->n_inflight--;
    up_free(u);
    scan(q);
}

/* The I/O pool: the record goes, unless a newer operation replaced it. */
static void settle_work(void *arg)
{
    struct up *u = arg;
    struct writeback *q = u->q;
    char *w = store_side_key('w', u->mkey, u->klen);
    u->rc = store_kv_del_if(&q->t->store, u->mp, w, u->klen, u->val, strlen(u->val));
    free(w);
}

static void settled(void *arg)
{
    struct up *u = arg;
    struct writeback *q = u->q;
    if (u->rc && u->rc != -ESTALE && u->rc != -ENOENT)
        log_warn("write-back of %s: its record could not be dropped: %s", u->name,
                 strerror(-u->rc));
    q->failures = 0;
    up_over(u);
}

static void settle(struct up *u)
{
    struct writeback *q = u->q;
    iopool_submit(q->t->io, q->w->q, settle_work, settled, u);
}

static void backend_done(void *arg, const struct backend_obj *o)
{
    struct up *u = arg;
    struct writeback *q = u->q;
    int del = u->val[0] == 'D';
    if ((o->status >= 200 && o->status < 300) || (del && o->status == 404)) {
        targetmetrics_add(TM_WB_OK, 1);
        targetmetrics_add(TM_WB_BYTES, del ? 0 : u->size);
        settle(u);
        return;
    }
    targetmetrics_add(TM_WB_FAILED, 1);
    char msg[300];
    backend_status(&u->b, o, msg, sizeof(msg));
    q->failures++;
    uint64_t pause = 500ull << (q->failures < 7 ? q->failures : 7);
    q->pause_until_ms =
        mono_ns() / 1000000 + (pause < WRITEBACK_PAUSE_MAX_MS ? pause : WRITEBACK_PAUSE_MAX_MS);
    log_warn_rl("write-back of %s to %s failed (kept, tried again later): %s", u->name,
                u->b.label, msg);
    up_over(u);
}

/* The I/O pool: the object's current version, to send. */
static void open_work(void *arg)
{
    struct up *u = arg;
    struct writeback *q = u->q;
    struct objmeta m;
    u->rc = store_get(&q->t->store, u->mp, u->mkey, u->klen, &m);
    if (u->rc)
        return;
    if (m.flags & OBJMETA_F_DAMAGED) { /* never written back: kept for an operator */
        u->rc = -EBADMSG;
        return;
    }
    u->fd = store_data_open(u->mp, u->mkey, u->klen, &m);
    u->size = m.size;
    u->rc = u->fd < 0 ? u->fd : 0;
}

static void opened(void *arg)
{
    struct up *u = arg;
    struct writeback *q = u->q;
    if (u->rc == -ENOENT) {      /* gone meanwhile: a DELETE queued its own record */
        settle(u);
        return;
    }
    if (u->rc) {
        log_warn_rl("write-back of %s: cannot open it: %s", u->name, strerror(-u->rc));
        q->failures++;
        q->pause_until_ms = mono_ns() / 1000000 + 1000;
        up_over(u);
        return;
    }
    struct target_worker *tw = q->w->local;
    uint64_t mib = 1u << 20, part = (uint64_t)q->t->conf.wbq_part_mb * mib;
    if ((u->size + part - 1) / part > 10000)     /* S3 takes 10,000 parts at most */
        part = (u->size + 9999) / 10000;
    if (u->size > (uint64_t)q->t->conf.wbq_multipart_mb * mib && backend_multipart(&u->b))
        backendmpu_put(tw->cli, &u->b, u->name, u->fd, u->size, part, backend_done, u);
    else
        backend_put(tw->cli, &u->b, u->name, u->fd, (int64_t)u->size, backend_done, u);
}

/* Start the operation a record asks for, when its bucket has an S3
 * backend by the bucket metadata this target has. A record of a bucket
 * not known (yet: metadata still on its way after a start) or without an
 * S3 backend stays queued, untouched, and is looked at again later. */
static void up_start(struct writeback *q, const char *mkey, size_t klen, const char *val, size_t vl)
{
    struct backend b;
    const char *prov = mkey + 1, *bucket = prov + strlen(prov) + 1;
    if (backend_of(q->t, prov, bucket, &b) || !backend_writable(&b) ||
        !backend_lists_by_name(&b)) {
        backend_free(&b);
        log_warn_rl("write-back of a %s/%s object waits: the bucket has no S3 or Shoal "
                    "backend here", prov, bucket);
        return;
    }
    struct up *u = xcalloc(1, sizeof(*u));
    u->q = q;
    u->b = b;
    u->mkey = xmalloc(klen);
    memcpy(u->mkey, mkey, klen);
    u->klen = klen;
    snprintf(u->val, sizeof(u->val), "%.*s", (int)vl, val);
    u->fd = -1;
    u->mp = store_pick(&q->t->store, mkey, klen);
    const char *name = bucket + strlen(bucket) + 1;
    u->name = xstrndup(name, (size_t)(mkey + klen - name));
    u->next = q->inflight;
    q->inflight = u;
    q->n_inflight++;
    struct target_worker *tw = q->w->local;
    if (u->val[0] == 'D')
        backend_delete(tw->cli, &u->b, u->name, backend_done, u);
    else
        iopool_submit(q->t->io, q->w->q, open_work, opened, u);
}

/* ---- the walk ----------------------------------------------------------------------- */

struct found {
    struct writeback *q;
    struct gbuf keys;            /* klen (size_t), key, vl (size_t), value; repeated */
    int n;
};

static int found_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct found *f = arg;
    gbuf_add(&f->keys, &kl, sizeof(kl));
    gbuf_add(&f->keys, k, kl);
    gbuf_add(&f->keys, &vl, sizeof(vl));
    gbuf_add(&f->keys, v, vl);
    return ++f->n >= WRITEBACK_SCAN;
}

static void scan_work(void *arg)
{
    struct found *f = arg;
    struct writeback *q = f->q;
    for (int i = 0; i < q->t->store.n && f->n < WRITEBACK_SCAN; i++)
        store_kv_scan(&q->t->store, &q->t->store.mp[i], "w", 1, found_one, f);
}

static int in_flight(const struct writeback *q, const char *mkey, size_t klen)
{
    for (struct up *u = q->inflight; u; u = u->next)
        if (u->klen == klen && !memcmp(u->mkey + 1, mkey + 1, klen - 1))
            return 1;
    return 0;
}

static void scanned(void *arg)
{
    struct found *f = arg;
    struct writeback *q = f->q;
    q->scanning = 0;
    const char *p = f->keys.p, *end = f->keys.p + f->keys.n;
    while (p < end && q->n_inflight < q->t->conf.wbq_workers) {
        size_t kl, vl;
        memcpy(&kl, p, sizeof(kl));
        const char *k = p + sizeof(kl);
        memcpy(&vl, k + kl, sizeof(vl));
        const char *v = k + kl + sizeof(vl);
        p = v + vl;
        if (!in_flight(q, k, kl)) {
            char *mkey = store_side_key('o', k, kl);
            up_start(q, mkey, kl, v, vl);
            free(mkey);
        }
    }
    gbuf_free(&f->keys);
    free(f);
    if (q->again) {
        q->again = 0;
        scan(q);
    }
}

/* Look for records to send, unless a look is on its way or failures
 * pause the uploader. */
static void scan(struct writeback *q)
{
    if (q->scanning) {
        q->again = 1;
        return;
    }
    uint64_t now = mono_ns() / 1000000;
    if (q->n_inflight >= q->t->conf.wbq_workers || now < q->pause_until_ms)
        return;
    /* while PUTs keep coming, uploads wait for a quiet moment (they would
     * take the drive and the cores from them), but never longer than
     * WRITEBACK_DEFER_MAX_MS, and not at all while a flush waits */
    uint64_t last_put = __atomic_load_n(&q->last_put_ms, __ATOMIC_RELAXED);
    int busy = now - last_put < (uint64_t)q->t->conf.wbq_quiet_ms;
    if (!busy || __atomic_load_n(&q->flushes, __ATOMIC_RELAXED)) {
        q->deferred_since_ms = 0;
    } else {
        if (!q->deferred_since_ms)
            q->deferred_since_ms = now;
        if (now - q->deferred_since_ms < (uint64_t)q->t->conf.wbq_defer_max_s * 1000)
            return;              /* past it, uploads go on until a quiet moment */
    }
    q->scanning = 1;
    struct found *f = xcalloc(1, sizeof(*f));
    f->q = q;
    iopool_submit(q->t->io, q->w->q, scan_work, scanned, f);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    scan(arg);
}

static void kicked(void *arg)
{
    struct writeback *q = arg;
    __atomic_store_n(&q->kicked, 0, __ATOMIC_RELAXED);
    if (__atomic_exchange_n(&q->urgent, 0, __ATOMIC_RELAXED))
        q->pause_until_ms = 0;    /* a flush waits: try the backend again now */
    scan(q);
}

void writeback_kick(const struct target *t)
{
    struct writeback *q = writeback_of(t);
    if (!q || __atomic_exchange_n(&q->kicked, 1, __ATOMIC_RELAXED))
        return;
    loopq_post(q->w->q, kicked, q);
}

void writeback_start(struct target *t, struct http_worker *w)
{
    struct writeback *q = xcalloc(1, sizeof(*q)); /* lives as long as t */
    q->t = t;
    q->w = w;
    q->timer = event_new(w->base, -1, EV_PERSIST, on_timer, q);
    __atomic_store_n(&t->wbq, q, __ATOMIC_RELEASE);
    struct timeval every = {1, 0};
    event_add(q->timer, &every);
    writeback_kick(t);           /* what an earlier run left */
}

/* ---- flush -------------------------------------------------------------------------- */

struct flush {
    struct job *j;
    uint64_t snap;               /* records up to this seq are what it waits for */
    char *prefix;                /* "w" provider NUL bucket NUL */
    size_t plen;
    uint64_t left;
    int first;
};

static int count_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct flush *f = arg;
    (void)k;
    (void)kl;
    f->left += rec_seq(v, vl) <= f->snap;
    return 0;
}

static void count_work(void *arg)
{
    struct flush *f = arg;
    struct store *s = &f->j->t->store;
    f->left = 0;
    for (int i = 0; i < s->n; i++)
        store_kv_scan(s, &s->mp[i], f->prefix, f->plen, count_one, f);
}

static void counted(void *arg);

static void again(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct flush *f = arg;
    iopool_submit(f->j->t->io, f->j->q, count_work, counted, f);
}

static void counted(void *arg)
{
    struct flush *f = arg;
    struct job *j = f->j;
    if (f->first)
        job_set(j, JC_OWNED, f->left);
    uint64_t owned = job_counter(j, JC_OWNED);
    job_set(j, JC_DONE, owned > f->left ? owned - f->left : 0);
    f->first = 0;
    if (f->left == 0 || job_aborted(j)) {
        free(f->prefix);
        free(f);
        __atomic_sub_fetch(&j->t->wbq->flushes, 1, __ATOMIC_RELAXED);
        job_ended(j);
        return;
    }
    writeback_kick(j->t);
    struct timeval tv = {0, FLUSH_POLL_MS * 1000};
    event_base_once(j->base, -1, EV_TIMEOUT, again, f, &tv);
}

static void flush_start(struct job *j)
{
    struct flush *f = xcalloc(1, sizeof(*f));
    f->j = j;
    f->snap = next_seq();
    size_t pl = strlen(j->provider), bl = strlen(j->bucket);
    f->plen = 1 + pl + 1 + bl + 1;
    f->prefix = xmalloc(f->plen);
    f->prefix[0] = 'w';
    memcpy(f->prefix + 1, j->provider, pl + 1);
    memcpy(f->prefix + 2 + pl, j->bucket, bl + 1);
    f->first = 1;
    struct writeback *q = j->t->wbq;
    __atomic_add_fetch(&q->flushes, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&q->urgent, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&q->kicked, 0, __ATOMIC_RELAXED);   /* this kick is posted for sure */
    writeback_kick(j->t);
    iopool_submit(j->t->io, j->q, count_work, counted, f);
}

/* A flush's bucket writes back. */
static int flush_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    (void)spec;
    struct backend b;
    backend_of(j->t, j->provider, j->bucket, &b);   /* none: no write-back */
    int wb = b.write_back;
    backend_free(&b);
    if (!wb) {
        snprintf(err, errlen, "bucket %s does not write back: nothing to flush", j->bucket);
        return -1;
    }
    return 0;
}

const struct job_kind writeback_flush_kind = {
    .name = "flush",
    .init = flush_init,
    .start = flush_start,
};

/* ---- what a bucket still owes its backend ------------------------------------------- */

struct backlog {
    struct target *t;
    struct http_req *r;
    char *prefix;
    size_t plen;
    uint64_t objects, bytes, oldest;
    json_t *deleted;             /* ?deletes: the names deleted here, not yet there */
    char after[OBJNAME_MAX + 1], until[OBJNAME_MAX + 1];
};

/* ?deletes: a D record's name, when in (after, until]. */
static int deleted_one(struct backlog *o, const char *k, size_t kl)
{
    size_t nl = kl - o->plen;
    const char *name = k + o->plen;
    if (listpage_name_cmp(name, nl, o->after, strlen(o->after)) <= 0 ||
        (o->until[0] && listpage_name_cmp(name, nl, o->until, strlen(o->until)) > 0))
        return 0;
    json_array_append_new(o->deleted, json_stringn(name, nl));
    return json_array_size(o->deleted) >= 10000;
}

static int backlog_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct backlog *o = arg;
    if (o->deleted)
        return vl && v[0] == 'D' ? deleted_one(o, k, kl) : 0;
    uint64_t seq = rec_seq(v, vl);
    o->objects++;
    o->oldest = !o->oldest || seq < o->oldest ? seq : o->oldest;
    if (vl && v[0] == 'P') {
        char *mkey = store_side_key('o', k, kl);
        struct objmeta m;
        if (store_get(&o->t->store, store_pick(&o->t->store, mkey, kl), mkey, kl, &m) == 0)
            o->bytes += m.size;
        free(mkey);
    }
    return 0;
}

static void backlog_work(void *arg)
{
    struct backlog *o = arg;
    struct store *s = &o->t->store;
    for (int i = 0; i < s->n; i++)
        store_kv_scan(s, &s->mp[i], o->prefix, o->plen, backlog_one, o);
}

static void backlog_done(void *arg)
{
    struct backlog *o = arg;
    /* a record's seq is the wall clock of its write, in ns */
    if (o->deleted)
        http_reply_json(o->r, 200, json_pack("{s:o}", "deleted", o->deleted));
    else
        http_reply_json(o->r, 200, json_pack("{s:I, s:I, s:I}", "objects",
                                             (json_int_t)o->objects, "bytes",
                                             (json_int_t)o->bytes, "oldest_ns",
                                             (json_int_t)o->oldest));
    http_req_unref(o->r);
    free(o->prefix);
    free(o);
}

void writeback_report(struct http_req *r, const char *rest, size_t rlen)
{
    char prov[16], bucket[64];
    (void)rest;
    (void)rlen;
    struct target *t = r->w->ctx;
    if (!writeback_of(t)) {
        http_reply_error(r, 503, "starting");
        return;
    }
    if (http_query_get(r, "provider", prov, sizeof(prov)) <= 0 ||
        http_query_get(r, "bucket", bucket, sizeof(bucket)) <= 0) {
        http_reply_error(r, 400, "provider and bucket, please");
        return;
    }
    struct backlog *o = xcalloc(1, sizeof(*o));
    o->t = t;
    o->r = r;
    char flag[4];
    if (http_query_get(r, "deletes", flag, sizeof(flag)) >= 0) {
        o->deleted = json_array();
        if (http_query_get(r, "after", o->after, sizeof(o->after)) == -2 ||
            http_query_get(r, "until", o->until, sizeof(o->until)) == -2) {
            json_decref(o->deleted);
            free(o);
            http_reply_error(r, 400, "bad after or until");
            return;
        }
    }
    size_t pl = strlen(prov), bl = strlen(bucket);
    o->plen = 1 + pl + 1 + bl + 1;
    o->prefix = xmalloc(o->plen);
    o->prefix[0] = 'w';
    memcpy(o->prefix + 1, prov, pl + 1);
    memcpy(o->prefix + 2 + pl, bucket, bl + 1);
    http_req_ref(r);
    iopool_submit(t->io, r->w->q, backlog_work, backlog_done, o);
}

/* ---- drain ---------------------------------------------------------------------------- */

static int count_any(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)k;
    (void)kl;
    (void)v;
    (void)vl;
    (*(uint64_t *)arg)++;
    return 0;
}

void writeback_drain(struct target *t, int timeout_s)
{
    struct writeback *q = writeback_of(t);
    if (!q)
        return;
    uint64_t end = mono_ns() + (uint64_t)timeout_s * 1000000000u, left = 0;
    __atomic_add_fetch(&q->flushes, 1, __ATOMIC_RELAXED);   /* no waiting for quiet */
    for (;;) {
        left = 0;
        for (int i = 0; i < q->t->store.n; i++)
            store_kv_scan(&q->t->store, &q->t->store.mp[i], "w", 1, count_any, &left);
        if (!left || mono_ns() >= end)
            break;
        __atomic_store_n(&q->urgent, 1, __ATOMIC_RELAXED);
        writeback_kick(t);
        usleep(200000);
    }
    if (left)
        log_warn("drain: %llu write-back records still queued after %d s; they stay for the "
                 "next start", (unsigned long long)left, timeout_s);
    else
        log_info("drain: every write-back record is in its backend");
}
