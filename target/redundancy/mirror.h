/*
 * mirror: n-way mirroring (mirror.c). A bucket with the property
 * mirror {"copies": N} keeps full copies of each object on the N best
 * active targets by HRW (cmap_holders): the owner, which serves GETs, and
 * the next N-1 (an erasure-coded bucket's small objects too: P+1). The owner's PUT sends the new version to the others
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

struct bmd_bucket;
struct ecstream_out;
struct target;
struct xfer_loop;


/* failed: how many holders did not take the copy. */
typedef void (*mirror_done_fn)(void *arg, int failed);

/* Send the version of mkey held here (copied), an object of size bytes or
 * (PLACE_ANY_SIZE) a delete's tombstone, to every other holder under the
 * current map, or slice it (urgent: ecode_spread, else ecode_ensure);
 * done on lp's loop once all answered (at once when the bucket keeps one
 * copy). urgent: a client waits. A failed send makes the walk run again
 * (reb_stray) so the copy is owed, not forgotten. */
void mirror_spread(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                   uint64_t size, int urgent, mirror_done_fn done, void *arg);

/* The same with the parity a PUT coded as it arrived (ecode_stream; NULL:
 * none), taken: used if the version is still sliced with that code. */
void mirror_spread_coded(struct target *t, const struct xfer_loop *lp, const char *mkey,
                         size_t klen, uint64_t size, int urgent, struct ecstream_out *coded,
                         mirror_done_fn done, void *arg);

#endif
