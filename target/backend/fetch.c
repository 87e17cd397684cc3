/*
 * fetch: an object brought from its bucket's backend into the store.
 *
 * One fetch per object, however many ask. Fetches in flight are kept in a
 * table keyed by the object's store key: FETCH_SLOTS lists, each under its
 * own lock, the list picked by the key's xxh3. Whoever asks for an object
 * already being fetched joins that fetch as a waiter, from any worker; so
 * concurrent cold GETs of one object cost one backend GET.
 *
 * A fetch runs on the loop of the caller that started it: a GET through
 * that loop's curlclient (libcurl multi), the bytes written to a work file on
 * the object's mountpath while checksummed, then committed on the I/O pool
 * (store_commit) with the backend's ETag. A failure before the backend
 * starts sending the object (5xx, throttling, no connection) is retried
 * with backoff, the work file emptied; once a 200 has come, a failure ends
 * the fetch and commits nothing. A body shorter than its Content-Length is
 * such a failure.
 *
 * The local copy is the cache's, never the client's: when it cannot be
 * kept (the drive past space_oos with this object's size reserved, the
 * work file not made, a write failing with ENOSPC or EIO), a fetch that
 * has a tap drops the work file and goes on feeding the tap from the
 * bytes in hand, to the last one, and ends "uncached" (507): the client
 * gets the whole object and nothing partial is stored. A fetch without a
 * tap (a job's) has nobody to feed and fails at once.
 *
 * No client is needed: the starter passes a completion callback and, if it
 * streams the bytes somewhere as they land (the cold GET, cold.c), a tap
 * that sees them and may pause the transfer for backpressure. Waiters are
 * told on their own loops, after the starter; one that joined after the
 * last byte came is told it was late (the object was as good as cached).
 *
 * Threads: the table from any worker; everything else on the fetch's loop
 * but the commit (I/O pool).
 */
#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "bsum.h"
#include "fetch.h"
#include "curlclient.h"
#include "iopool.h"
#include "log.h"
#include "lru.h"
#include "space.h"
#include "loopq.h"
#include "target.h"
#include "util.h"
#include "xxh.h"

#define FETCH_SLOTS 256          /* lists in the table; a power of two */

struct waiter {
    struct waiter *next;
    struct loopq *q;             /* where done runs */
    fetch_done_fn done;
    void *arg;
    int late;                    /* joined once the backend transfer was over */
    int status;                  /* the outcome, set when the fetch ends */
    int uncached;                /* ... the object served its starter, but was not kept */
    char msg[300];
};

struct slot {
    pthread_mutex_t mu;
    struct fetch *head;
};

struct fetch {
    struct fetch *next;          /* in its slot's list */
    struct slot *slot;
    char *mkey;                  /* the key; immutable */
    size_t klen;
    struct waiter *waiters;      /* under the slot's lock */
    int transferred;             /* under the slot's lock: all bytes in, committing */
    /* the fetch's loop only (and the commit, which runs alone) */
    struct target *t;
    struct curlclient *cli;
    struct loopq *q;             /* the loop: the commit completes there */
    struct backend b;
    char *name;
    const struct fetch_tap *tap; /* the starter's, or NULL */
    void *tap_arg;
    fetch_done_fn done;          /* the starter's */
    void *arg;
    struct store_mp *mp;
    uint64_t reserved;           /* bytes counted as used while they land (space.h) */
    int fd;                      /* the work file; -1 once handed to the commit */
    char work[PATH_MAX];
    XXH3_state_t *xs;
    struct bsum bs;              /* the block sums */
    struct curlclient_xfer *x;   /* the backend GET, while it runs */
    struct event *timer;         /* the next attempt's */
    int attempt;
    int status;                  /* backend status of the current attempt */
    int started;                 /* a 200 came: no more attempts */
    int paused;                  /* the tap holds the transfer */
    int64_t expect;              /* backend Content-Length, -1 unknown */
    uint64_t got;
    int rc;                      /* local write (or work file) error */
    int local_rc;                /* the local copy was dropped (-errno): bytes only go to the tap */
    int uncached;                /* every byte came, and none was kept */
    char local_why[200];
    struct backend_obj obj;
    char errbody[512];           /* start of an error body, for its <Code> */
    size_t errlen;
    struct objmeta m;
};

static struct slot table[FETCH_SLOTS] = {
    [0 ... FETCH_SLOTS - 1] = {PTHREAD_MUTEX_INITIALIZER, NULL},
};

static void fetch_attempt(struct fetch *f);

/* ---- the table ------------------------------------------------------------- */

static struct slot *slot_of(const char *mkey, size_t klen)
{
    return &table[XXH3_64bits(mkey, klen) & (FETCH_SLOTS - 1)];
}

/* Join the fetch of mkey in flight as a waiter (returns NULL), or put a
 * new one in the table (returns it; the caller starts it). */
static struct fetch *join_or_add(const struct fetch_req *fr, fetch_done_fn done, void *arg)
{
    struct slot *s = slot_of(fr->mkey, fr->klen);
    pthread_mutex_lock(&s->mu);
    for (struct fetch *f = s->head; f; f = f->next) {
        if (f->klen == fr->klen && !memcmp(f->mkey, fr->mkey, fr->klen)) {
            struct waiter *w = xcalloc(1, sizeof(*w));
            w->q = fr->q;
            w->done = done;
            w->arg = arg;
            w->late = f->transferred;
            w->next = f->waiters;
            f->waiters = w;
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
    }
    struct fetch *f = xcalloc(1, sizeof(*f));
    f->slot = s;
    f->mkey = xstrndup(fr->mkey, fr->klen);
    f->klen = fr->klen;
    f->next = s->head;
    s->head = f;
    pthread_mutex_unlock(&s->mu);
    return f;
}

static void waiter_run(void *arg)
{
    struct waiter *w = arg;
    struct fetch_result res = {w->status, w->msg, w->late, w->uncached};
    w->done(w->arg, &res);
    free(w);
}

static void fetch_free(struct fetch *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->work);
    }
    if (f->timer)
        event_free(f->timer);
    XXH3_freeState(f->xs);
    bsum_deinit(&f->bs);
    backend_free(&f->b);
    free(f->name);
    free(f->mkey);
    free(f);
}

/* The fetch is over (status 0: committed): it leaves the table, the
 * starter is told at once, every waiter on its loop; then it is freed. */
static void fetch_end(struct fetch *f, int status, const char *msg)
{
    struct slot *s = f->slot;
    if (f->reserved)             /* committed (counted by the store now) or dropped */
        space_reserve(f->t, f->mp, f->reserved, -1);
    f->reserved = 0;
    pthread_mutex_lock(&s->mu);
    for (struct fetch **pp = &s->head; *pp; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    }
    struct waiter *w = f->waiters;
    pthread_mutex_unlock(&s->mu);
    struct fetch_result res = {status, msg ? msg : "", 0, f->uncached};
    f->done(f->arg, &res);
    while (w) {
        struct waiter *next = w->next;
        w->status = status;
        w->uncached = res.uncached;
        snprintf(w->msg, sizeof(w->msg), "%s", res.msg);
        loopq_post(w->q, waiter_run, w);
        w = next;
    }
    fetch_free(f);
}

static void fetch_fail(struct fetch *f, int status, const char *msg)
{
    log_warn("fetch of %s: %s", f->name, msg);
    fetch_end(f, status, msg);
}

/* ---- commit ------------------------------------------------------------------ */

static void commit_work(void *arg)
{
    struct fetch *f = arg;
    int fd = f->fd;
    f->fd = -1; /* store_commit closes it */
    /* never over a newer copy that waits to be written back (writeback.h) */
    char *w = store_side_key('w', f->mkey, f->klen);
    struct store_x x = {.absent = w, .absent_len = f->klen};
    if (f->b.write_back) {       /* Shoal's copy is the newest there: never over one */
        x.absent2 = f->mkey;
        x.absent2_len = f->klen;
    }
    f->rc = store_commit_x(&f->t->store, f->mp, f->mkey, f->klen, f->work, fd, &f->m, &x);
    free(w);
}

static void commit_done(void *arg)
{
    struct fetch *f = arg;
    if (f->rc)
        log_error("fetch of %s from %s: cannot commit: %s", f->name, f->b.label,
                  strerror(-f->rc));
    else
        log_debug("fetch of %s from %s: %llu bytes cached", f->name, f->b.label,
                  (unsigned long long)f->got);
    if (!f->rc && space_over_high(f->t))
        lru_kick(f->t);          /* the cache grew past its high watermark */
    if (f->rc == -EEXIST) {      /* a newer copy landed meanwhile: waiters read it */
        fetch_end(f, 0, NULL);
        return;
    }
    f->uncached = f->rc != 0;    /* every byte came (the tap's client has them) */
    fetch_end(f, f->rc == -ENOSPC ? 507 : f->rc ? 500 : 0,
              f->rc ? "cannot cache the object" : NULL);
}

/* All the backend's bytes are in the work file: commit it. */
static void transferred(struct fetch *f)
{
    if (f->tap)
        f->tap->transferred(f->tap_arg);
    f->m.size = f->got;
    f->m.cksum = XXH3_64bits_digest(f->xs);
    bsum_finish(&f->bs, &f->m);
    snprintf(f->m.backend_etag, sizeof(f->m.backend_etag), "%s", f->obj.etag);
    pthread_mutex_lock(&f->slot->mu);
    f->transferred = 1;
    pthread_mutex_unlock(&f->slot->mu);
    iopool_submit(f->t->io, f->q, commit_work, commit_done, f);
}

/* ---- without a local copy ---------------------------------------------------- */

/* The local copy cannot be kept (rc, -errno; why says so): the work file
 * goes, its reservation with it, and the tap is fed from memory from now
 * on. Returns 0, or -1 when there is no tap to feed (the fetch fails). */
static int drop_local(struct fetch *f, int rc, const char *why)
{
    if (!f->tap)
        return -1;
    if (!f->local_rc)
        log_warn("fetch of %s from %s: not cached, the bytes go to the client only: %s",
                 f->name, f->b.label, why);
    f->local_rc = rc;
    snprintf(f->local_why, sizeof(f->local_why), "%s", why);
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->work);
        f->fd = -1;
    }
    if (f->reserved)
        space_reserve(f->t, f->mp, f->reserved, -1);
    f->reserved = 0;
    if (f->tap->lost)
        f->tap->lost(f->tap_arg);
    return 0;
}

/* Admission of a 200 of known size: its bytes are counted as used while
 * they land, and the drive may not pass space_oos with them (reserved
 * first, then checked, so concurrent fetches see each other's). */
static void admit(struct fetch *f)
{
    char why[300];
    if (f->expect <= 0 || f->reserved || f->fd < 0)
        return;
    f->reserved = (uint64_t)f->expect;
    space_reserve(f->t, f->mp, f->reserved, 1);
    if (space_admit(f->t, f->mp, 0, why, sizeof(why)) == 0)
        return;
    if (drop_local(f, -ENOSPC, why) < 0) {
        space_reserve(f->t, f->mp, f->reserved, -1);   /* a job's: it writes and may fail */
        f->reserved = 0;
    }
}

/* ---- the backend GET ------------------------------------------------------- */

static int on_headers(void *arg, struct curlclient_xfer *x, int status)
{
    struct fetch *f = arg;
    f->status = status;
    backend_obj_from(&f->obj, x, status, NULL);
    if (status == 200) {
        f->expect = f->obj.size;
        f->started = 1;
        admit(f);
        if (f->tap)
            f->tap->begin(f->tap_arg, &f->obj, f->fd);
    }
    return 0;
}

static int on_data(void *arg, struct curlclient_xfer *x, const char *p, size_t n)
{
    struct fetch *f = arg;
    (void)x;
    if (f->status != 200) {
        size_t room = sizeof(f->errbody) - 1 - f->errlen, k = n < room ? n : room;
        memcpy(f->errbody + f->errlen, p, k);
        f->errlen += k;
        f->errbody[f->errlen] = '\0';
        return 0;
    }
    if (f->fd >= 0) {
        XXH3_64bits_update(f->xs, p, n);
        bsum_update(&f->bs, p, n);
    }
    for (size_t off = 0; f->fd >= 0 && off < n;) {
        ssize_t w = write(f->fd, p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            char why[200];
            snprintf(why, sizeof(why), "cannot write the object locally: %s", strerror(errno));
            if (drop_local(f, -errno, why) == 0)
                break;           /* the whole of p goes to the tap below */
            f->rc = -errno;
            return -1;
        }
        off += (size_t)w;
    }
    if (f->tap)
        f->tap->data(f->tap_arg, f->got, p, n);
    f->got += n;
    return 0;
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fetch_attempt(arg);
}

/* Another attempt after a failure that may pass, if the backend has sent
 * nothing of the object yet and attempts remain: 1 when one is set. */
static int retry(struct fetch *f, int status, const char *err)
{
    if (f->started || !backend_retryable(status) || f->attempt > f->b.retries)
        return 0;
    if (f->fd >= 0 && (ftruncate(f->fd, 0) || lseek(f->fd, 0, SEEK_SET)))
        return 0;
    XXH3_64bits_reset(f->xs);
    bsum_reset(&f->bs);
    f->got = 0;
    int ms = backend_retry_later(f->cli, f->attempt, &f->timer, retry_cb, f);
    log_info("fetch of %s from %s: %s; retry in %d ms", f->name, f->b.label,
             status ? "server error" : (err ? err : "?"), ms);
    return 1;
}

static void on_done(void *arg, struct curlclient_xfer *x, int status, const char *err)
{
    struct fetch *f = arg;
    (void)x;
    f->x = NULL;
    if (status == 200 && f->rc == 0 && (f->expect < 0 || f->got == (uint64_t)f->expect)) {
        if (!f->local_rc) {
            transferred(f);
            return;
        }
        if (f->tap)              /* the client has it all; nothing was kept */
            f->tap->transferred(f->tap_arg);
        f->uncached = 1;
        fetch_end(f, f->local_rc == -ENOSPC ? 507 : 500, f->local_why);
        return;
    }
    char msg[300] = "";
    if (f->rc) {
        snprintf(msg, sizeof(msg), "cannot write the object locally: %s", strerror(-f->rc));
        fetch_fail(f, f->rc == -ENOSPC ? 507 : 500, msg);
        return;
    }
    if (status == 200) {
        snprintf(msg, sizeof(msg), "backend %s ended the body after %llu of %lld bytes",
                 f->b.label, (unsigned long long)f->got, (long long)f->expect);
        status = 0;
    }
    if (retry(f, status, err))
        return;
    struct backend_obj o = f->obj;
    o.status = status;
    if (!status)
        snprintf(o.err, sizeof(o.err), "%.250s", err ? err : msg);
    else if (f->errlen)
        backend_err_code(&f->b, f->errbody, o.err, sizeof(o.err));
    int st = backend_status(&f->b, &o, msg, sizeof(msg));
    fetch_fail(f, st, msg);
}

static const struct curlclient_ops fetch_ops = {on_headers, on_data, NULL, on_done, NULL};

static void fetch_attempt(struct fetch *f)
{
    f->attempt++;
    f->status = 0;
    f->errlen = 0;
    f->x = backend_get_start(f->cli, &f->b, f->name, NULL, &fetch_ops, f);
}

/* The work file could not be made (f->rc); told on the loop, as the
 * contract wants. */
static void open_failed(void *arg)
{
    struct fetch *f = arg;
    char msg[200];
    snprintf(msg, sizeof(msg), "cannot create a work file: %s", strerror(-f->rc));
    fetch_fail(f, f->rc == -ENOSPC ? 507 : 500, msg);
}

/* ---- entry points ------------------------------------------------------------ */

struct fetch *fetch_get(const struct fetch_req *fr, const struct fetch_tap *tap, void *tap_arg,
                        fetch_done_fn done, void *arg)
{
    struct fetch *f = join_or_add(fr, done, arg);
    if (!f)
        return NULL;
    f->t = fr->t;
    f->cli = fr->cli;
    f->q = fr->q;
    backend_copy(&f->b, fr->b);
    f->name = xstrdup(fr->name);
    f->tap = tap;
    f->tap_arg = tap_arg;
    f->done = done;
    f->arg = arg;
    f->expect = -1;
    f->mp = store_place(&f->t->store, f->mkey, f->klen);
    f->xs = XXH3_createState();
    XXH3_64bits_reset(f->xs);
    bsum_init(&f->bs);
    f->fd = store_work_open(f->mp, &f->m.uid, f->work, sizeof(f->work));
    if (f->fd < 0) {
        int rc = f->fd;
        char why[200];
        snprintf(why, sizeof(why), "cannot create a work file: %s", strerror(-rc));
        f->fd = -1;
        if (drop_local(f, rc, why) < 0) {
            f->rc = rc;
            loopq_post(f->q, open_failed, f);
            return f;
        }
    }
    fetch_attempt(f);
    return f;
}

void fetch_pause(struct fetch *f)
{
    if (!f->paused && f->x) {
        f->paused = 1;
        curlclient_pause(f->x);
    }
}

void fetch_resume(struct fetch *f)
{
    if (f->paused && f->x) {
        f->paused = 0;
        curlclient_resume(f->x);
    }
}
