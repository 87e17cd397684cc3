/*
 * md5lane: S3 bodies' MD5s, hashed back from their work files by one
 * thread that takes several streams at once (see md5lane.h).
 *
 * The hasher's turn: under the lock, take the streams whose finish waits
 * (first: a client waits on them) and then those with at least JOIN bytes
 * waiting, up to MD5_LANES, each up to TURN bytes on; outside it, read
 * each stream's bytes a CHUNK at a time with pread and hash the chunks in
 * md5mb's lanes, a stream whose bytes run out leaving the others to go
 * on; under the lock again, record how far each got, and post done() to
 * the loop of each whose finish is now met (or whose read failed, or
 * that was closed meanwhile). A stream it holds is the hasher's alone:
 * its owner may not free it, and sees its counters only under the lock.
 *
 * Without the hasher, md5lane_wrote hashes a stream on its loop once
 * STEP bytes wait, and md5lane_finish the rest.
 */
#include "md5lane.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "loopq.h"
#include "util.h"

#define JOIN (32u << 10)
#define TURN (256u << 10)
#define STEP (256u << 10)
#define CHUNK (16u << 10)
#define GATHER 4                 /* a turn of fewer streams waits for more... */
#define GATHER_US 300            /* ...this long at most, while none finishes */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct md5lane *streams;  /* open, with the hasher on */
static int hasher_on, stopping;
static int idle;                 /* the hasher waits for bytes: a write wakes it */
static pthread_t hasher;

/* A stream's share of a turn: bytes [from, to) of its file. */
struct share {
    struct md5lane *l;
    uint64_t from, to;
    int rc;
};

/* Each share's bytes into its stream's MD5, the shares stepping together;
 * a read's error is the share's rc and it leaves. */
static void hash_shares(struct share *sh, int n)
{
    static __thread unsigned char buf[MD5_LANES][CHUNK];
    for (;;) {
        struct md5 *st[MD5_LANES];
        struct share *in[MD5_LANES];
        const unsigned char *d[MD5_LANES];
        size_t got[MD5_LANES];
        int k = 0;
        for (int i = 0; i < n; i++) {
            struct share *s = &sh[i];
            if (s->rc || s->from >= s->to)
                continue;
            size_t want = s->to - s->from < CHUNK ? (size_t)(s->to - s->from) : CHUNK;
            if ((s->rc = pread_full(s->l->fd, buf[k], want, s->from)))
                continue;
            st[k] = &s->l->st;
            in[k] = s;
            d[k] = buf[k];
            got[k++] = want;
        }
        if (!k)
            return;
        md5_update_lanes(st, d, got, k);
        for (int i = 0; i < k; i++)
            in[i]->from += got[i];
    }
}

/* On the stream's loop: its done(). */
static void fire(void *arg)
{
    struct md5lane *l = arg;
    pthread_mutex_lock(&mu);
    l->posted = 0;
    pthread_mutex_unlock(&mu);
    l->done(l->arg);
}

/* Under mu: l's done() to its loop, when one is owed. */
static void owe(struct md5lane *l)
{
    if (l->posted || l->held || !(l->dead || l->rc || (l->final && l->off == l->in)))
        return;
    l->posted = 1;
    loopq_post(l->q, fire, l);
}

/* Under mu: the shares of the next turn, finishes first; *finals says
 * how many, *coming how many other streams have yet to finish. */
static int pick(struct share *sh, int *finals, int *coming)
{
    int n = 0;
    *finals = *coming = 0;
    for (struct md5lane *l = streams; l; l = l->next)
        *coming += !l->final && !l->rc && !l->dead;
    for (int pass = 0; pass < 2; pass++)
        for (struct md5lane *l = streams; l && n < MD5_LANES; l = l->next) {
            if (l->held || l->rc || l->dead || l->in == l->off || l->final != !pass)
                continue;
            if (!l->final && l->in - l->off < JOIN)
                continue;
            l->held = 1;
            uint64_t to = l->in - l->off > TURN ? l->off + TURN : l->in;
            sh[n++] = (struct share){l, l->off, to, 0};
            *finals += l->final;
        }
    return n;
}

/* Under mu: the turn picked is put back. */
static void unpick(struct share *sh, int n)
{
    for (int i = 0; i < n; i++)
        sh[i].l->held = 0;
}

/* Now plus us microseconds, for pthread_cond_timedwait (CLOCK_REALTIME). */
static struct timespec after_us(long us)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += us * 1000;
    t.tv_sec += t.tv_nsec / 1000000000;
    t.tv_nsec %= 1000000000;
    return t;
}

static int passed(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static void *hasher_main(void *arg)
{
    (void)arg;
    struct share sh[MD5_LANES];
    struct timespec until;
    int gathering = 0;
    pthread_mutex_lock(&mu);
    while (!stopping) {
        int finals, coming;
        int n = pick(sh, &finals, &coming);
        if (!n) {
            idle = 1;
            pthread_cond_wait(&wake, &mu);
            idle = 0;
            continue;
        }
        /* no client waits, and more streams are coming in: let them
         * catch up a moment, to step along (only a finish wakes it) */
        if (!finals && n < GATHER && n < coming) {
            if (!gathering) {
                until = after_us(GATHER_US);
                gathering = 1;
            }
            if (!passed(&until)) {
                unpick(sh, n);
                pthread_cond_timedwait(&wake, &mu, &until);
                continue;
            }
        }
        gathering = 0;
        pthread_mutex_unlock(&mu);
        hash_shares(sh, n);
        pthread_mutex_lock(&mu);
        for (int i = 0; i < n; i++) {
            struct md5lane *l = sh[i].l;
            l->off = sh[i].from;
            l->rc = sh[i].rc;
            l->held = 0;
            owe(l);
        }
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int md5lane_start(int on)
{
    if (!on)
        return 0;
    int rc = pthread_create(&hasher, NULL, hasher_main, NULL);
    if (rc)
        return -rc;
    hasher_on = 1;
    return 0;
}

void md5lane_stop(void)
{
    if (!hasher_on)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&mu);
    pthread_join(hasher, NULL);
    hasher_on = stopping = 0;
}

void md5lane_open(struct md5lane *l, int fd, struct loopq *q, void (*done)(void *arg),
                  void *arg)
{
    *l = (struct md5lane){.fd = fd, .q = q, .done = done, .arg = arg};
    md5_init(&l->st);
    if (!hasher_on)
        return;
    pthread_mutex_lock(&mu);
    l->next = streams;
    if (streams)
        streams->prev = l;
    streams = l;
    pthread_mutex_unlock(&mu);
}

int md5lane_close(struct md5lane *l)
{
    if (!hasher_on)
        return 0;
    pthread_mutex_lock(&mu);
    if (l->held || l->posted) {
        l->dead = 1;             /* owe() posts its done() */
        pthread_mutex_unlock(&mu);
        return -EBUSY;
    }
    if (l->prev)
        l->prev->next = l->next;
    else if (streams == l)
        streams = l->next;
    if (l->next)
        l->next->prev = l->prev;
    l->prev = l->next = NULL;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* No hasher: bytes [l->off, to) hashed here. 0 or -errno. */
static int hash_here(struct md5lane *l, uint64_t to)
{
    struct share s = {l, l->off, to, 0};
    hash_shares(&s, 1);
    l->off = s.from;
    return l->rc = s.rc;
}

int md5lane_wrote(struct md5lane *l, uint64_t in)
{
    if (!hasher_on) {
        l->in = in;
        return l->rc || in - l->off < STEP ? l->rc : hash_here(l, in);
    }
    pthread_mutex_lock(&mu);
    l->in = in;
    int rc = l->rc;
    if (idle && !l->held && in - l->off >= JOIN)
        pthread_cond_signal(&wake);
    pthread_mutex_unlock(&mu);
    return rc;
}

int md5lane_finish(struct md5lane *l, uint64_t size)
{
    if (!hasher_on) {
        l->in = size;
        return l->rc ? l->rc : hash_here(l, size);
    }
    pthread_mutex_lock(&mu);
    l->in = size;
    int rc = l->rc;
    if (!rc && (l->off != size || l->held)) {
        l->final = 1;
        rc = 1;
        pthread_cond_signal(&wake);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}
