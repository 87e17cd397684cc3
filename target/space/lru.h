/*
 * lru: the eviction job (lru.c). When a mountpath is above space_high_wm,
 * a job of kind "lru" (listed in /v1/jobs like any other, started by the
 * target itself) drops Shoal's copy of the least recently read objects
 * until the mountpath is under space_low_wm. Only objects a backend also
 * holds go: never those of buckets with no backend or with the property
 * "lru": false, never one pinned by a prefetch job (pin.h), never one
 * read within lru_dont_evict_s, never one written
 * again since the job looked (the delete is conditional on its version).
 * A round that cannot reach the low watermark says why in its errors and
 * the next waits a little, so a drive full of what must stay is not
 * scanned over and over.
 *
 * Thread: kicks from any thread; the job's bookkeeping on one worker's
 * loop, its scan and deletes on the I/O pool.
 */
#ifndef SHOAL_TARGET_LRU_H
#define SHOAL_TARGET_LRU_H

#include <stdint.h>

#include "job.h"

struct http_worker;
struct target;

/* Jobs run from w's loop. */
void lru_start(struct target *t, struct http_worker *w);
/* Look whether a job is needed (any thread; cheap, coalesced). */
void lru_kick(const struct target *t);

/* Mountpath i's objects by what eviction may do with them (blocks: the
 * I/O pool): how many, and the bytes it may evict now, the bytes pinned
 * by prefetch jobs, and the bytes not yet written back. */
struct lru_census {
    uint64_t objects, evictable, pinned, dirty;
};
void lru_census(struct target *t, int i, struct lru_census *c);

/* The kind of a target's eviction rounds, "lru" (registered by main.c). */
extern const struct job_kind lru_job_kind;

#endif
