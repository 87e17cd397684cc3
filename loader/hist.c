/*
 * hist: latency histograms (see hist.h). A sample lands in a bucket by its
 * top six bits (exact below 64 us); a quantile reads the bucket's middle.
 * Not thread-safe: each loop thread adds to its own, under its mutex, and
 * the main thread merges.
 */
#include "hist.h"

static int bucket(uint64_t v)
{
    if (v < 64)
        return (int)v;
    int msb = 63 - __builtin_clzll(v);
    int sub = (int)((v >> (msb - 5)) & 31);
    int i = 64 + (msb - 6) * 32 + sub;
    return i < HIST_BUCKETS ? i : HIST_BUCKETS - 1;
}

static uint64_t bucket_value(int i)
{
    if (i < 64)
        return (uint64_t)i;
    int msb = (i - 64) / 32 + 6, sub = (i - 64) % 32;
    uint64_t lo = ((uint64_t)32 + (uint64_t)sub) << (msb - 5);
    return lo + ((uint64_t)1 << (msb - 5)) / 2; /* the bucket's middle */
}

void hist_add(struct hist *h, uint64_t us)
{
    h->b[bucket(us)]++;
    if (h->n == 0 || us < h->min)
        h->min = us;
    if (us > h->max)
        h->max = us;
    h->n++;
    h->sum += us;
}

void hist_merge(struct hist *into, const struct hist *from)
{
    if (from->n == 0)
        return;
    for (int i = 0; i < HIST_BUCKETS; i++)
        into->b[i] += from->b[i];
    if (into->n == 0 || from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
    into->n += from->n;
    into->sum += from->sum;
}

void hist_since(struct hist *out, const struct hist *now, const struct hist *prev)
{
    for (int i = 0; i < HIST_BUCKETS; i++)
        out->b[i] = now->b[i] - prev->b[i];
    out->n = now->n - prev->n;
    out->sum = now->sum - prev->sum;
    out->min = 0;                /* the bounds of the whole run: the buckets decide */
    out->max = now->max;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
    if (h->n == 0)
        return 0;
    uint64_t want = (uint64_t)(q * (double)h->n);
    if (want >= h->n)
        want = h->n - 1;
    uint64_t seen = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen > want) {
            uint64_t v = bucket_value(i);
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}
