/*
 * localcopy: a mirrored bucket's copies on the owner's other mountpaths
 * (localcopy.c). When the map has fewer active targets than the bucket's
 * copies (a one-target cluster, above all), the owner keeps the copies
 * that have no target on its other drives: under the key 'c' + the
 * object's key after its first byte, in those mountpaths' RocksDB, each
 * with the object's record and its own data file. They are made when a
 * write is spread (mirror.h) and by the walk, dropped once the targets
 * are enough, with the object (delete, eviction, a send to its new owner,
 * the bucket's purge), and a damaged copy of the object is restored from
 * them before any other target is asked.
 *
 * Thread: the I/O pool (the _work functions), completions on the loop.
 */
#ifndef SHOAL_TARGET_LOCALCOPY_H
#define SHOAL_TARGET_LOCALCOPY_H

#include <stddef.h>
#include <stdint.h>

struct cmap;
struct objmeta;
struct store;
struct target;
struct xfer_loop;

/* Make want copies of the version held here on the mountpaths after its
 * own, and drop the other copies of mkey here that are no newer; want
 * LOCALCOPY_DELETED: only drop those no newer than the name's tombstone here.
 * done(arg, failed) on lp's loop. Nothing is dropped while the object's
 * record cannot be read. */
#define LOCALCOPY_DELETED (-1)
void localcopy_sync(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                    int want, void (*done)(void *arg, int failed), void *arg);

/* The newest good local copy, of version since or newer, becomes the
 * object again (its version kept); done(arg, 0), -ENOENT when no copy
 * here is good (a bad one is dropped), or the error that stopped it. */
void localcopy_restore(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                       uint64_t since, void (*done)(void *arg, int rc), void *arg);

/* Drop every local copy of mkey (I/O pool). */
void localcopy_drop(struct store *st, const char *mkey, size_t klen);

#endif
