/*
 * batchreq: a GetBatch request (POST /v1/batch), parsed and checked:
 *
 *   {"entries": [{"bucket": B, "provider": P?, "name": N, "archpath": A?,
 *                 "start": S?, "length": L?, "transform": T?, "args": A?}, ...],
 *    "output": ".tar" | ".tar.gz" | ".tgz" | ".zip",
 *    "continue_on_error": bool, "names": "with-bucket" | "name-only" | "member-only",
 *    "manifest": bool}
 *
 * Refused, with a message for a 400: anything but that shape, no entry
 * or more than BATCHREQ_MAX, a bucket or name that is empty, over
 * BATCHREQ_NAME_MAX bytes or holds a NUL, an archpath archidx would not
 * take, a start or length that is negative or past 2^62, a transform
 * that is not a transform's name or that comes with a start or length
 * (a range of a transformed entry is not served), args without a
 * transform or that xform_args_ok refuses, an unknown
 * output or names, an unknown key (a typo must not be ignored).
 *
 * Thread: any; a parsed request is read-only.
 */
#ifndef SHOAL_BATCHREQ_H
#define SHOAL_BATCHREQ_H

#include <stddef.h>
#include <stdint.h>

#define BATCHREQ_MAX 1000000
#define BATCHREQ_BODY_MAX (128u << 20)
#define BATCHREQ_NAME_MAX 1024

struct batch_entry {
    const char *bucket, *provider, *name; /* provider: "shoal" when not given */
    const char *archpath;        /* NULL: the whole object */
    const char *transform;       /* NULL: the bytes as they are (xform.h) */
    const char *args;            /* the transform's, URL-encoded, or NULL */
    int64_t start, length;       /* -1: not given */
};

struct batch_req {
    struct batch_entry *e;
    size_t n;
    int kind;                    /* archidx kind of the answer: TAR, TGZ or ZIP */
    int continue_on_error;
    int name_only;               /* 0 with-bucket, 1 name-only, 2 member-only */
    int manifest;
    char *strings;               /* every string above, back to back */
};

/* Parse len bytes of body into q: 0, or -1 with err (q empty). */
int batchreq_parse(struct batch_req *q, const char *body, size_t len, char *err, size_t errlen);
void batchreq_free(struct batch_req *q);

/* The request's JSON for the entries idx[0..n) of q (with q's options):
 * a new string of *len bytes. */
char *batchreq_encode(const struct batch_req *q, const uint32_t *idx, size_t n, size_t *len);

/* A batch door's first checks (proxy and target alike): the path is the
 * door itself (rest rlen bytes: 404 otherwise) and the method POST or GET
 * (405 with Allow). 1 to go on, 0 answered. */
struct http_req;
int batchreq_door(struct http_req *r, size_t rlen);
/* Bodies of batch requests being read at once in this process are at
 * most BATCHREQ_READING (each up to BATCHREQ_BODY_MAX): admit 1 (then
 * batchreq_release once the body is parsed or gone), 0 with r answered
 * 503 (Retry-After) when as many are being read. Any thread. */
#define BATCHREQ_READING 8
int batchreq_admit(struct http_req *r);
void batchreq_release(void);

/* The hex SHA-256 of a request's body, which a proxy's redirect carries
 * under its signature so that the target assembles the batch it
 * authorized: BATCHREQ_DIGEST_LEN characters and a NUL into hex. */
#define BATCHREQ_DIGEST_LEN 64
void batchreq_digest(const char *body, size_t len, char *hex);

/* The member name of entry e in the answer: "bucket/name[/archpath]", or
 * without the bucket (name-only), or a member's archpath alone
 * (member-only; a whole object's name). A new string. */
char *batchreq_member_name(const struct batch_req *q, const struct batch_entry *e);

#endif
