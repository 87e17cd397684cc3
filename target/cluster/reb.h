/*
 * reb: rebalance (reb.c). Whenever a new cluster map places names
 * differently (a target joined, left, came back, went into maintenance or
 * is being decommissioned), every target walks what it holds, objects and
 * tombstones, and sends what it no longer owns to the owner (xfer.h),
 * rebalance_workers at a time; an object is dropped here only once the
 * owner has it or a newer version. The walk is a job of kind "rebalance"
 * with the same id on every target ("ba1a" and the map version), so
 * /v1/jobs shows its progress cluster-wide. A newer map aborts the walk;
 * the next starts once the sends in flight are over. A walk with errors
 * is tried again, up to a minute apart. While the sender or the receiver
 * serves clients, a target sends one object at a time, at
 * rebalance_busy_mbps.
 *
 * The window: from a placement change (and from start-up, which may
 * follow changes this target never saw) until every target reports its
 * walk for the current map done, a copy here may be older than one a
 * neighbour holds; reads then ask the neighbours (neighbour.h).
 *
 * Tombstones older than tombstone_ttl_s are swept every minute.
 *
 *   GET  /v1/internal/rebalance   {"version", "running", "errors", "window",
 *                                  "empty": holds no object}
 *   POST /v1/internal/shutdown    the primary ends a decommissioned target
 *
 * Thread: the walk and its timer run on one worker's loop.
 */
#ifndef SHOAL_TARGET_REB_H
#define SHOAL_TARGET_REB_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

struct cmap;
struct http_req;
struct http_worker;
struct node;
struct target;

/* On w's loop from now on (after job_resume). */
void reb_start(struct target *t, struct http_worker *w);
/* node's on_cmap (any thread). */
void reb_on_cmap(struct node *n, struct cmap *old_map, struct cmap *new_map);
/* May a neighbour hold a newer copy of some name (any thread)? */
int reb_window(const struct target *t);
/* Did this target serve clients in the last second (any thread)? Its
 * own sends, and those of targets that send to it, are paced then. */
int reb_busy(const struct target *t);

/* An object this target does not own was kept here (a send under an
 * older map): walk again once the walk under way is over. Any thread. */
void reb_stray(const struct target *t);

void reb_report(struct http_req *r, const char *rest, size_t rlen);
void reb_shutdown(struct http_req *r, const char *rest, size_t rlen);

/* What a walk does with a key held here (target me) under map m: an
 * object of size bytes, or (PLACE_ANY_SIZE) a tombstone. KEEP: this
 * target owns it and nobody else needs it; KEEP_SEND: this target owns
 * it or holds a copy, and the other holders (copies, slices) must have it
 * too; SEND: it belongs elsewhere: to its owner, then dropped here;
 * SKIP: not an object's key (left as it is, not counted). */
enum reb_act { REB_KEEP, REB_KEEP_SEND, REB_SEND, REB_SKIP };
enum reb_act reb_decide(const struct cmap *m, const char *me, const char *mkey, size_t kl,
                        uint64_t size);

/* May a conditional write of mkey commit here now: no neighbour may hold
 * a newer copy (reb_window) and the name's newest version is on the drive
 * a new one goes to? 0, or -EBUSY (then the client is asked to retry).
 * The I/O pool. */
int reb_write_placed(struct target *t, const char *mkey, size_t klen);

/* The kind of a target's rebalance walks, "rebalance" (registered by
 * main.c). */
extern const struct job_kind reb_job_kind;

#endif
