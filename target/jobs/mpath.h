/*
 * mpath: mountpaths that come and go on a live target (mpath.c).
 *
 *   GET    /v1/internal/mountpaths            [{"path", "state", "io_errors"}]
 *   POST   /v1/internal/mountpaths {"path"}   open it; new objects HRW places on
 *                                             it go there (201)
 *   DELETE /v1/internal/mountpaths?path=P     place nothing more on it (202); once
 *                                             emptied it is closed for good
 *
 * (a proxy forwards /v1/targets/{id}/mountpaths to them). Either change,
 * and a mountpath the store disabled for its I/O errors, starts a resilver:
 * a job of kind "resilver" that moves every object and tombstone to the
 * mountpath HRW places it on now (bytes checked against the record's
 * checksum on the way, the version kept, a newer one there never
 * overwritten), dropping the old copy after. Until it ends, reads find a
 * name wherever it sits (store_pick). The first mountpath keeps the
 * target's own records (jobs, pins) and cannot be removed.
 *
 * What was added and removed is kept in state_dir (mountpaths.json) so a
 * restart opens the same set, and a removed mountpath not yet emptied is
 * opened to be emptied.
 *
 * Thread: the resilver's batches run on the I/O pool, driven from one
 * worker's loop.
 */
#ifndef SHOAL_TARGET_MPATH_H
#define SHOAL_TARGET_MPATH_H

#include <stddef.h>

#include "job.h"

struct http_req;
struct http_worker;
struct target;

/* Before store_open: the mountpaths to place on (the configured ones,
 * with those added and without those removed) and those to open only to
 * empty them. Both arrays and their strings are malloc'd. */
void mpath_load(struct target *t, char ***placed, int *np, char ***off, int *noff);
/* Once the server runs: a resilver on w's loop when one is due. */
void mpath_start(struct target *t, struct http_worker *w);
void mpath_handle(struct http_req *r, const char *rest, size_t rlen);

/* The kind of a target's resilver walks, "resilver" (registered by
 * main.c). */
extern const struct job_kind mpath_resilver_kind;

#endif
