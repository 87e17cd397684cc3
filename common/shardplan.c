/*
 * shardplan: samples laid out in shards (see shardplan.h).
 */
#include "shardplan.h"

#include <stdlib.h>
#include <string.h>

#include "archidx.h"
#include "listpage.h"
#include "util.h"

size_t shardplan_key(const char *name, size_t n)
{
    size_t base = 0;
    for (size_t i = n; i > 0; i--)
        if (name[i - 1] == '/') {
            base = i;
            break;
        }
    const char *dot = memchr(name + base, '.', n - base);
    return dot ? (size_t)(dot - name) : n;
}

#define R512(x) (((x) + 511) / 512 * 512)

uint64_t shardplan_member_bytes(int kind, size_t nlen, uint64_t size)
{
    if (kind == ARCHIDX_ZIP)     /* local header, data descriptor, central entry */
        return 30 + nlen + size + 24 + 46 + nlen;
    uint64_t b = 512 + R512(size);
    if (nlen > 100)              /* a pax header carries the long name */
        b += 512 + R512(nlen + 32);
    return b;
}

static int item_cmp(const void *x, const void *y, void *arg)
{
    const struct shardplan_item *v = arg;
    const struct shardplan_item *a = &v[*(const uint32_t *)x], *b = &v[*(const uint32_t *)y];
    int c = listpage_name_cmp(a->name, shardplan_key(a->name, a->nlen), b->name,
                      shardplan_key(b->name, b->nlen));
    if (!c)
        c = listpage_name_cmp(a->name, a->nlen, b->name, b->nlen);
    if (!c)                      /* the same name: the first given stays */
        c = *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
    return c;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

struct sample {
    size_t first, count;         /* in the sorted order */
};

/* The sorted order without the names met twice; its samples into *sv. */
static size_t samples_of(struct shardplan *p, const struct shardplan_item *v, uint32_t *sorted,
                         size_t n, struct sample **sv)
{
    size_t kept = 0, ns = 0;
    *sv = xcalloc(n ? n : 1, sizeof(**sv));
    p->dups = xcalloc(n ? n : 1, sizeof(*p->dups));
    const struct shardplan_item *prev = NULL;
    size_t prev_key = 0;
    for (size_t i = 0; i < n; i++) {
        const struct shardplan_item *it = &v[sorted[i]];
        size_t k = shardplan_key(it->name, it->nlen);
        if (prev && !listpage_name_cmp(prev->name, prev->nlen, it->name, it->nlen)) {
            p->dups[p->ndups++] = sorted[i];
            continue;
        }
        if (!prev || listpage_name_cmp(prev->name, prev_key, it->name, k))
            (*sv)[ns++] = (struct sample){kept, 0};
        (*sv)[ns - 1].count++;
        sorted[kept++] = sorted[i];
        prev = it;
        prev_key = k;
    }
    p->n = kept;
    return ns;
}

int shardplan_make(struct shardplan *p, const struct shardplan_item *v, size_t n, int kind,
                   uint64_t shard_size, size_t max_members, int shuffle, uint64_t seed)
{
    memset(p, 0, sizeof(*p));
    if (n > UINT32_MAX)
        return -1;
    uint32_t *sorted = xcalloc(n ? n : 1, sizeof(*sorted));
    for (size_t i = 0; i < n; i++)
        sorted[i] = (uint32_t)i;
    qsort_r(sorted, n, sizeof(*sorted), item_cmp, (void *)v);
    struct sample *sv;
    size_t ns = samples_of(p, v, sorted, n, &sv);
    p->samples = ns;
    if (shuffle)
        for (size_t i = ns; i > 1; i--) {   /* Fisher-Yates */
            size_t k = (size_t)(splitmix(&seed) % i);
            struct sample t = sv[i - 1];
            sv[i - 1] = sv[k];
            sv[k] = t;
        }
    p->order = xcalloc(p->n ? p->n : 1, sizeof(*p->order));
    p->cut = xcalloc(ns + 1, sizeof(*p->cut));
    size_t at = 0;
    uint64_t in_shard = 0;
    for (size_t s = 0; s < ns; s++) {
        if (s == 0 || in_shard >= shard_size ||
            at - p->cut[p->nshards - 1] + sv[s].count > max_members) {
            p->cut[p->nshards++] = at;
            in_shard = 0;
        }
        for (size_t k = 0; k < sv[s].count; k++) {
            uint32_t i = sorted[sv[s].first + k];
            p->order[at++] = i;
            in_shard += shardplan_member_bytes(kind, v[i].nlen, v[i].size);
        }
    }
    p->cut[p->nshards] = at;
    free(sv);
    free(sorted);
    return 0;
}

void shardplan_free(struct shardplan *p)
{
    free(p->order);
    free(p->cut);
    free(p->dups);
    memset(p, 0, sizeof(*p));
}
