/*
 * shoal-target internals shared by its files: the daemon context, the
 * backend client (backend.c) and cold/warm GET (cold.c).
 */
#ifndef SHOAL_TARGET_H
#define SHOAL_TARGET_H

#include <stdint.h>

#include "bmd.h"
#include "config.h"
#include "node.h"
#include "ometa.h"
#include "s3auth.h"
#include "s3req.h"
#include "store.h"

struct http_req;
struct hcli;
struct iopool;

struct target {
    struct node node;            /* first: see struct node */
    struct conf conf;
    struct store store;
    struct iopool *io;
    struct s3_cfg s3;            /* node-wide S3 defaults */
};

/* ---- backend.c --------------------------------------------------------- */

enum backend_kind { BK_NONE, BK_S3, BK_HTTP };

/* Where a bucket's objects live remotely, resolved from the BMD. */
struct backend {
    enum backend_kind kind;
    char *label;                 /* "s3://bucket" or the origin URL, for messages */
    char *bucket;                /* S3 bucket */
    char *base_url;              /* HTTP origin, no trailing slash */
    struct s3_cfg s3;
    int validate_warm_get;
    int retries;                 /* attempts after the first */
    int timeout_s;               /* one request */
};

/* Fill b for a bucket; kind BK_NONE when it has no backend. */
void backend_resolve(const struct target *t, const struct bmd_bucket *bk, struct backend *b);
void backend_free(struct backend *b);

/* What a backend said about an object. */
struct backend_obj {
    int status;                  /* HTTP status; 0 when unreachable */
    char err[256];               /* why, when not 2xx */
    int64_t size;                /* -1 when unknown */
    char etag[OMETA_ETAG_MAX + 1];
    char version[OMETA_ETAG_MAX + 1];
    char last_modified[64];
};

typedef void (*backend_done_fn)(void *arg, const struct backend_obj *o);

/* The worker's client (the target's per-worker state). */
struct hcli *target_cli(struct http_req *r);

/* HEAD, PUT (from fd, size bytes) and DELETE, each retried with backoff on
 * 5xx, throttling and connection errors; cb fires once on the loop. */
void backend_head(struct hcli *cli, const struct backend *b, const char *key,
                  backend_done_fn cb, void *arg);
void backend_put(struct hcli *cli, const struct backend *b, const char *key, int fd,
                 int64_t size, backend_done_fn cb, void *arg);
void backend_delete(struct hcli *cli, const struct backend *b, const char *key,
                    backend_done_fn cb, void *arg);
/* ListObjectsV2: one page (at most limit keys) after token; cb gets the
 * outcome and the raw XML body. */
typedef void (*backend_list_fn)(void *arg, const struct backend_obj *o, const char *body,
                                size_t len);
void backend_list(struct hcli *cli, const struct backend *b, const char *prefix,
                  const char *token, int limit, backend_list_fn cb, void *arg);
/* URL and signed header lines of a GET (for the streaming cold path). */
void backend_get_req(const struct backend *b, const char *key, struct s3_req *out);
/* Fill o from a finished exchange's headers. */
struct hcli_xfer;
void backend_obj_from(struct backend_obj *o, struct hcli_xfer *x, int status, const char *err);
/* The client status for a backend failure, and a message naming it. */
int backend_status(const struct backend *b, const struct backend_obj *o, char *msg, size_t len);
/* Is this failure worth another attempt. */
int backend_retryable(int status);
/* Delay before attempt n (1-based), milliseconds. */
int backend_backoff_ms(int attempt);

/* ---- cold.c -------------------------------------------------------------- */

/* GET/HEAD of an object in a bucket with a backend: warm from the drives,
 * cold through the backend with one fetch per object. Takes mkey. */
void cold_get(struct target *t, struct http_req *r, const struct bmd_bucket *bk, char *mkey,
              size_t klen, const char *name);

/* Object GET from the drives; shared by the plain and the backed paths.
 * cache is the X-Shoal-Cache value ("hit" or NULL to omit). */
void target_serve_local(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                        const char *cache);

/* ---- main.c ------------------------------------------------------------ */

/* The HTTP status for a store error (-errno). */
int target_errno_status(int rc);
/* Is r answered the S3 way (the proxy forwarded it from its S3 API)? */
int target_is_s3(const struct http_req *r);
/* ETag, checksum, version, Last-Modified, user metadata of an object. */
void target_meta_headers(struct http_req *r, const struct ometa *m);

/* ---- put.c ------------------------------------------------------------- */

struct put_part {
    char upload[40];             /* the multipart upload's id */
    int num;                     /* 1..10000; 0: not a part */
};

/* Take r's body as the object (or as a part of a multipart upload, with
 * part != NULL) named mkey (takes it; klen bytes) in bucket bk; answers r. */
void target_put(struct target *t, struct http_req *r, const char *name,
                const struct bmd_bucket *bk, char *mkey, size_t klen,
                const struct put_part *part);

/* S3 mode: a request's x-amz-meta-* into m (names lower-cased). 0, or
 * 400 answered (MetadataTooLarge) when they exceed OMETA_UMETA_MAX. */
int target_s3_meta(struct http_req *r, struct ometa *m);
/* S3 mode: a request's x-amz-tagging into m's tags. 0, or 400 answered
 * (InvalidTag, InvalidArgument). */
int target_s3_tags(struct http_req *r, struct ometa *m);

/* ---- s3sub.c ----------------------------------------------------------- */

/* S3 subresource requests on an object (?tagging, ?acl, ...): served, or
 * answered 501 NotImplemented; never the plain operation. Returns 1 if it
 * took r (and mkey), 0 if r names no subresource. */
int s3sub_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                 const char *name, char *mkey, size_t klen);
/* S3 mode: an object's headers from its tags (for target_meta_headers):
 * x-amz-tagging-count, and the tags themselves (COPY_TAGS_HEADER) when r
 * asks for them (a copy's source). */
void s3sub_meta_headers(struct http_req *r, const struct ometa *m);

/* ---- mpu.c ------------------------------------------------------------- */

/* S3 multipart requests on an object (the query names uploads or
 * uploadId). Returns 1 if it took r (and mkey), 0 if r is not one. */
int mpu_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
               const char *name, char *mkey, size_t klen);
/* I/O pool: make a finished work file part `part` of its upload; closes
 * fd. 0 or -errno (-ENOENT: the upload is gone). */
int mpu_part_commit(struct target *t, struct store_mp *mp, const struct put_part *part,
                    const char *work, int fd, const struct ometa *m);
/* The uploads in progress of a bucket, for the proxy's merge. */
void mpu_list_handle(struct target *t, struct http_req *r);

#endif
