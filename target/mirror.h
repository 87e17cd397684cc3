/*
 * mirror: n-way mirroring (mirror.c). A bucket with the property
 * mirror {"copies": N} keeps full copies of each object on the N best
 * active targets by HRW (cmap_holders): the owner, which serves GETs, and
 * the next N-1. The owner's PUT sends the new version to the others
 * (xfer.h) before it is acknowledged; a holder that is down or does not
 * take it is owed the copy, which the next walk brings (reb.h: every
 * holder makes sure the others have what it holds, after every placement
 * change and after a send failed). A holder is never told to drop its copy
 * by a rebalance; a target that is no holder sends the copy to the owner
 * and drops it, as for any bucket.
 *
 * Thread: any (the BMD and map are snapshots); mirror_spread's sends run
 * on the loop given.
 */
#ifndef SHOAL_TARGET_MIRROR_H
#define SHOAL_TARGET_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "cmap.h"

struct target;
struct xfer_loop;

/* How many copies the bucket of store key mkey keeps (1: none extra, or
 * the bucket is not in the BMD). */
int mirror_copies(const char *mkey, size_t klen);

/* mkey's holders under m, the owner first, for a bucket of copies copies;
 * how many (0: the key is malformed or the map has no target). */
int mirror_holders(const struct cmap *m, const char *mkey, size_t klen, int copies,
                   const struct cmap_node **out);

/* The rank of target id among mkey's holders under m: 0 the owner,
 * 1..copies-1 a copy, -1 none. */
int mirror_rank(const struct cmap *m, const char *mkey, size_t klen, int copies, const char *id);

/* failed: how many holders did not take the copy. */
typedef void (*mirror_done_fn)(void *arg, int failed);

/* Send the version of mkey held here (copied) to every other holder under
 * the current map; done on lp's loop once all answered (at once when the
 * bucket keeps one copy). urgent: a client waits. A failed send makes the
 * walk run again (reb_stray) so the copy is owed, not forgotten. */
void mirror_spread(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                   int urgent, mirror_done_fn done, void *arg);

#endif
