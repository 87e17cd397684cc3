/*
 * atime: last reads, in memory then in batches to the store (see
 * atime.h). ATIME_SHARDS tables, each under its own lock, picked by the
 * key's xxh3; each an open-addressed table of the touched keys.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atime.h"
#include "store.h"
#include "util.h"
#include "xxh.h"

#define ATIME_SHARDS 64

struct ent {
    uint64_t h;                  /* 0: empty */
    uint32_t t;
    char *mkey;
    size_t klen;
};

struct shard {
    pthread_mutex_t mu;
    struct ent *v;
    size_t cap, n;               /* cap: a power of two, or 0 */
};

static struct shard shards[ATIME_SHARDS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
    for (int i = 0; i < ATIME_SHARDS; i++)
        pthread_mutex_init(&shards[i].mu, NULL);
}

static uint64_t hash_of(const char *mkey, size_t klen)
{
    uint64_t h = XXH3_64bits(mkey, klen);
    return h ? h : 1;
}

/* The slot of h (its own, or the empty one where it would go). */
static struct ent *slot(struct shard *s, uint64_t h, const char *mkey, size_t klen)
{
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        struct ent *e = &s->v[i];
        if (!e->h || (e->h == h && e->klen == klen && !memcmp(e->mkey, mkey, klen)))
            return e;
    }
}

static void grow(struct shard *s)
{
    struct ent *old = s->v;
    size_t ocap = s->cap;
    s->cap = ocap ? ocap * 2 : 64;
    s->v = xcalloc(s->cap, sizeof(*s->v));
    for (size_t i = 0; i < ocap; i++)
        if (old[i].h)
            *slot(s, old[i].h, old[i].mkey, old[i].klen) = old[i];
    free(old);
}

void atime_touch(const char *mkey, size_t klen)
{
    pthread_once(&once, init);
    uint64_t h = hash_of(mkey, klen);
    struct shard *s = &shards[h % ATIME_SHARDS];
    uint32_t now = (uint32_t)time(NULL);
    pthread_mutex_lock(&s->mu);
    if ((s->n + 1) * 2 > s->cap)
        grow(s);
    struct ent *e = slot(s, h, mkey, klen);
    if (!e->h) {
        e->h = h;
        e->mkey = xmalloc(klen);
        memcpy(e->mkey, mkey, klen);
        e->klen = klen;
        s->n++;
    }
    e->t = now;
    pthread_mutex_unlock(&s->mu);
}

uint32_t atime_mem(const char *mkey, size_t klen)
{
    pthread_once(&once, init);
    uint64_t h = hash_of(mkey, klen);
    struct shard *s = &shards[h % ATIME_SHARDS];
    uint32_t t = 0;
    pthread_mutex_lock(&s->mu);
    if (s->cap) {
        struct ent *e = slot(s, h, mkey, klen);
        t = e->h ? e->t : 0;
    }
    pthread_mutex_unlock(&s->mu);
    return t;
}

static char *akey(const char *mkey, size_t klen)
{
    return store_side_key('a', mkey, klen);
}

void atime_flush(struct store *st)
{
    pthread_once(&once, init);
    for (int i = 0; i < ATIME_SHARDS; i++) {
        struct shard *s = &shards[i];
        pthread_mutex_lock(&s->mu);   /* taken whole: touches meanwhile start a new table */
        struct ent *v = s->v;
        size_t cap = s->cap;
        s->v = NULL;
        s->cap = s->n = 0;
        pthread_mutex_unlock(&s->mu);
        for (size_t k = 0; k < cap; k++) {
            if (!v[k].h)
                continue;
            char *a = akey(v[k].mkey, v[k].klen);
            unsigned char t[4] = {(unsigned char)v[k].t, (unsigned char)(v[k].t >> 8),
                                  (unsigned char)(v[k].t >> 16), (unsigned char)(v[k].t >> 24)};
            store_kv_put_nosync(st, store_pick(st, v[k].mkey, v[k].klen), a, v[k].klen,
                                (const char *)t, sizeof(t));
            free(a);
            free(v[k].mkey);
        }
        free(v);
    }
}

uint32_t atime_stored(struct store *s, const char *mkey, size_t klen)
{
    char *a = akey(mkey, klen), *v = NULL;
    size_t vl = 0;
    uint32_t t = 0;
    if (store_kv_get(s, store_pick(s, mkey, klen), a, klen, &v, &vl) == 0 && vl == 4) {
        const unsigned char *u = (const unsigned char *)v;
        t = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    free(v);
    free(a);
    return t;
}
