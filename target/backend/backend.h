/*
 * backend: the target's client of remote buckets: S3 and S3-compatible
 * stores, Azure Blob Storage containers, and read-only HTTP origins
 * (backend.c, one table entry per kind). Each call runs on the
 * loop of the curlclient it is given and retries by itself; its callback fires
 * once, later, on that loop.
 */
#ifndef SHOAL_TARGET_BACKEND_H
#define SHOAL_TARGET_BACKEND_H

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "azreq.h"
#include "bmd.h"
#include "objmeta.h"
#include "s3list.h"
#include "s3req.h"

struct target;
struct curlclient;
struct curlclient_xfer;
struct curlclient_ops;

enum backend_kind { BK_NONE, BK_S3, BK_HTTP, BK_AZURE, BK_SHOAL };

/* Where a bucket's objects live remotely, resolved from the BMD. */
struct backend {
    enum backend_kind kind;
    char *label;                 /* "s3://bucket" or the origin URL, for messages */
    char *bucket;                /* S3 bucket, Azure container, another cluster's bucket */
    char *rprov;                 /* that bucket's provider there (shoal), or NULL */
    char *base_url;              /* HTTP origin, no trailing slash */
    struct s3_cfg s3;            /* BK_S3's, and BK_SHOAL's endpoint and keys */
    struct az_cfg az;            /* BK_AZURE's */
    int validate_warm_get;
    int write_back;              /* PUTs acknowledged once local, uploaded later (writeback.h) */
    int retries;                 /* attempts after the first */
    int timeout_s;               /* one request */
};

/* Fill b for a bucket; kind BK_NONE when it has no backend. */
void backend_resolve(const struct target *t, const struct bmd_bucket *bk, struct backend *b);
/* The same for bucket provider/name of the current BMD: 0, or -ENOENT
 * (b zeroed) when it has no such bucket. b is the caller's to free
 * (backend_free) either way. */
int backend_of(const struct target *t, const char *provider, const char *name,
               struct backend *b);
/* Can the backend take writes (PUT, DELETE), be listed, and be listed
 * from a name on (backend_list_after)? */
int backend_writable(const struct backend *b);
int backend_listable(const struct backend *b);
int backend_lists_by_name(const struct backend *b);
/* Does it take S3's multipart uploads (backendmpu.h)? Another cluster
 * takes a whole object in one streamed PUT of any size. */
int backend_multipart(const struct backend *b);
/* One listing page's body (backend_list's) parsed as its kind writes it. */
int backend_list_parse(const struct backend *b, const char *body, size_t len,
                       struct s3list *out, char *err, size_t errlen);

/* d becomes a copy of s that owns its own strings (backend_free it). */
void backend_copy(struct backend *d, const struct backend *s);
void backend_free(struct backend *b);

/* What a backend said about an object. */
struct backend_obj {
    int status;                  /* HTTP status; 0 when unreachable */
    char err[256];               /* why, when not 2xx */
    int64_t size;                /* -1 when unknown */
    char etag[OBJMETA_ETAG_MAX + 1];
    char version[OBJMETA_ETAG_MAX + 1];
    char last_modified[64];
};

typedef void (*backend_done_fn)(void *arg, const struct backend_obj *o);

/* HEAD, PUT (from fd, size bytes) and DELETE, each retried with backoff on
 * 5xx, throttling and connection errors; cb fires once on the loop. */
void backend_head(struct curlclient *cli, const struct backend *b, const char *key,
                  backend_done_fn cb, void *arg);
void backend_put(struct curlclient *cli, const struct backend *b, const char *key, int fd,
                 int64_t size, backend_done_fn cb, void *arg);
void backend_delete(struct curlclient *cli, const struct backend *b, const char *key,
                    backend_done_fn cb, void *arg);
/* One listing page (at most limit keys) after token (ListObjectsV2, or
 * Azure's List Blobs); cb gets the outcome and the raw XML body, for
 * backend_list_parse. */
typedef void (*backend_list_fn)(void *arg, const struct backend_obj *o, const char *body,
                                size_t len);
void backend_list(struct curlclient *cli, const struct backend *b, const char *prefix,
                  const char *token, int limit, backend_list_fn cb, void *arg);
/* The same from the names after `after` (S3's StartAfter) instead of a
 * token (where backend_lists_by_name: Azure's markers are opaque). */
void backend_list_after(struct curlclient *cli, const struct backend *b, const char *prefix,
                        const char *after, int limit, backend_list_fn cb, void *arg);
/* A request of backend_call's: method key?query, with a body of size
 * bytes of fd from off (fd >= 0), or mem_len bytes of mem, or none (fd
 * -1, mem NULL). */
struct backend_req {
    const char *method;
    const char *key;
    const char *query;           /* "" for none */
    int fd;
    int64_t off, size;
    const char *mem;             /* copied by backend_call */
    size_t mem_len;
};
/* Any request with its answer's body (retried like the others); cb gets
 * the outcome and the body (at most S3LIST_MAX_DOC bytes of it). */
void backend_call(struct curlclient *cli, const struct backend *b, const struct backend_req *rq,
                  backend_list_fn cb, void *arg);
/* URL and signed header lines of a GET (for the streaming fetch), with
 * range (a Range header's value, signed where the kind signs it) or NULL. */
void backend_get_req(const struct backend *b, const char *key, const char *range,
                     struct s3_req *out);
/* That GET started on cli (redirects followed where the kind has them):
 * curlclient_start's transfer. */
struct curlclient_xfer *backend_get_start(struct curlclient *cli, const struct backend *b,
                                          const char *key, const char *range,
                                          const struct curlclient_ops *ops, void *arg);
/* Fill o from a finished exchange's headers. */
void backend_obj_from(struct backend_obj *o, struct curlclient_xfer *x, int status,
                      const char *err);
/* What an error body says, as b's kind writes it: S3's and Azure's
 * <Code>, another cluster's "error" ("" when there is none). */
void backend_err_code(const struct backend *b, const char *body, char *out, size_t n);
/* The client status for a backend failure, and a message naming it. */
int backend_status(const struct backend *b, const struct backend_obj *o, char *msg, size_t len);
/* Is this failure worth another attempt. */
int backend_retryable(int status);
/* Arm *timer (made on cli's loop at first use; its owner event_frees it)
 * to call fn(arg) after attempt n's backoff (n 1-based, growing
 * exponentially); returns the delay in milliseconds. */
int backend_retry_later(struct curlclient *cli, int attempt, struct event **timer,
                        event_callback_fn fn, void *arg);

#endif
