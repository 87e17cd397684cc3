/*
 * xfer: an object, or the tombstone of a deleted one, sent from this
 * target to another with its version (xfer.c). Rebalance moves what a
 * target no longer owns this way, and get-from-neighbor asks a peer for a
 * name the same way; the receiver keeps it only if newer than what it has
 * (store_x.keep_version), so copies meeting in any order end at the
 * newest.
 *
 * Internal routes, behind the cluster signature:
 *   PUT    /v1/internal/xfer/BUCKET/NAME?provider=P&meta=N[&dirty=1]
 *          the body is the object's metadata record (N bytes, objmeta.h)
 *          then its bytes; checked against the record's size and
 *          checksum before the commit. 201 kept, 200 what is here is as
 *          new or newer. dirty: still owed to the bucket's write-back
 *          backend (the obligation moves with it, writeback.h).
 *   DELETE /v1/internal/xfer/BUCKET/NAME?provider=P&version=V
 *          a tombstone: 204 applied, 200 what is here is as new or newer.
 *   GET    /v1/internal/xfer/BUCKET/NAME?provider=P&newer=V
 *          the object's record (X-Shoal-Meta-Len bytes) then its bytes, if
 *          newer than V; else 204 (a neighbour relays them: neighbour.h).
 *          With &held=V instead: {"held": is V or newer here}, which a
 *          sender asks when its upload broke (an early answer closes).
 *   POST   /v1/internal/xfer/BUCKET/NAME?provider=P&newer=V&to=ID
 *          send the name to target ID if what is here (object or
 *          tombstone) is newer than V; answered once sent:
 *          {"sent": "object" | "tomb" | "none"}.
 *
 * Every route carries &bmd=V, the sender's bucket metadata version: a
 * receiver that does not know the bucket and is behind V (it has just
 * joined; its copy is on the way) answers 503, and a send asks again a
 * few times over about seven seconds; one that is not behind answers 404.
 *
 * A sent object is dropped here once the receiver has it, if the
 * receiver owns the name under the map of that moment; a receiver that
 * does not (it asked with an older map, or a send crossed a map change)
 * walks again to send it on.
 *
 * Thread: a send runs on the loop it was started on; store work on the
 * I/O pool.
 */
#ifndef SHOAL_TARGET_XFER_H
#define SHOAL_TARGET_XFER_H

#include <stddef.h>
#include <stdint.h>

struct bmd;
struct bmd_bucket;
struct event_base;
struct nodeclient_xfer;
struct objmeta;
struct nodeclient;
struct http_req;
struct loopq;
struct target;

enum xfer_what { XFER_NONE, XFER_OBJECT, XFER_TOMB };

/* rc 0 (what was sent, bytes its size) or -errno: -ENOENT nothing here
 * newer than asked, else the send failed. busy: the receiver is serving
 * clients (its answer said so: X-Shoal-Busy), so background sends should
 * go easy on it. */
typedef void (*xfer_done_fn)(void *arg, int rc, enum xfer_what what, uint64_t bytes, int busy);

/* The loop a send runs on and its client of other nodes. */
struct xfer_loop {
    struct event_base *base;
    struct loopq *q;
    struct nodeclient *hc;
};

/* Send the name mkey (klen bytes; copied) as held here, if newer than
 * min_version, to the target at url; done on the loop, later. urgent: a
 * client waits for it (get-from-neighbor): its store work on both sides
 * goes ahead of queued work. */
void xfer_send(struct target *t, const struct xfer_loop *lp, const char *url, const char *mkey,
               size_t klen, uint64_t min_version, int urgent, xfer_done_fn done, void *arg);

/* The internal routes above (rest: "BUCKET/NAME"). */
void xfer_handle(struct http_req *r, const char *rest, size_t rlen);

/* The signed URL of mkey's /v1/internal/xfer endpoint at the target at
 * base, for method, with query (after "provider=P&"); a new string. */
char *xfer_url(struct target *t, const char *method, const char *base, const char *mkey,
               size_t klen, const char *query);
/* Answer r 200 with record m (X-Shoal-Meta-Len bytes) and then m->size
 * bytes of fd (taken), as a neighbour's copy or slice is served. */
void xfer_reply_record(struct http_req *r, const struct objmeta *m, int fd);
/* The record length such an answer (status) announces: 1..OBJMETA_MAX, or
 * 0 when it is not one. */
size_t xfer_record_len(struct nodeclient_xfer *x, int status);
/* Does r name, in its query parameter param, bucket metadata newer than
 * this target's version mine? *theirs: that version. A target that does
 * not know the bucket then answers 503 (it has just joined, and its copy
 * is on the way), not 404. */
int xfer_bmd_behind(struct http_req *r, const char *param, long long mine, uint64_t *theirs);

/* Take the part of a body that belongs to its leading metadata record:
 * up to len - *got bytes of *d (n bytes) into meta, moving *d and *n on.
 * 1 once the record is whole. */
int xfer_meta_take(char *meta, size_t len, size_t *got, const char **d, size_t *n);

/* The placement key of the object with store key mkey (node_obj_key's
 * "provider/bucket/name"), *len bytes and a NUL; NULL for a malformed key. */
char *xfer_place_key(const char *mkey, size_t klen, size_t *len);
/* The bucket of store key mkey in the current BMD, or NULL; *hold is set
 * to that BMD, for bmd_unref once the bucket is no longer used. */
const struct bmd_bucket *xfer_key_bucket(const char *mkey, size_t klen, struct bmd **hold);
/* A copy of store key mkey (klen bytes) with a NUL after it. */
char *xfer_key_dup(const char *mkey, size_t klen);
/* A store key as people read it, "provider/bucket/name" (a new string). */
char *xfer_key_show(const char *mkey, size_t klen);
/* provider, bucket and name of a store key (pointers into it; the name
 * is not NUL-terminated: nlen bytes). 0 or -1. */
int xfer_key_parts(const char *mkey, size_t klen, const char **provider, const char **bucket,
                   const char **name, size_t *nlen);

#endif
