/*
 * scrub: read every copy a target holds and check it against its record
 * (scrub.c). A job of kind "scrub" (every bucket, a bucket, or a prefix
 * in one) walks the drives' records, at most scrub_mbps, and reads each
 * data file whole: a file missing, short, or whose bytes do not match
 * the checksum is damaged (found). A damaged copy of a mirrored bucket is
 * marked damaged and replaced by a good copy from another drive or a copy
 * holder; one of a bucket with a backend is dropped (the next read fetches
 * it again); both count as fixed. A damaged copy with nothing to repair
 * it from is counted lost and named in the job's errors: kept, marked
 * damaged (reads answer 500 ObjectCorrupted), while its bytes are there
 * (the last bytes of an object are never dropped), until a good copy (a
 * PUT, a copy from elsewhere) replaces it; dropped when its data file is
 * gone, so no ghost lingers in listings; one still owed to a write-back
 * backend is kept (an error). Every scrub_interval_h hours a target
 * scrubs everything by itself.
 *
 * Internal route (behind the cluster signature):
 *   GET /v1/internal/damaged   the copies kept here marked damaged (JSON:
 *                              provider, bucket, name, size, version; at
 *                              most SCRUB_DAMAGED_MAX, "more" when cut)
 *
 * A job of kind "ec-encode" walks the same way (a bucket, or a prefix in
 * it) and sends each object its target owns to the copy or slice holders
 * the bucket's settings ask for now (mirror.h, ecode.h): owned, and done
 * once every holder took its part.
 *
 * Thread: the job's loop; reading and checking on the I/O pool.
 */
#ifndef SHOAL_TARGET_SCRUB_H
#define SHOAL_TARGET_SCRUB_H

#include <stddef.h>

#include "job.h"

struct http_worker;
struct target;

/* The kinds "scrub" and "ec-encode" (registered by main.c). */
extern const struct job_kind scrub_kind;
extern const struct job_kind scrub_encode_kind;

/* Scrub everything every scrub_interval_h, on w's loop. */
void scrub_start(struct target *t, struct http_worker *w);

#define SCRUB_DAMAGED_MAX 10000
struct http_req;
/* GET /v1/internal/damaged (see above). */
void scrub_damaged_report(struct http_req *r, const char *rest, size_t rlen);

#endif
