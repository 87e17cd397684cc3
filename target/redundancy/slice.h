/*
 * slice: the slices of erasure-coded objects, kept and moved between
 * targets (slice.c; the coding and placement are ecode.h's).
 *
 * A slice is kept under its own store key: 's', the object's key after
 * its first byte, a NUL and the slice's index + 1. Its record is the
 * slice's size and checksum with the object's version, ETag and metadata,
 * and (objmeta.ec) the code, the index and the object's size and checksum;
 * its data file holds the slice's bytes (a data slice past the object's
 * end is shorter: the rest are zeros). Slices never show in listings.
 *
 * Internal routes, behind the cluster signature:
 *   PUT    /v1/internal/slice/BUCKET/NAME?provider=P&idx=I&meta=N&version=V
 *          the body is the slice's record (N bytes) then its bytes,
 *          checked against the record before the commit: 201 kept, 200
 *          what is here is as new or newer (answered before the body).
 *   GET    /v1/internal/slice/BUCKET/NAME?provider=P&idx=I (or &any=1)
 *          the record (X-Shoal-Meta-Len bytes) then the bytes; 404 when
 *          this target has no such slice newer than the name's delete.
 *   DELETE /v1/internal/slice/BUCKET/NAME?provider=P&version=V
 *          every slice of the name older than V goes: 204.
 *   POST   /v1/internal/slice/BUCKET/NAME?provider=P
 *          (to the name's owner) every holder gets its slice of the version
 *          held here if it lacks it (ecode_ensure): 200, or 503 when one
 *          did not take it. A scrub that dropped a damaged slice asks so.
 *   GET    ...&idx=I&held=V&d=D&p=P
 *          {"held": this target has slice I as new as V, of that code, whole}
 *
 * Thread: sends and fetches run on the loop given; store work on the I/O
 * pool.
 */
#ifndef SHOAL_TARGET_SLICE_H
#define SHOAL_TARGET_SLICE_H

#include <stddef.h>
#include <stdint.h>

struct http_req;
struct objmeta;
struct store;
struct target;
struct xfer_loop;

#define SLICE_MAX 24             /* data + parity slices, at most */

/* The store key of slice idx of the object with store key mkey (klen
 * bytes): a new NUL-ended string of *sklen bytes. */
char *slice_key(const char *mkey, size_t klen, int idx, size_t *sklen);
/* The object's store key of a slice key (a new string, *klen bytes) and
 * the index; NULL when skey is not one. */
char *slice_obj_key(const char *skey, size_t sklen, size_t *klen, int *idx);

/* rc 0 (the receiver has it, or as new) or -errno. */
typedef void (*slice_done_fn)(void *arg, int rc);

/* Send slice rec->ec.idx of mkey (record rec) to the target at url: its
 * rec->size bytes are fd's from off (fd is taken and closed). done on
 * lp's loop, later. */
void slice_send(struct target *t, const struct xfer_loop *lp, const char *url, const char *mkey,
                size_t klen, const struct objmeta *rec, int fd, uint64_t off, slice_done_fn done,
                void *arg);

/* rc 0 with the slice's bytes (checked against rec): in mem, rec->size
 * bytes the callee takes (malloc'd; fd -1, path NULL), or in a work file
 * fd open at path; or -errno (-ENOENT: the target has none). */
typedef void (*slice_got_fn)(void *arg, int rc, int fd, const char *path, char *mem,
                             const struct objmeta *rec);

#define SLICE_MEM_MAX (4u << 20)  /* a fetched slice up to this size is kept in memory */

/* Fetch slice idx of mkey (-1: whichever it holds) from the target at url
 * into memory (up to SLICE_MEM_MAX) or a work file of this target. done on
 * lp's loop, later. */
void slice_fetch(struct target *t, const struct xfer_loop *lp, const char *url, const char *mkey,
                 size_t klen, int idx, slice_got_fn done, void *arg);

/* Does the target at url hold slice idx of mkey as new as version, of the
 * code (d, p), whole? done(arg, held) on lp's loop, later; 0 when it could
 * not say. */
void slice_ask_held(struct target *t, const struct xfer_loop *lp, const char *url,
                    const char *mkey, size_t klen, int idx, uint64_t version, int d, int p,
                    void (*done)(void *arg, int held), void *arg);

/* Drop the slices of mkey held here older than version (I/O pool). */
void slice_drop_older(struct store *st, const char *mkey, size_t klen, uint64_t version);

/* Ask the owner at url to make sure every slice of mkey is there (POST
 * above); done(arg, 0) or -EIO on lp's loop, later. */
void slice_ask_ensure(struct target *t, const struct xfer_loop *lp, const char *url,
                      const char *mkey, size_t klen, void (*done)(void *arg, int rc),
                      void *arg);

/* The internal routes above (rest: "BUCKET/NAME"). */
void slice_handle(struct http_req *r, const char *rest, size_t rlen);

#endif
