/*
 * space: used and total bytes per mountpath (see space.h).
 */
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "http.h"
#include "atime.h"
#include "iopool.h"
#include "log.h"
#include "lru.h"
#include "metrics.h"
#include "space.h"
#include "store.h"
#include "target.h"
#include "util.h"

struct sp_mp {
    struct metric_series *census_g[4];   /* objects, evictable, pinned, dirty bytes */
    uint64_t total;              /* atomic */
    int64_t sampled;             /* used, as statvfs saw it; atomic */
    int64_t reserved;            /* bytes on their way in (fetches); atomic */
    struct metric_series *used_g, *total_g;
};

/* The sampler's state, made by space_start (t->space). */
struct space {
    struct target *t;
    struct sp_mp *mp;            /* one per store mountpath */
    struct event *timer;         /* the next sample, once the last one is done */
    struct timeval every;
    struct loopq *q;             /* the timer's loop */
    uint64_t flushed_ns;         /* the last atime_flush (the sampler's) */
    uint64_t census_ns;          /* the last census for the gauges (the sampler's) */
};

/* t's sampler, or NULL before space_start. */
static struct space *space_of(const struct target *t)
{
    return __atomic_load_n(&t->space, __ATOMIC_ACQUIRE);
}

/* On the I/O pool (or at start-up): statvfs each mountpath. What the store
 * counted since the last sample is in the new sample, so it is taken off
 * the running count first. */
/* Mountpaths opened so far (more may come: mpath.h). */
static int count(const struct space *sp)
{
    return __atomic_load_n(&sp->t->store.n, __ATOMIC_ACQUIRE);
}

/* Mountpath i's gauges. */
static void series_for(struct space *sp, int i)
{
    static const char *const census[4][2] = {
        {"shoal_space_objects", "objects on a mountpath"},
        {"shoal_space_evictable_bytes", "bytes eviction may take from a mountpath now"},
        {"shoal_space_pinned_bytes", "bytes on a mountpath pinned by prefetch jobs"},
        {"shoal_space_dirty_bytes", "bytes on a mountpath not yet written back"}};
    const char *dir = sp->t->store.mp[i].dir;
    for (int k = 0; k < 4; k++)
        sp->mp[i].census_g[k] = metrics_series(
            metrics_family(METRIC_GAUGE, census[k][0], census[k][1], "mountpath", NULL, 0), dir);
    sp->mp[i].total_g = metrics_series(
        metrics_family(METRIC_GAUGE, "shoal_space_total_bytes",
                       "capacity of a mountpath's file system", "mountpath", NULL, 0), dir);
    sp->mp[i].used_g = metrics_series(
        metrics_family(METRIC_GAUGE, "shoal_space_used_bytes",
                       "bytes used on a mountpath's file system", "mountpath", NULL, 0), dir);
}

static void sample_work(void *arg)
{
    struct space *sp = arg;
    struct store *s = &sp->t->store;
    uint64_t now = mono_ns();
    if (now - sp->flushed_ns >= (uint64_t)sp->t->conf.atime_flush_s * 1000000000u) {
        atime_flush(s);          /* last reads, in a batch now and then */
        sp->flushed_ns = now;
    }
    if (now - sp->census_ns >= (uint64_t)sp->t->conf.space_census_s * 1000000000u) {
        for (int i = 0; i < count(sp); i++) {   /* a walk of the records: now and then */
            if (s->mp[i].gone)
                continue;
            struct lru_census c;
            lru_census(sp->t, i, &c);
            const uint64_t v[4] = {c.objects, c.evictable, c.pinned, c.dirty};
            for (int k = 0; k < 4; k++)
                metrics_set(sp->mp[i].census_g[k], (int64_t)v[k]);
        }
        sp->census_ns = now;
    }
    for (int i = 0; i < count(sp); i++) {
        if (s->mp[i].gone)
            continue;
        if (!sp->mp[i].used_g)
            series_for(sp, i);   /* a mountpath added at run time */
        int64_t d0 = __atomic_load_n(&s->mp[i].bytes_delta, __ATOMIC_RELAXED);
        struct statvfs v;
        if (statvfs(s->mp[i].dir, &v)) {
            log_warn("cannot measure mountpath %s: %s", s->mp[i].dir, strerror(errno));
            continue;
        }
        uint64_t total = (uint64_t)v.f_blocks * v.f_frsize;
        int64_t used = (int64_t)((uint64_t)(v.f_blocks - v.f_bfree) * v.f_frsize);
        __atomic_sub_fetch(&s->mp[i].bytes_delta, d0, __ATOMIC_RELAXED);
        __atomic_store_n(&sp->mp[i].total, total, __ATOMIC_RELAXED);
        __atomic_store_n(&sp->mp[i].sampled, used, __ATOMIC_RELAXED);
        metrics_set(sp->mp[i].used_g, used);
        metrics_set(sp->mp[i].total_g, (int64_t)total);
    }
}

static double pct(uint64_t used, uint64_t total)
{
    return total ? 100.0 * (double)used / (double)total : 0;
}

void space_reserve(const struct target *t, const struct store_mp *mp, uint64_t n, int sign)
{
    struct space *sp = space_of(t);
    if (!sp)
        return;
    int i = (int)(mp - t->store.mp);
    __atomic_add_fetch(&sp->mp[i].reserved, sign * (int64_t)n, __ATOMIC_RELAXED);
    if (sign > 0 && space_over_high(t))
        lru_kick(t);             /* room for what is on its way */
}

int space_over_high(const struct target *t)
{
    struct space *sp = space_of(t);
    for (int i = 0; sp && i < count(sp); i++) {
        if (t->store.mp[i].gone)
            continue;
        uint64_t used, total;
        space_figures(t, i, &used, &total);
        if (total && pct(used, total) >= t->conf.space_high_wm)
            return 1;
    }
    return 0;
}

static void sampled(void *arg)
{
    struct space *sp = arg;
    if (space_over_high(sp->t))
        lru_kick(sp->t);
    event_add(sp->timer, &sp->every);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct space *sp = arg;
    iopool_submit(sp->t->io, sp->q, sample_work, sampled, sp);
}

void space_start(struct target *t, struct http_worker *w)
{
    struct space *sp = xcalloc(1, sizeof(*sp));   /* lives as long as t */
    sp->t = t;
    sp->mp = xcalloc(STORE_MP_MAX, sizeof(*sp->mp));
    for (int i = 0; i < count(sp); i++)
        series_for(sp, i);
    sp->flushed_ns = mono_ns();
    sample_work(sp);
    sp->every.tv_sec = t->conf.space_sample_ms / 1000;
    sp->every.tv_usec = (t->conf.space_sample_ms % 1000) * 1000;
    sp->q = w->q;
    sp->timer = evtimer_new(w->base, on_timer, sp);
    __atomic_store_n(&t->space, sp, __ATOMIC_RELEASE);
    event_add(sp->timer, &sp->every);
}

void space_figures(const struct target *t, int i, uint64_t *used, uint64_t *total)
{
    struct space *sp = space_of(t);
    if (!sp) {
        *used = *total = 0;
        return;
    }
    int64_t u = __atomic_load_n(&sp->mp[i].sampled, __ATOMIC_RELAXED) +
                __atomic_load_n(&sp->t->store.mp[i].bytes_delta, __ATOMIC_RELAXED) +
                __atomic_load_n(&sp->mp[i].reserved, __ATOMIC_RELAXED);
    *used = u > 0 ? (uint64_t)u : 0;
    *total = __atomic_load_n(&sp->mp[i].total, __ATOMIC_RELAXED);
}

int space_admit(const struct target *t, const struct store_mp *mp, uint64_t add, char *msg,
                size_t len)
{
    if (!space_of(t))
        return 0;
    int i = (int)(mp - t->store.mp);
    uint64_t used, total;
    space_figures(t, i, &used, &total);
    if (!total || pct(used + add, total) < t->conf.space_oos)
        return 0;
    snprintf(msg, len, "target %s: mountpath %s is out of space (%.1f%% used%s, space_oos %d%%)",
             t->node.id, mp->dir, pct(used, total), add ? " before this object" : "",
             t->conf.space_oos);
    return -ENOSPC;
}

struct report {
    struct target *t;
    struct http_req *r;
    struct lru_census *c;        /* one per mountpath */
    int n;                       /* mountpaths when it was asked */
};

/* The I/O pool: what eviction may do with each mountpath's objects. */
static void census_work(void *arg)
{
    struct report *rp = arg;
    for (int i = 0; i < rp->n; i++)
        if (!rp->t->store.mp[i].gone)
            lru_census(rp->t, i, &rp->c[i]);
}

static void census_done(void *arg)
{
    struct report *rp = arg;
    struct target *t = rp->t;
    json_t *mps = json_array();
    uint64_t all_used = 0, all_total = 0;
    for (int i = 0; i < rp->n; i++) {
        if (t->store.mp[i].gone)
            continue;
        uint64_t used, total;
        space_figures(t, i, &used, &total);
        double p = pct(used, total);
        const char *state = p >= t->conf.space_oos         ? "oos"
                            : p >= t->conf.space_high_wm ? "high"
                                                         : "ok";
        const struct lru_census *c = &rp->c[i];
        json_array_append_new(mps, json_pack("{s:s, s:I, s:I, s:f, s:s, s:I, s:I, s:I, s:I}",
                                             "path", t->store.mp[i].dir, "used",
                                             (json_int_t)used, "total", (json_int_t)total,
                                             "used_pct", p, "state", state, "objects",
                                             (json_int_t)c->objects, "evictable_bytes",
                                             (json_int_t)c->evictable, "pinned_bytes",
                                             (json_int_t)c->pinned, "dirty_bytes",
                                             (json_int_t)c->dirty));
        all_used += used;
        all_total += total;
    }
    http_reply_json(rp->r, 200,
                    json_pack("{s:s, s:I, s:I, s:f, s:i, s:i, s:i, s:o}", "target", t->node.id,
                              "used", (json_int_t)all_used, "total", (json_int_t)all_total,
                              "used_pct", pct(all_used, all_total), "low_wm",
                              t->conf.space_low_wm, "high_wm", t->conf.space_high_wm, "oos",
                              t->conf.space_oos, "mountpaths", mps));
    http_req_unref(rp->r);
    free(rp->c);
    free(rp);
}

void space_report(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    struct target *t = r->w->ctx;
    struct space *sp = space_of(t);
    if (!sp) {
        http_reply_error(r, 503, "starting");
        return;
    }
    struct report *rp = xcalloc(1, sizeof(*rp));
    rp->t = t;
    rp->r = r;
    rp->n = count(sp);
    rp->c = xcalloc((size_t)rp->n, sizeof(*rp->c));
    http_req_ref(r);
    iopool_submit(sp->t->io, r->w->q, census_work, census_done, rp);
}
