/*
 * lru: least recently read first, down to the low watermark (see lru.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atime.h"
#include "bmd.h"
#include "http.h"
#include "iopool.h"
#include "job.h"
#include "log.h"
#include "loopq.h"
#include "lru.h"
#include "objmeta.h"
#include "pin.h"
#include "space.h"
#include "store.h"
#include "target.h"
#include "util.h"

/* Run by this file: no hook of the framework's. */
const struct job_kind lru_job_kind = {.name = "lru"};

#define LRU_COOL_MS 10000        /* after a round that could not reach low */

/* The eviction job's state, made by lru_start (t->lru). */
struct lru {
    struct target *t;
    struct http_worker *w;
    int kicked;                  /* atomic: a look is posted */
    int running;                 /* the loop's */
    uint64_t cool_until_ms;      /* the loop's */
};

struct cand {
    char *mkey;
    size_t klen;
    uint64_t uid, size;
    uint32_t atime;
};

struct scan {
    struct target *t;
    struct job *j;               /* NULL for a census */
    struct bmd *bm;
    char bucket_key[96];         /* the last bucket looked up, and its answer */
    int bucket_ok;
    uint32_t now, keep_s;
    struct cand *v;
    size_t n, cap;
    int freed_enough;            /* every mountpath over its goal reached it */
};

/* May objects of the bucket in mkey ('o' provider NUL bucket NUL name) go? */
static int bucket_evictable(struct scan *sc, const char *mkey, size_t klen)
{
    const char *prov = mkey + 1;
    const char *bucket = prov + strnlen(prov, klen - 1) + 1;
    if (bucket >= mkey + klen)
        return 0;
    char bk_key[96];
    snprintf(bk_key, sizeof(bk_key), "%s/%s", prov, bucket);
    if (!strcmp(bk_key, sc->bucket_key))
        return sc->bucket_ok;
    snprintf(sc->bucket_key, sizeof(sc->bucket_key), "%s", bk_key);
    const struct bmd_bucket *bk = bmd_find(sc->bm, prov, bucket);
    int backed = bk && bmd_has_backend(bk);
    sc->bucket_ok = backed && !json_is_false(json_object_get(bk->props, "lru"));
    return sc->bucket_ok;
}

static uint32_t last_read(struct store *st, const char *mkey, size_t klen, const struct objmeta *m)
{
    uint32_t t = (uint32_t)(m->mtime_ns / 1000000000u);
    uint32_t a = atime_stored(st, mkey, klen), b = atime_mem(mkey, klen);
    t = a > t ? a : t;
    return b > t ? b : t;
}

/* What may become of an object (key k, metadata m). */
enum fate { F_OWED, F_KEPT, F_PINNED, F_RECENT, F_EVICTABLE };

static enum fate fate_of(struct scan *sc, const char *k, size_t kl, const struct objmeta *m,
                         uint32_t *atime)
{
    if (sc->t->hooks->owed(&sc->t->store, k, kl))
        return F_OWED;           /* not written back yet */
    if (!bucket_evictable(sc, k, kl))
        return F_KEPT;           /* Shoal's only copy, or its bucket says lru: false */
    const char *prov = k + 1, *bucket = prov + strlen(prov) + 1;
    const char *name = bucket + strlen(bucket) + 1;
    if (pin_holds(prov, bucket, name, (size_t)(k + kl - name)))
        return F_PINNED;
    *atime = last_read(&sc->t->store, k, kl, m);
    return *atime + sc->keep_s > sc->now ? F_RECENT : F_EVICTABLE;
}

static int collect(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct scan *sc = arg;
    struct objmeta m;
    uint32_t t = 0;
    if (objmeta_decode(v, vl, &m) || fate_of(sc, k, kl, &m, &t) != F_EVICTABLE)
        return 0;
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? sc->cap * 2 : 1024;
        sc->v = xrealloc(sc->v, sc->cap * sizeof(*sc->v));
    }
    struct cand *c = &sc->v[sc->n++];
    c->mkey = xmalloc(kl);
    memcpy(c->mkey, k, kl);
    c->klen = kl;
    c->uid = m.uid;
    c->size = m.size;
    c->atime = t;
    return job_aborted(sc->j);
}

static int by_atime(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    return x->atime < y->atime ? -1 : x->atime > y->atime;
}

/* One mountpath above the high watermark: the oldest go until need bytes did. */
static void evict_mp(struct scan *sc, struct store_mp *mp, uint64_t need)
{
    struct store *st = &sc->t->store;
    sc->n = 0;
    store_kv_scan(st, mp, "o", 1, collect, sc);
    if (sc->n)                   /* (qsort wants an array, even of none) */
        qsort(sc->v, sc->n, sizeof(*sc->v), by_atime);
    job_add(sc->j, JC_OWNED, sc->n, 0);
    uint64_t freed = 0;
    for (size_t i = 0; i < sc->n; i++) {
        struct cand *c = &sc->v[i];
        if (freed < need && !job_aborted(sc->j) &&
            atime_mem(c->mkey, c->klen) <= c->atime &&   /* not read since the scan */
            store_pick(st, c->mkey, c->klen) == mp &&
            store_delete_if(st, mp, c->mkey, c->klen, c->uid) == 0) {
            sc->t->hooks->drop_local_copies(st, c->mkey, c->klen);
            freed += c->size;
            job_add(sc->j, JC_EVICTED, 1, c->size);
        }
        job_add(sc->j, JC_DONE, 1, 0);
        free(c->mkey);
    }
    if (freed < need) {
        char why[160];
        snprintf(why, sizeof(why), "%llu of %llu bytes could go: the rest has no copy "
                                   "elsewhere, was read lately or is kept by its bucket",
                 (unsigned long long)freed, (unsigned long long)need);
        job_note_error(sc->j, mp->dir, why);
        sc->freed_enough = 0;
    }
}

/* The I/O pool: every mountpath above the high watermark, to the low one. */
static void lru_work(void *arg)
{
    struct job *j = arg;
    struct target *t = j->t;
    struct scan sc = {.t = t, .j = j, .bm = bmd_current(), .now = (uint32_t)time(NULL),
                      .keep_s = (uint32_t)t->conf.lru_dont_evict_s, .freed_enough = 1};
    for (int i = 0; i < t->store.n; i++) {
        uint64_t used, total;
        space_figures(t, i, &used, &total);
        uint64_t low = total / 100 * (uint64_t)t->conf.space_low_wm;
        if (total && used * 100 >= total * (uint64_t)t->conf.space_high_wm && used > low)
            evict_mp(&sc, &t->store.mp[i], used - low);
    }
    free(sc.v);
    bmd_unref(sc.bm);
    if (!sc.freed_enough)
        t->lru->cool_until_ms = mono_ns() / 1000000 + LRU_COOL_MS;   /* read on the loop after */
}

static void lru_done(void *arg)
{
    struct job *j = arg;
    j->t->lru->running = 0;
    job_ended(j);
}

static void look(void *arg)
{
    struct lru *lru = arg;
    __atomic_store_n(&lru->kicked, 0, __ATOMIC_RELAXED);
    if (lru->running || mono_ns() / 1000000 < lru->cool_until_ms || !space_over_high(lru->t))
        return;
    lru->running = 1;
    struct job *j = job_local_start(lru->t, lru->w, &lru_job_kind, NULL);
    iopool_submit(lru->t->io, lru->w->q, lru_work, lru_done, j);
}

void lru_start(struct target *t, struct http_worker *w)
{
    struct lru *lru = xcalloc(1, sizeof(*lru));   /* lives as long as t */
    lru->t = t;
    lru->w = w;
    __atomic_store_n(&t->lru, lru, __ATOMIC_RELEASE);
}

void lru_kick(const struct target *t)
{
    struct lru *lru = __atomic_load_n(&t->lru, __ATOMIC_ACQUIRE);
    if (!lru || __atomic_exchange_n(&lru->kicked, 1, __ATOMIC_RELAXED))
        return;
    loopq_post(lru->w->q, look, lru);
}

/* ---- a census, for the space report ------------------------------------------------ */

struct census_scan {
    struct scan sc;
    struct lru_census *c;
};

static int count_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct census_scan *cs = arg;
    struct objmeta m;
    uint32_t t = 0;
    if (objmeta_decode(v, vl, &m))
        return 0;
    cs->c->objects++;
    switch (fate_of(&cs->sc, k, kl, &m, &t)) {
    case F_OWED: cs->c->dirty += m.size; break;
    case F_PINNED: cs->c->pinned += m.size; break;
    case F_EVICTABLE: cs->c->evictable += m.size; break;
    default: break;
    }
    return 0;
}

void lru_census(struct target *t, int i, struct lru_census *c)
{
    struct census_scan cs = {.sc = {.t = t, .bm = bmd_current(), .now = (uint32_t)time(NULL),
                                    .keep_s = (uint32_t)t->conf.lru_dont_evict_s},
                             .c = c};
    memset(c, 0, sizeof(*c));
    store_kv_scan(&t->store, &t->store.mp[i], "o", 1, count_one, &cs);
    bmd_unref(cs.sc.bm);
}
