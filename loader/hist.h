/*
 * hist: a latency histogram with bounded relative error (log-linear
 * buckets: exact below 64 us, then 32 buckets per power of two, ~3%), so
 * percentiles come from every sample, not a sample of them.
 */
#ifndef SHOAL_HIST_H
#define SHOAL_HIST_H

#include <stdint.h>

#define HIST_BUCKETS (64 + 40 * 32)

struct hist {
    uint64_t b[HIST_BUCKETS];
    uint64_t n, sum, min, max;   /* microseconds */
};

void hist_add(struct hist *h, uint64_t us);
void hist_merge(struct hist *into, const struct hist *from);
/* The samples of now not in prev (an earlier state of the same
 * histogram) into out: for rates over an interval. */
void hist_since(struct hist *out, const struct hist *now, const struct hist *prev);
/* The value at quantile q (0..1), microseconds. */
uint64_t hist_quantile(const struct hist *h, double q);

#endif
