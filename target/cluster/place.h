/*
 * place: where an object's copies and slices go, from the bucket's
 * settings (the BMD) and a cluster map (place.c). Every layer that moves
 * or keeps objects asks it: a PUT's spread (mirror.h, ecode.h), the
 * rebalance walk (reb.h), transfers (xfer.h), scrubs and repairs. It only
 * decides: nothing here reads a drive or talks to another node.
 *
 * A mirrored bucket keeps full copies on the N best active targets by
 * HRW (cmap_holders), the owner first; an erasure-coded bucket keeps P+1
 * copies of its objects below objsize_limit and slices of the larger
 * ones; a bucket with copies beyond the targets keeps the rest on the
 * owner's other mountpaths (localcopy.h).
 *
 * Thread: any (the BMD and map are snapshots).
 */
#ifndef SHOAL_TARGET_PLACE_H
#define SHOAL_TARGET_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "cmap.h"

struct bmd_bucket;
struct bmd_ec;
struct target;

#define PLACE_ANY_SIZE UINT64_MAX

/* How many full copies of an object of size bytes the bucket of store
 * key mkey keeps: a mirrored bucket's copies; in an erasure-coded one P+1
 * below its objsize_limit, else 1 (the rest is slices, ecode.h); 1 when
 * the bucket is neither, or not in the BMD. PLACE_ANY_SIZE: how many of
 * the best targets may hold anything of the name (copies or slices), as
 * a delete's tombstone must reach. */
int place_copies(const char *mkey, size_t klen, uint64_t size);

/* The same for a bucket: its copies (P+1 in an erasure-coded one). */
int place_bucket_copies(const struct bmd_bucket *bk);

/* Does a write to the bucket of mkey go to other targets too (mirrored or
 * erasure coded)? */
int place_spreads(const char *mkey, size_t klen);

/* mkey's holders under m, the owner first, for a bucket of copies copies;
 * how many (0: the key is malformed or the map has no target). */
int place_holders(const struct cmap *m, const char *mkey, size_t klen, int copies,
                   const struct cmap_node **out);

/* The rank of target id among mkey's holders under m: 0 the owner,
 * 1..copies-1 a copy, -1 none. */
int place_rank(const struct cmap *m, const char *mkey, size_t klen, int copies, const char *id);

/* 1 and *ec when the bucket of store key mkey is erasure coded. */
int place_ec(const char *mkey, size_t klen, struct bmd_ec *ec);

/* How many copies of mkey (size bytes, PLACE_ANY_SIZE for a delete) this
 * target keeps on its other mountpaths under map m: the bucket's copies
 * that have no target, when this one is the owner, at most its other
 * mountpaths; 0 otherwise. */
int place_local_copies(const struct target *t, const struct cmap *m, const char *mkey, size_t klen,
               uint64_t size);

#endif
