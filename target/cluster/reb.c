/*
 * reb: the rebalance walk (see reb.h).
 *
 * A run walks each mountpath's object records, then its tombstones, a
 * batch of keys at a time on the I/O pool (only keys this target does not
 * own under the run's map are kept), and sends them from its loop. Its
 * state is the loop's; version, running and window are read by any
 * thread.
 */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bmd.h"
#include "cmap.h"
#include "nodeclient.h"
#include "http.h"
#include "iopool.h"
#include "job.h"
#include "log.h"
#include "loopq.h"
#include "metrics.h"
#include "node.h"
#include "objmeta.h"
#include "place.h"
#include "reb.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

/* Run by this file: no hook of the framework's. */
const struct job_kind reb_job_kind = {.name = "rebalance"};

#define BATCH_KEYS 256           /* keys to send, per read of the store */
#define BATCH_SCAN 8192          /* keys looked at, per read */
#define SWEEP_EVERY_S 60
#define RETRY_MIN_S 2
#define RETRY_MAX_S 60
#define BUSY_REQS 20             /* client requests in a second that make it busy */

struct reb;

struct run {
    struct reb *rb;
    struct job *j;
    struct cmap *map;            /* the placement it works to */
    int mp_i;                    /* the mountpath walked, */
    int phase;                   /* 0 objects, 1 tombstones, 2 slices, */
    char *after;                 /* after this key */
    size_t after_len;
    char **keys;                 /* the batch being sent */
    size_t *lens;
    uint64_t *sizes;
    int nkeys, next;
    int scanning;                /* a batch is being read */
    int walked;                  /* every mountpath is */
    int inflight;
    uint64_t scanned, owned;     /* of the batch read */
};

/* Rebalance's state, made by reb_start (t->reb). */
struct reb {
    struct target *t;
    struct http_worker *w;
    struct xfer_loop lp;
    struct event *timer;
    struct run *run;             /* the current walk, or NULL */
    struct run *old;             /* an aborted one whose sends are still out */
    struct cmap *placed;         /* the map of the last walk started */
    int pending;                 /* a walk is due (a new placement) */
    int64_t version;             /* atomic: the newest map seen */
    int running;                 /* atomic: a walk is due or under way */
    uint64_t errors;             /* atomic: the last walk's */
    int window;                  /* atomic */
    int polling;                 /* a poll of the others is out */
    uint64_t retry_at_ms, retry_s, sweep_at_ms;
    int joined_once;
    /* pacing while clients are served (rebalance_busy_mbps) */
    int64_t client_seen;         /* client requests counted at the last tick */
    int busy;                    /* the last second saw client traffic */
    uint64_t next_send_ms;       /* while busy, no send starts before */
    uint64_t peer_busy_until_ms; /* a receiver said it serves clients */
    struct event *pace;
    int again;                   /* a stray came in during the walk: another after it */
};

static struct reb *reb_of(const struct target *t)
{
    return __atomic_load_n(&t->reb, __ATOMIC_ACQUIRE);
}

int reb_window(const struct target *t)
{
    struct reb *rb = reb_of(t);
    return rb && __atomic_load_n(&rb->window, __ATOMIC_RELAXED);
}

static void run_free(struct run *u)
{
    for (int i = u->next; i < u->nkeys; i++)
        free(u->keys[i]);
    free(u->keys);
    free(u->lens);
    free(u->sizes);
    free(u->after);
    cmap_unref(u->map);
    free(u);
}

static void run_pump(struct run *u);
static void maybe_begin(struct reb *rb);

/* An aborted walk whose last send or batch is over: its job ends now (its
 * sends counted into it until then), and the next walk may begin. */
static void old_over(struct reb *rb)
{
    struct run *u = rb->old;
    job_ended(u->j);
    run_free(u);
    rb->old = NULL;
    maybe_begin(rb);
}

/* ---- reading a batch (the I/O pool) ----------------------------------------------------- */

struct scan {
    struct run *u;
    struct target *t;
    char **keys;
    size_t *lens;
    uint64_t *sizes;             /* of the objects (PLACE_ANY_SIZE: a tombstone) */
    int n;
    uint64_t scanned, owned;
    char *last;
    size_t last_len;
    int end;                     /* this mountpath's phase is over */
};

/* Into the batch: a key (NUL-ended) and the size of its object. */
static void batch_add(struct scan *sc, char *key, size_t kl, uint64_t size)
{
    sc->keys[sc->n] = key;
    sc->sizes[sc->n] = size;
    sc->lens[sc->n++] = kl;
}

static int scan_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct scan *sc = arg;
    free(sc->last);
    sc->last = xmalloc(kl);
    memcpy(sc->last, k, kl);
    sc->last_len = kl;
    sc->scanned++;
    char *mkey = xmalloc(kl + 1);
    memcpy(mkey, k, kl);
    mkey[kl] = '\0';
    if (k[0] == 's') {           /* a slice: where it goes is the walk_slice hook's (ecode.h) */
        batch_add(sc, mkey, kl, 0);
        return sc->n == BATCH_KEYS || sc->scanned >= BATCH_SCAN;
    }
    mkey[0] = 'o';               /* a tombstone's name */
    struct objmeta m;
    uint64_t size = k[0] == 'o' && !objmeta_decode(v, vl, &m) ? m.size : PLACE_ANY_SIZE;
    enum reb_act act = reb_decide(sc->u->map, sc->t->node.id, mkey, kl, size);
    if (act == REB_SKIP) {
        free(mkey);
        return 0;
    }
    if (act != REB_SEND)
        sc->owned++;
    if (act == REB_KEEP)
        free(mkey);
    else
        batch_add(sc, mkey, kl, size);
    return sc->n == BATCH_KEYS || sc->scanned >= BATCH_SCAN;
}

enum reb_act reb_decide(const struct cmap *m, const char *me, const char *mkey, size_t kl,
                        uint64_t size)
{
    size_t pl;
    char *pkey = xfer_place_key(mkey, kl, &pl);
    if (!pkey)
        return REB_SKIP;
    const struct cmap_node *owner = cmap_owner(m, pkey, pl);
    free(pkey);
    int mine = !owner || !strcmp(owner->id, me);
    int copies = owner ? place_copies(mkey, kl, size) : 1;
    int rank = copies > 1 ? place_rank(m, mkey, kl, copies, me) : -1;
    struct bmd_ec ec;
    int sliced = owner && size != PLACE_ANY_SIZE && place_ec(mkey, kl, &ec) && size >= ec.limit;
    if (rank >= 0 || (mine && sliced))
        return REB_KEEP_SEND;    /* the other holders must have it too */
    return mine ? REB_KEEP : REB_SEND;
}

static void scan_work(void *arg)
{
    struct scan *sc = arg;
    struct run *u = sc->u;
    static const char *const prefix[] = {"o", "t", "s"};   /* objects, tombstones, slices */
    sc->keys = xcalloc(BATCH_KEYS, sizeof(char *));
    sc->lens = xcalloc(BATCH_KEYS, sizeof(size_t));
    sc->sizes = xcalloc(BATCH_KEYS, sizeof(uint64_t));
    int stopped = store_kv_scan_after(&sc->t->store, &sc->t->store.mp[u->mp_i], prefix[u->phase], 1,
                                      u->after, u->after_len, scan_one, sc);
    sc->end = !stopped;
}

static void scanned(void *arg)
{
    struct scan *sc = arg;
    struct run *u = sc->u;
    struct reb *rb = u->rb;
    u->scanning = 0;
    if (u == rb->old) {           /* aborted while reading */
        for (int i = 0; i < sc->n; i++)
            free(sc->keys[i]);
        free(sc->keys);
        free(sc->lens);
        free(sc->sizes);
        free(sc->last);
        free(sc);
        if (u->inflight == 0)
            old_over(rb);
        return;
    }
    u->keys = sc->keys;
    u->lens = sc->lens;
    u->sizes = sc->sizes;
    u->nkeys = sc->n;
    u->next = 0;
    job_add(u->j, JC_OWNED, sc->owned, 0);
    __atomic_add_fetch(&u->j->pos, sc->scanned, __ATOMIC_RELAXED);
    free(u->after);
    u->after = sc->last;
    u->after_len = sc->last_len;
    if (sc->end) {               /* the next phase, or mountpath */
        free(u->after);
        u->after = NULL;
        u->after_len = 0;
        if (++u->phase == 3) {
            u->phase = 0;
            if (++u->mp_i >= __atomic_load_n(&rb->t->store.n, __ATOMIC_ACQUIRE))
                u->walked = 1;
        }
    }
    free(sc);
    run_pump(u);
}

/* ---- sending -------------------------------------------------------------------------- */

struct one {
    struct run *u;
    char *name;                  /* for the error list */
};

static void run_end(struct run *u);

/* Go easy: clients are served here or at the last receiver. */
static int paced_now(const struct reb *rb)
{
    return __atomic_load_n(&rb->busy, __ATOMIC_RELAXED) || mono_ms() < rb->peer_busy_until_ms;
}

int reb_busy(const struct target *t)
{
    struct reb *rb = reb_of(t);
    return rb && __atomic_load_n(&rb->busy, __ATOMIC_RELAXED);
}

static void sent(void *arg, int rc, enum xfer_what what, uint64_t bytes, int busy)
{
    struct one *o = arg;
    struct run *u = o->u;
    struct reb *rb = u->rb;
    struct job *j = u->j;
    u->inflight--;
    if (!rc && what == XFER_OBJECT)
        job_add(j, JC_MOVED, 1, bytes);
    if (busy)
        rb->peer_busy_until_ms = mono_ms() + 1000;
    if (paced_now(rb) && rb->t->conf.rebalance_busy_mbps)   /* the next send waits its turn */
        rb->next_send_ms = mono_ms() + bytes * 1000u /
                                          ((uint64_t)rb->t->conf.rebalance_busy_mbps << 20);
    if (rc && rc != -ENOENT) {
        char why[96];
        snprintf(why, sizeof(why), "sending it to its owner or a copy holder: %s",
                 strerror(-rc));
        job_note_error(j, o->name, why);
    }
    job_add(j, JC_DONE, 1, 0);
    free(o->name);
    free(o);
    if (u == rb->old) {           /* an aborted walk: its last sends */
        if (u->inflight == 0 && !u->scanning)
            old_over(rb);
        return;
    }
    run_pump(u);
}

static void paced(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct reb *rb = arg;
    if (rb->run)
        run_pump(rb->run);
}

static struct one *one_new(struct run *u, const char *mkey, size_t kl)
{
    const char *prov, *bucket, *name;
    size_t nl;
    struct one *o = xcalloc(1, sizeof(*o));
    o->u = u;
    o->name = xfer_key_parts(mkey, kl, &prov, &bucket, &name, &nl) ? xstrdup("(a slice)")
                                                                   : xstrndup(name, nl);
    u->inflight++;
    return o;
}

static void walked(void *arg, int rc)
{
    sent(arg, rc == -ENOENT ? 0 : rc, XFER_NONE, 0, 0);
}

static void sliced(void *arg, int failed)
{
    sent(arg, failed ? -EIO : 0, XFER_NONE, 0, 0);
}

/* One key of the batch: a slice to its holder; an erasure-coded object
 * owned here sliced to the slices' holders; a copy holder's object to
 * the other holders; anything else to its owner. */
static void send_one(struct run *u, const char *mkey, size_t kl, uint64_t size)
{
    struct reb *rb = u->rb;
    if (mkey[0] == 's') {
        rb->t->hooks->walk_slice(rb->t, &rb->lp, mkey, kl, walked, one_new(u, mkey, kl));
        return;
    }
    size_t pl;
    char *pkey = xfer_place_key(mkey, kl, &pl);
    const struct cmap_node *to[CMAP_COPIES_MAX];
    int copies = place_copies(mkey, kl, size), n = 1;
    to[0] = cmap_owner(u->map, pkey, pl);
    free(pkey);
    struct bmd_ec ec;
    if (size != PLACE_ANY_SIZE && !strcmp(to[0]->id, rb->t->node.id) &&
        place_ec(mkey, kl, &ec) && size >= ec.limit) {
        rb->t->hooks->ensure_slices(rb->t, &rb->lp, mkey, kl, sliced, one_new(u, mkey, kl));
        return;
    }
    int rank = copies > 1 ? place_rank(u->map, mkey, kl, copies, rb->t->node.id) : -1;
    if (rank >= 0)
        n = place_holders(u->map, mkey, kl, copies, to);   /* a holder: to the others */
    for (int i = 0; i < n; i++)
        if (strcmp(to[i]->id, rb->t->node.id))
            xfer_send(rb->t, &rb->lp, to[i]->url, mkey, kl, 0, 0, sent, one_new(u, mkey, kl));
    if (rank >= 0)               /* its copies on this target's other drives, or none */
        rb->t->hooks->sync_local_copies(
            rb->t, &rb->lp, mkey, kl, rank ? 0 : place_local_copies(rb->t, u->map, mkey, kl, size),
            sliced, one_new(u, mkey, kl));
}

static void run_pump(struct run *u)
{
    struct reb *rb = u->rb;
    struct job *j = u->j;
    int slow = paced_now(rb) && rb->t->conf.rebalance_busy_mbps;
    int cap = slow ? 1 : rb->t->conf.rebalance_workers;
    uint64_t now = mono_ms();
    if (slow && u->inflight == 0 && u->next < u->nkeys && now < rb->next_send_ms) {
        struct timeval tv = {0, (suseconds_t)(rb->next_send_ms - now) * 1000};
        if (tv.tv_usec >= 1000000) {
            tv.tv_sec = tv.tv_usec / 1000000;
            tv.tv_usec %= 1000000;
        }
        evtimer_add(rb->pace, &tv);   /* clients first: a turn later */
        return;
    }
    while (!job_aborted(j) && u->inflight < cap &&
           u->next < u->nkeys) {
        char *mkey = u->keys[u->next];
        uint64_t size = u->sizes[u->next];
        size_t kl = u->lens[u->next++];
        send_one(u, mkey, kl, size);
        free(mkey);
    }
    if (job_aborted(j)) {
        if (u == rb->run && u->inflight == 0 && !u->scanning)
            run_end(u);          /* stopped through /v1/jobs: tried again later */
        return;
    }
    if (u->next == u->nkeys && !u->scanning && !u->walked) {
        free(u->keys);
        free(u->lens);
        free(u->sizes);
        u->keys = NULL;
        u->lens = NULL;
        u->sizes = NULL;
        u->nkeys = u->next = 0;
        struct scan *sc = xcalloc(1, sizeof(*sc));
        sc->u = u;
        sc->t = rb->t;
        u->scanning = 1;
        iopool_submit(rb->t->io, rb->lp.q, scan_work, scanned, sc);
        return;
    }
    if (u->walked && u->next == u->nkeys && u->inflight == 0)
        run_end(u);
}

static void run_end(struct run *u)
{
    struct reb *rb = u->rb;
    struct job *j = u->j;
    uint64_t errors = job_counter(j, JC_ERRORS), moved = job_counter(j, JC_MOVED);
    errors += job_aborted(j) != 0;
    log_info("rebalance to map v%lld: %llu objects moved, %llu errors",
             (long long)u->map->snap.version, (unsigned long long)moved,
             (unsigned long long)errors);
    job_ended(j);
    rb->run = NULL;
    run_free(u);
    __atomic_store_n(&rb->errors, errors, __ATOMIC_RELAXED);
    if (rb->again && !errors) {   /* objects it does not own came in meanwhile */
        rb->again = 0;
        rb->pending = 1;
        maybe_begin(rb);
        return;
    }
    rb->again = 0;                /* after errors the retry below walks again anyway */
    if (errors) {                /* again, a while later */
        rb->retry_s = rb->retry_s ? (rb->retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S : rb->retry_s * 2)
                                : RETRY_MIN_S;
        rb->retry_at_ms = mono_ms() + rb->retry_s * 1000;
    } else {
        rb->retry_s = 0;
        rb->retry_at_ms = 0;
        if (!rb->pending)
            __atomic_store_n(&rb->running, 0, __ATOMIC_RELAXED);
    }
}

/* ---- starting, restarting --------------------------------------------------------------- */

static void begin(struct reb *rb)
{
    struct cmap *m = cmap_current();
    if (!m)
        return;
    rb->pending = 0;
    cmap_unref(rb->placed);
    snap_ref(&m->snap);
    rb->placed = m;
    if (!rb->t->conf.rebalance) {
        cmap_unref(m);
        __atomic_store_n(&rb->running, 0, __ATOMIC_RELAXED);
        return;
    }
    char id[JOB_ID_MAX];
    snprintf(id, sizeof(id), "ba1a%028llx", (unsigned long long)m->snap.version);
    struct run *u = xcalloc(1, sizeof(*u));
    u->rb = rb;
    u->map = m;
    u->j = job_local_start(rb->t, rb->w, &reb_job_kind, id);
    rb->run = u;
    __atomic_store_n(&rb->running, 1, __ATOMIC_RELAXED);
    log_info("rebalance to map v%lld begins (job %s)", (long long)m->snap.version, id);
    run_pump(u);
}

/* A walk is due: abort the one under way; begin once its sends are over. */
static void maybe_begin(struct reb *rb)
{
    if (!rb->pending || rb->old)
        return;
    if (rb->run) {
        struct run *u = rb->run;
        job_abort_set(u->j);
        rb->run = NULL;
        if (u->inflight || u->scanning) {
            rb->old = u;          /* ended and freed by its last send (or its batch) */
            return;
        }
        job_ended(u->j);
        run_free(u);
    }
    begin(rb);
}

static void on_map(void *arg)
{
    struct reb *rb = arg;
    struct cmap *m = cmap_current();
    if (!m)
        return;
    int changed = !rb->placed || !cmap_same_placement(rb->placed, m);
    cmap_unref(m);
    if (changed && rb->joined_once) {
        rb->pending = 1;
        __atomic_store_n(&rb->window, 1, __ATOMIC_RELAXED);
        maybe_begin(rb);
    } else if (rb->joined_once && !rb->run && !rb->pending && !rb->old && !rb->retry_at_ms) {
        __atomic_store_n(&rb->running, 0, __ATOMIC_RELAXED);   /* nothing to do for it */
    }
}

void reb_on_cmap(struct node *n, struct cmap *old_map, struct cmap *new_map)
{
    (void)old_map;
    struct reb *rb = reb_of(n->owner);
    if (!rb)
        return;                  /* before reb_start: its first walk looks */
    __atomic_store_n(&rb->version, new_map->snap.version, __ATOMIC_RELAXED);
    if (__atomic_load_n(&rb->lp.q, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&rb->running, 1, __ATOMIC_RELAXED);   /* until on_map says */
        loopq_post(rb->lp.q, on_map, rb);
    }
}

/* ---- the timer: the first walk, retries, tombstones, closing the window ------------------ */

struct poll {
    struct reb *rb;
    int pending;
    int open;                    /* some target is not done with the current map */
    int64_t version;
};

static void polled(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct poll *p = arg;
    struct reb *rb = p->rb;
    (void)err;
    json_t *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    if (!j || json_integer_value(json_object_get(j, "version")) < p->version ||
        json_is_true(json_object_get(j, "running")))
        p->open = 1;
    json_decref(j);
    if (--p->pending)
        return;
    rb->polling = 0;
    if (!p->open && __atomic_load_n(&rb->version, __ATOMIC_RELAXED) == p->version &&
        !__atomic_load_n(&rb->running, __ATOMIC_RELAXED)) {
        __atomic_store_n(&rb->window, 0, __ATOMIC_RELAXED);
        log_info("rebalance to map v%lld is over on every target", (long long)p->version);
    }
    free(p);
}

static void poll_others(struct reb *rb)
{
    struct cmap *m = cmap_current();
    if (!m)
        return;
    struct poll *p = xcalloc(1, sizeof(*p));
    p->rb = rb;
    p->version = m->snap.version;
    p->pending = 1;
    rb->polling = 1;
    for (int i = 0; i < m->n_members; i++) {
        const struct cmap_node *nd = &m->nodes[m->members[i]];
        if (!strcmp(nd->id, rb->t->node.id))
            continue;
        char *url = node_signed_url(&rb->t->node, "GET", nd->url, "/v1/internal/rebalance", NULL);
        p->pending++;
        nodeclient_request(rb->lp.hc, "GET", url, NULL, 0, NULL, 5000, polled, p);
        free(url);
    }
    cmap_unref(m);
    polled(p, 200, "{\"version\":9223372036854775807}", 31, NULL);   /* the hold */
}

static void sweep_work(void *arg)
{
    struct target *t = arg;
    uint64_t ttl_ms = (uint64_t)t->conf.tombstone_ttl_s * 1000u;
    long n = store_tomb_sweep(&t->store, wall_ns() / 1000000u - ttl_ms);
    if (n)
        log_info("%ld tombstones older than %d s dropped", n, t->conf.tombstone_ttl_s);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct reb *rb = arg;
    uint64_t now = mono_ms();
    if (!rb->lp.hc)               /* the worker's, made on its loop */
        rb->lp.hc = ((struct target_worker *)rb->w->local)->hc;
    int64_t seen = (int64_t)__atomic_load_n(&rb->t->node.st.client_requests, __ATOMIC_RELAXED);
    __atomic_store_n(&rb->busy, seen - rb->client_seen >= BUSY_REQS, __ATOMIC_RELAXED);
    rb->client_seen = seen;
    struct cmap *m = cmap_current();
    const struct cmap_node *me = m ? cmap_find(m, rb->t->node.id) : NULL;
    int placed = me && !(me->flags & CMAP_FLAG_DOWN) && rb->t->node.joined;
    cmap_unref(m);
    if (!rb->joined_once && placed) {
        /* the first walk: what this target holds may belong elsewhere now
         * (changes it never saw, a walk cut short by a crash) */
        rb->joined_once = 1;
        rb->pending = 1;
        maybe_begin(rb);
    }
    if (rb->retry_at_ms && now >= rb->retry_at_ms && !rb->run && !rb->old) {
        rb->retry_at_ms = 0;
        rb->pending = 1;
        maybe_begin(rb);
    }
    if (now >= rb->sweep_at_ms) {
        rb->sweep_at_ms = now + SWEEP_EVERY_S * 1000u;
        iopool_submit(rb->t->io, NULL, sweep_work, NULL, rb->t);
    }
    if (placed && __atomic_load_n(&rb->window, __ATOMIC_RELAXED) && !rb->polling &&
        !__atomic_load_n(&rb->running, __ATOMIC_RELAXED))
        poll_others(rb);
}

void reb_start(struct target *t, struct http_worker *w)
{
    struct reb *rb = xcalloc(1, sizeof(*rb));   /* lives as long as t */
    rb->t = t;
    rb->w = w;
    rb->lp.base = w->base;
    rb->sweep_at_ms = mono_ms() + SWEEP_EVERY_S * 1000u;
    struct cmap *m = cmap_current();
    if (m)
        __atomic_store_n(&rb->version, m->snap.version, __ATOMIC_RELAXED);
    cmap_unref(m);
    /* until the first walk and the others say they are done */
    __atomic_store_n(&rb->window, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&rb->running, 1, __ATOMIC_RELAXED);
    rb->timer = event_new(w->base, -1, EV_PERSIST, tick, rb);
    rb->pace = evtimer_new(w->base, paced, rb);
    struct timeval tv = {1, 0};
    event_add(rb->timer, &tv);
    __atomic_store_n(&t->reb, rb, __ATOMIC_RELEASE);
    __atomic_store_n(&rb->lp.q, w->q, __ATOMIC_RELEASE);   /* maps are acted on from now */
}

static void stray_on_loop(void *arg)
{
    struct reb *rb = arg;
    if (rb->run || rb->old) {
        rb->again = 1;
    } else if (rb->joined_once) {
        rb->pending = 1;
        maybe_begin(rb);
    }
}

void reb_stray(const struct target *t)
{
    struct reb *rb = reb_of(t);
    if (rb && __atomic_load_n(&rb->lp.q, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&rb->running, 1, __ATOMIC_RELAXED);
        loopq_post(rb->lp.q, stray_on_loop, rb);
    }
}

struct report {
    struct reb *rb;
    struct http_req *r;
    int empty;
};

static void report_work(void *arg)
{
    struct report *rp = arg;
    rp->empty = store_empty(&rp->rb->t->store);
}

static void report_done(void *arg)
{
    struct report *rp = arg;
    struct reb *rb = rp->rb;
    http_reply_json(rp->r, 200,
                    json_pack("{s:I, s:b, s:I, s:b, s:b}", "version",
                              (json_int_t)__atomic_load_n(&rb->version, __ATOMIC_RELAXED),
                              "running", __atomic_load_n(&rb->running, __ATOMIC_RELAXED), "errors",
                              (json_int_t)__atomic_load_n(&rb->errors, __ATOMIC_RELAXED), "window",
                              __atomic_load_n(&rb->window, __ATOMIC_RELAXED), "empty", rp->empty));
    http_req_unref(rp->r);
    free(rp);
}

void reb_report(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    struct target *t = r->w->ctx;
    struct reb *rb = reb_of(t);
    if (!rb) {
        http_reply_error(r, 503, "starting");
        return;
    }
    struct report *rp = xcalloc(1, sizeof(*rp));
    rp->rb = rb;
    rp->r = r;
    http_req_ref(r);
    iopool_submit(t->io, r->w->q, report_work, report_done, rp);
}

void reb_shutdown(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    log_warn("the primary ends this target: it was decommissioned");
    http_reply(r, 202, NULL, NULL, 0);
    kill(getpid(), SIGTERM);
}

int reb_write_placed(struct target *t, const char *mkey, size_t klen)
{
    if (reb_window(t) || store_pick(&t->store, mkey, klen) != store_place(&t->store, mkey, klen))
        return -EBUSY;
    return 0;
}
