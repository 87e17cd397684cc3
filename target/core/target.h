/*
 * target: the daemon's context, and what several of its handlers share.
 *
 * Every handler module of shoal-target (get, put, del, list, cold, mpu,
 * subres, obj, s3root) includes this file; none calls back into main.c,
 * which only lists the routes and starts the daemon. What more than one
 * handler needs lives here (target.c): the worker's backend client,
 * whether a request is answered the S3 way, the headers that describe an
 * object, and the S3 rules for the metadata and tags a request carries.
 * Store errors (-errno) become HTTP statuses through common/err.h.
 *
 * The module headers, one per concern:
 *   backend.h  the client of remote buckets (S3, HTTP origins)
 *   fetch.h    backend -> store, one fetch per object, no client needed
 *   cold.h     GET/HEAD in backed buckets: warm, or cold over a fetch
 *   get.h      GET/HEAD from the drives (conditions, ranges)
 *   put.h      PUT, CopyObject, and the upload of a multipart part
 *   del.h      DELETE (through the backend when the bucket has one)
 *   mpu.h      S3 multipart uploads
 *   subres.h   S3 object subresources (?tagging, ?acl, 501 for the rest)
 *   obj.h      /v1/objects/: authentication, ownership, dispatch
 *   s3root.h   S3 requests at the root ("/BUCKET/KEY")
 *   list.h     listing pages for the proxy (local, and a backend's)
 *   purge.h    objects of destroyed buckets removed
 *   store.h, objmeta.h  the mountpaths and the metadata record
 */
#ifndef SHOAL_TARGET_H
#define SHOAL_TARGET_H

#include <jansson.h>

#include "authz.h"
#include "azreq.h"
#include "config.h"
#include "node.h"
#include "s3ck.h"
#include "objmeta.h"
#include "s3req.h"
#include "store.h"

struct event;
struct gbuf;
struct http_req;
struct curlclient;
struct iopool;

struct target;
struct xfer_loop;

/* What the layers above answer for the layers below them (space,
 * cluster): each hook is a higher layer's call, set by main.c before the
 * server runs, so that no lower layer includes a higher one's header. */
struct target_hooks {
    /* backend (writeback_owed): is an upload of mkey still owed? I/O pool. */
    int (*owed)(struct store *s, const char *mkey, size_t klen);
    /* redundancy (localcopy_drop): drop every local copy of mkey. I/O pool. */
    void (*drop_local_copies)(struct store *st, const char *mkey, size_t klen);
    /* redundancy (localcopy_sync): make want local copies of mkey, drop the
     * older; done on lp's loop. */
    void (*sync_local_copies)(struct target *t, const struct xfer_loop *lp, const char *mkey,
                              size_t klen, int want, void (*done)(void *arg, int failed),
                              void *arg);
    /* redundancy (slice_drop_older): drop mkey's slices held here older
     * than version. I/O pool. */
    void (*drop_older_slices)(struct store *st, const char *mkey, size_t klen,
                              uint64_t version);
    /* redundancy (ecode_ensure): every slice holder of mkey has its slice;
     * done on lp's loop. */
    void (*ensure_slices)(struct target *t, const struct xfer_loop *lp, const char *mkey,
                          size_t klen, void (*done)(void *arg, int failed), void *arg);
    /* redundancy (ecode_walk_slice): the rebalance walk's turn on slice
     * key skey held here; done(arg, 0 or -errno) on lp's loop. */
    void (*walk_slice)(struct target *t, const struct xfer_loop *lp, const char *skey,
                       size_t sklen, void (*done)(void *arg, int rc), void *arg);
};

struct target {
    struct node node;            /* first: see struct node */
    const struct target_hooks *hooks;   /* main.c's */
    struct conf conf;
    struct store store;
    struct iopool *io;
    struct s3_cfg s3;            /* node-wide S3 defaults */
    struct az_cfg az;            /* node-wide Azure defaults (the environment's) */
    /* the subsystems' own state, each made by its start function and
     * known here only by name */
    struct scrub_sched *scrub;   /* scrub.c: the schedule */
    struct resilver *resilver;   /* mpath.c: objects moved between mountpaths */
    struct space *space;         /* space.c: the sampler (atomic: read by any thread) */
    struct lru *lru;             /* lru.c: the eviction job's */
    struct writeback *wbq;       /* writeback.c: the write-back uploader */
    struct reb *reb;             /* reb.c: rebalance (atomic: read by any thread) */
};

/* A worker's own state (w->local), made and dropped on its thread. */
struct target_worker {
    struct curlclient *cli;      /* remote backends (libcurl) */
    struct nodeclient *hc;       /* other nodes (common/nodeclient.h) */
    struct event *sweeper;       /* its warm-read cache's (ocache.h) */
};

/* The worker's backend client and its client for other nodes; r's loop. */
struct curlclient *target_cli(struct http_req *r);
struct nodeclient *target_hc(struct http_req *r);

/* Is r answered the S3 way (the proxy forwarded it from its S3 API, or it
 * came to the S3 root)? */
int target_is_s3(const struct http_req *r);

/* ETag, checksum, version, Last-Modified, user metadata of an object, and
 * in S3 mode its tag count (and its tags, when r asks for them with
 * COPY_TAGS_HEADER: a copy's source); S3's checksum (x-amz-checksum-*)
 * in a PUT's answer, and in a whole GET's or HEAD's that asks for it
 * (x-amz-checksum-mode: ENABLED). */
void target_meta_headers(struct http_req *r, const struct objmeta *m);
/* x-amz-version-id: vid, unless NULL, or "null" on the answer to a write. */
void target_vid_header(struct http_req *r, const char *vid);
/* S3's checksum of an object (s3ck.h) is kept among its metadata, named
 * ":" + its header: target_keep_checksum adds it (0 or -E2BIG),
 * target_checksum_of finds it (NULL: none). */
int target_keep_checksum(struct objmeta *m, enum s3ck_alg alg, const char *value);
const char *target_checksum_of(const struct objmeta *m, enum s3ck_alg *alg);
/* ... as x-amz-checksum-<alg> and x-amz-checksum-type; nothing when
 * there is none. */
void target_checksum_headers(struct http_req *r, const struct objmeta *m);
/* An object's ACL (s3acl.h), kept among its metadata: its grants (new;
 * owner: the object's, or NULL), and a change of them (NULL or the
 * owner's private: kept as none; 0, or -E2BIG when it does not fit). */
json_t *target_acl(const struct objmeta *m, const char *owner);
int target_set_acl(struct objmeta *m, const json_t *grants, const char *owner);
/* The object's owner: the key that wrote it when that made it its own
 * (s3own_object_owner), else its bucket's (props; NULL: none). */
const char *target_object_owner(const struct objmeta *m, const json_t *props);
/* m's user metadata and kept headers dropped, its ACL and owner kept (a
 * copy that takes its source's metadata). 0, or -E2BIG. */
int target_meta_reset(struct objmeta *m);
/* Who writes r: its signer, or the writer a proxy names under its
 * signature (s3own.h: S3OWN_WRITER); NULL: unsigned, an admin key (which
 * writes for the bucket's owner), or not named. */
const char *target_writer(const struct http_req *r, char *buf, size_t n);
/* Does the object's ACL let who (an access key; NULL: unsigned) do op
 * (authz.h) in a bucket with properties props? */
int target_acl_allows(const struct objmeta *m, const json_t *props, const char *who,
                      enum authz_op op);
/* Who a proxy names for the object's ACL to decide (s3own.h: S3OWN_WHO):
 * 1 with who (NULL: an unsigned request, or a name too long for buf or
 * malformed, which no key has; else into buf), 0 when r names none (the
 * proxy decided). */
int target_routed_who(const struct http_req *r, char *buf, size_t n, const char **who);
/* Does the object at mkey (record m) let r: yes when r names no one for
 * its ACL to decide, else by its ACL (the current BMD's bucket). */
int target_routed_allows(const struct http_req *r, const char *mkey, const struct objmeta *m);
/* ... as the elements of a copy's or a completion's XML answer. */
void target_checksum_xml(struct gbuf *b, const struct objmeta *m);

/* S3 mode: a request's x-amz-meta-* into m (names lower-cased; empty
 * values kept), and the standard headers S3 keeps with an object
 * (Cache-Control, Content-Disposition, Content-Encoding without
 * aws-chunked, Content-Language, Expires), and the ACL the request asks
 * for (x-amz-acl, x-amz-grant-*) in a bucket with properties props. 0, or
 * the status of the error answered: 400 MetadataTooLarge past S3's 2 KiB
 * of user metadata, 400 for a malformed ACL, 403 for a public one the
 * bucket's PublicAccessBlock refuses. */
int target_s3_meta(struct http_req *r, struct objmeta *m, const json_t *props);

/* A write's If-None-Match ("*": no object there, or ETags the one there
 * must not have) and If-Match (ETags it must have, or "*"), on the S3 and
 * the native API alike, into x for the commit to check (store.h); a bucket
 * with a backend checks them first (condcheck.h). _clear frees them. */
struct store_x;
void target_write_conditions(struct http_req *r, struct store_x *x);
void target_conditions_clear(struct store_x *x);

/* A commit's rc that says x's condition did not hold, or could not be
 * checked yet: answered (412 PreconditionFailed, 404 NoSuchKey for
 * If-Match on no object, 503 while objects move), 1; else 0. */
int target_write_refused(struct http_req *r, const struct store_x *x, int rc);

/* One of those standard headers, name: value, into m (a copy's source's).
 * 0 (a header that is not one of them, or an empty Content-Encoding once
 * aws-chunked is gone, is skipped), or -E2BIG. */
int target_keep_header(struct objmeta *m, const char *name, const char *value);
/* S3 mode: a request's x-amz-tagging into m's tags. 0, or 400 answered
 * (InvalidTag, InvalidArgument). */
int target_s3_tags(struct http_req *r, struct objmeta *m);

#endif
