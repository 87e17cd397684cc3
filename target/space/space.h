/*
 * space: how full a target's mountpaths are (space.c).
 *
 * Each mountpath's used and total bytes come from statvfs every
 * space_sample_ms (config), on the I/O pool; between two samples the
 * store's own count of bytes committed and removed (store_mp.bytes_delta)
 * keeps the figure current. The watermarks are percentages of a
 * mountpath's capacity: space_low_wm, space_high_wm and space_oos, at
 * which PUTs of buckets with no backend get 507; above the high one the
 * sampler starts the eviction job (lru.h). Every atime_flush_s it also
 * writes the last reads (atime.h). Gauges
 * shoal_space_used_bytes and shoal_space_total_bytes{mountpath}.
 *
 * Internal route (behind the cluster signature):
 *   GET /v1/internal/space   this target's mountpaths (JSON), each with its
 *                            objects and the bytes eviction may take, the
 *                            pinned and the not yet written back
 *
 * Thread: the figures are read by any worker; the sampler's timer runs on
 * the loop it was started on.
 */
#ifndef SHOAL_TARGET_SPACE_H
#define SHOAL_TARGET_SPACE_H

#include <stddef.h>
#include <stdint.h>

struct http_req;
struct http_worker;
struct store_mp;
struct target;

/* The first sample (blocking), then one every space_sample_ms on w's loop. */
void space_start(struct target *t, struct http_worker *w);

/* Would add more bytes take mp past space_oos? 0, or -ENOSPC with msg set
 * (naming the target and the mountpath). */
int space_admit(const struct target *t, const struct store_mp *mp, uint64_t add, char *msg,
                size_t len);

void space_report(struct http_req *r, const char *rest, size_t rlen);

/* Mountpath i's used and total bytes now (sampled, plus what the store
 * counted since). */
void space_figures(const struct target *t, int i, uint64_t *used, uint64_t *total);
/* Count n bytes on their way into mp as used (sign 1) until they are
 * committed or dropped (sign -1): a fetch's, from the backend's answer. */
void space_reserve(const struct target *t, const struct store_mp *mp, uint64_t n, int sign);
/* Is any mountpath at or above space_high_wm? */
int space_over_high(const struct target *t);

#endif
