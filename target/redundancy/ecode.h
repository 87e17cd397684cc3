/*
 * ecode: erasure-coded buckets (ecode.c). A bucket with the property
 * ec {"data": D, "parity": P, "objsize_limit": L} keeps each object of L
 * bytes or more whole on its owner, for fast reads, and as D data and P
 * parity slices (ec/, a Cauchy Reed-Solomon code) on the D+P targets
 * after the owner in HRW order, one slice each (slice.h). A smaller object
 * gets P full copies instead (as a mirrored bucket's: mirror.h).
 *
 * A client's PUT of a known length is coded as its body arrives
 * (ecstream.h: ecode_stream); any other slicing reads the committed
 * object back from its file in turns of a MiB per slice. Either way no
 * object is held whole in memory, the parity goes to work files, and
 * every slice is sent, the data ones straight from the object's file. A read whose whole copy is lost or damaged, on the owner
 * or on the target that owns the name after the owner is lost, gathers D
 * slices from the targets that may hold them, rebuilds the object into a
 * work file, checks it against the object's checksum and commits it
 * before serving it.
 *
 * Thread: the loop given; coding and file work on the I/O pool.
 */
#ifndef SHOAL_TARGET_ECODE_H
#define SHOAL_TARGET_ECODE_H

#include <stddef.h>
#include <stdint.h>

struct bmd_ec;
struct ecstream;
struct ecstream_out;
struct objmeta;
struct store_mp;
struct target;
struct xfer_loop;

/* failed: how many slices were not taken (owed: reb_stray walks again). */
typedef void (*ecode_done_fn)(void *arg, int failed);

/* A coder for the body of a new version of mkey, of size bytes, being
 * written to work file fd (uid) on mp, when the bucket slices objects of
 * that size; NULL when it does not (or the parity files cannot be made:
 * the commit's slicing codes it then). */
struct ecstream *ecode_stream(struct store_mp *mp, int fd, uint64_t uid, const char *mkey,
                              size_t klen, uint64_t size);

/* Slice the version of mkey held here (owned) and send its slices to
 * their holders under the current map; done on lp's loop. coded (NULL:
 * none; taken): the parity of that version, coded as it arrived, used
 * when it is still the version here and its code the bucket's. */
void ecode_spread(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                  struct ecstream_out *coded, ecode_done_fn done, void *arg);

/* The same when some holder lacks its slice of the version held here (or
 * holds one of another code): first asks each (the rebalance walk, and
 * ec-encode jobs, for objects sliced already). */
void ecode_ensure(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                  ecode_done_fn done, void *arg);

/* rc 0: the object is whole here again; -ENOENT: no slice of it anywhere
 * asked; -EIO: fewer slices than it takes, or the rebuilt bytes failed
 * the object's checksum. */
typedef void (*ecode_built_fn)(void *arg, int rc);

/* Rebuild mkey here from its slices; done on lp's loop. */
void ecode_rebuild(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                   ecode_built_fn done, void *arg);

/* The rebuilt bytes, checked against the object's checksum and not yet
 * committed: fd (the caller's to close) holds exactly m->size of them,
 * m their record as it will be committed. */
typedef void (*ecode_serve_fn)(void *arg, int fd, struct objmeta *m);

/* ecode_rebuild for a reader waiting on it: serve(arg, ...) on lp's loop
 * as soon as the bytes are rebuilt and checked, while they are committed
 * (their file synced, then named); done(arg, rc) once that is over. When
 * they could not be rebuilt, or no descriptor could be had for them,
 * serve is not called and done says why, after the commit if there was
 * one. */
void ecode_rebuild_serving(struct target *t, const struct xfer_loop *lp, const char *mkey,
                           size_t klen, ecode_serve_fn serve, ecode_built_fn done, void *arg);

/* The rebalance walk's turn on slice key skey held here: send it to the
 * target that holds that slice under the current map and drop it here;
 * or, on the name's owner without the whole object, rebuild and slice it
 * again. done(arg, 0) or a negative errno, on lp's loop. */
void ecode_walk_slice(struct target *t, const struct xfer_loop *lp, const char *skey,
                      size_t sklen, ecode_built_fn done, void *arg);

#endif
