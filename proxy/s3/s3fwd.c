/*
 * s3fwd: S3 object requests on the proxies. Each is checked here (the
 * subresource, the name, the bucket, the method, S3's 5 GiB limit on one
 * PUT, a CopyObject source), then sent to the owning target, which
 * answers in S3 mode: streamed through the proxy (the default data path;
 * boto3 and most SDKs do not follow redirects on GET and PUT), or, with
 * s3_redirect, redirected there. GET and HEAD are relayed by s3relay.c;
 * the other methods go through the intra-cluster client as below.
 *
 * Upload: the client's body is handed to the target's connection as it
 * arrives, through a small buffer with backpressure both ways (the client
 * is paused while the buffer is full; the target's side waits while it is
 * empty). aws-chunked bodies (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, with a
 * signature per chunk, and STREAMING-UNSIGNED-PAYLOAD-TRAILER) are decoded
 * on the way, so the target stores the object's bytes. The last byte is
 * held back until the payload is verified (the body's SHA-256 when the
 * request signed one, every chunk's signature), so a body that fails its
 * check never reaches the target whole and is never committed.
 *
 * Download: the target's status and object headers are relayed, the body
 * is written to the client as it comes, and the target's side pauses
 * while the client's output buffer is over FWD_HIGH.
 */
#include <event2/buffer.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "authz.h"
#include "awschunk.h"
#include "bmd.h"
#include "buckets.h"
#include "cmap.h"
#include "nodeclient.h"
#include "http.h"
#include "log.h"
#include "node.h"
#include "objects.h"
#include "objname.h"
#include "proxy.h"
#include "pump.h"
#include "s3.h"
#include "s3auth.h"
#include "s3ck.h"
#include "s3own.h"
#include "s3fwd.h"
#include "s3relay.h"
#include "s3front.h"
#include "s3sub.h"
#include "url.h"
#include "util.h"
#include "worker.h"

#define FWD_HIGH (4u << 20)      /* client output above this pauses the target */
#define UP_HIGH (1u << 20)       /* upload buffer above this pauses the client */
#define S3_PUT_MAX (5ull << 30)  /* one PUT: an object or a part */
#define SPLICE_MIN (1 << 20)     /* plain bodies this large are spliced */
#define FWD_IDLE_S 60            /* a spliced body moving nowhere this long fails */

struct fwd {
    struct http_req *r;
    struct node *node;           /* counts the bytes moved */
    struct nodeclient_xfer *x;
    int closed;                  /* the transfer is over (x is gone) */

    /* upload */
    int64_t up_len;              /* bytes the target gets; -1: no body */
    struct evbuffer *up;
    uint64_t up_in, up_out;
    int body_done;
    int body_ok;                 /* verified: the last byte may go */
    int client_paused;
    int up_waiting;              /* the client was told to wait for data */
    EVP_MD_CTX *sha;             /* the whole body's SHA-256, when signed */
    char want_sha[65];

    struct awschunk *chunks;     /* the aws-chunked decoder, when the body is one */
    struct s3ck_req ck;          /* a checksum in its trailer, checked here (the target
                                  * computes the same one, told the algorithm) */
    /* an empty aws-chunked body has no last byte to hold back: the target's
     * request waits until the body is checked (fwd_end) */
    char *later_method, *later_url;
    char **later_hdrs;
    int later_nh;

    /* a large plain body, spliced client -> target (http_req_take_body) */
    int cfd;                     /* the client's socket, once taken; else -1 */
    uint64_t sock_left;          /* body bytes still on it */
    struct pump *pump;

    /* download */
    int resp_started;
    int down_paused;
    uint64_t down;               /* body bytes relayed to the client */
};

/* the request headers that pass to the target, a request's first of each */
static const struct http_name req_headers[] = {
    HTTP_NAME("Content-Type"), HTTP_NAME("Content-MD5"), HTTP_NAME("Range"), HTTP_NAME("If-Match"),
    HTTP_NAME("If-None-Match"), HTTP_NAME("If-Modified-Since"), HTTP_NAME("If-Unmodified-Since"),
    HTTP_NAME("Cache-Control"), HTTP_NAME("Content-Disposition"), HTTP_NAME("Content-Encoding"),
    HTTP_NAME("Content-Language"), HTTP_NAME("Expires"), HTTP_NAME("x-amz-metadata-directive"),
    HTTP_NAME("x-amz-tagging"), HTTP_NAME("x-amz-tagging-directive"),
    HTTP_NAME("x-amz-copy-source-range"), HTTP_NAME("x-amz-copy-source-if-match"),
    HTTP_NAME("x-amz-copy-source-if-none-match"), HTTP_NAME("x-amz-copy-source-if-modified-since"),
    HTTP_NAME("x-amz-copy-source-if-unmodified-since"), HTTP_NAME("x-amz-acl"),
    HTTP_NAME("x-amz-grant-read"), HTTP_NAME("x-amz-grant-write"),
    HTTP_NAME("x-amz-grant-read-acp"), HTTP_NAME("x-amz-grant-write-acp"),
    HTTP_NAME("x-amz-grant-full-control"), HTTP_NAME("x-amz-sdk-checksum-algorithm"),
    HTTP_NAME("x-amz-checksum-crc32"), HTTP_NAME("x-amz-checksum-crc32c"),
    HTTP_NAME("x-amz-checksum-crc64nvme"), HTTP_NAME("x-amz-checksum-sha1"),
    HTTP_NAME("x-amz-checksum-sha256"), HTTP_NAME("x-amz-checksum-algorithm"),
    HTTP_NAME("x-amz-checksum-type"), HTTP_NAME("x-amz-checksum-mode"),
    HTTP_NAME("x-amz-object-attributes"), HTTP_NAME("x-amz-max-parts"),
    HTTP_NAME("x-amz-part-number-marker"),
};
_Static_assert(ARRAY_LEN(req_headers) <= 64, "req_headers: one bit each in forward()");

static const struct nodeclient_ops fwd_ops;

static void fwd_free(struct fwd *f)
{
    pump_free(f->pump);
    if (f->up)
        evbuffer_free(f->up);
    EVP_MD_CTX_free(f->sha);
    awschunk_free(f->chunks);
    s3ck_req_free(&f->ck);
    for (int i = 0; i < f->later_nh; i++)
        free(f->later_hdrs[i]);
    free(f->later_hdrs);
    free(f->later_method);
    free(f->later_url);
    free(f);
}

/* Detach from the client request; free once the transfer is over too. */
static void fwd_release(struct fwd *f)
{
    struct http_req *r = f->r;
    if (f->pump) {               /* the body's rest stays unread: the client's
                                  * connection closes after the answer */
        pump_free(f->pump);
        f->pump = NULL;
    }
    if (r && f->cfd >= 0)
        http_req_body_taken(r, f->body_done);
    if (r) {
        r->data = NULL;
        r->on_taken = NULL;
        r->on_body = NULL;
        r->on_end = NULL;
        r->on_abort = NULL;
        r->on_drain = NULL;
        if (f->client_paused)
            http_req_resume(r);
        f->r = NULL;
        http_req_unref(r);
    }
    if (f->closed)
        fwd_free(f);
}

/* The upload went wrong on the client's side: stop the target's transfer
 * short of its length (nothing is committed) and answer. */
static void fwd_fail(struct fwd *f, enum s3e e, const char *msg)
{
    struct http_req *r = f->r;
    if (!f->closed) {
        nodeclient_cancel(f->x);
        f->closed = 1;
    }
    if (r) {
        http_resp_close(r);
        if (f->resp_started)
            http_resp_abort(r);
        else
            s3_fail(r, e, "%s", msg);
    }
    fwd_release(f);
}

/* ---- upload ---------------------------------------------------------------- */

static void up_push(struct fwd *f, const char *p, size_t n)
{
    if (n == 0)
        return;
    if (f->sha)
        EVP_DigestUpdate(f->sha, p, n);
    evbuffer_add(f->up, p, n);
    f->up_in += n;
    if (f->up_waiting && !f->closed) {
        f->up_waiting = 0;
        nodeclient_resume_upload(f->x);
    }
}

/* The aws-chunked decoder's output: verified framing, the object's bytes. */
static int fwd_out(void *arg, const char *p, size_t n)
{
    struct fwd *f = arg;
    s3ck_req_update(&f->ck, p, n);
    up_push(f, p, n);
    return 0;
}

static int fwd_body(struct http_req *r, const char *p, size_t n)
{
    struct fwd *f = r->data;
    if (f->chunks) {
        int rc = awschunk_feed(f->chunks, p, n);
        if (rc) {
            const char *msg;
            enum s3e e = s3_chunk_error(rc, &msg);
            fwd_fail(f, e, msg);
            return 0;
        }
    } else {
        up_push(f, p, n);
    }
    if (f->up_len == NODECLIENT_UP_CHUNKED && f->up_in > S3_PUT_MAX) { /* 5 GiB: nothing commits */
        fwd_fail(f, S3E_ENTITY_TOO_LARGE, "your proposed upload exceeds the maximum allowed "
                                          "size of 5 GiB per PUT; use a multipart upload");
        return 0;
    }
    if (!f->client_paused && evbuffer_get_length(f->up) > UP_HIGH) {
        f->client_paused = 1;
        http_req_pause(r);
    }
    return 0;
}

static void fwd_end(struct http_req *r)
{
    struct fwd *f = r->data;
    f->body_done = 1;
    int rc = f->chunks ? awschunk_finish(f->chunks) : 0;
    if (rc) {
        const char *msg;
        enum s3e e = s3_chunk_error(rc, &msg);
        fwd_fail(f, e, msg);
        return;
    }
    char ck[S3CK_VALUE_MAX];
    const char *msg;
    enum s3e e;
    if (f->ck.trailer && s3ck_req_end(&f->ck, f->chunks, ck, &e, &msg)) {
        fwd_fail(f, e, msg);
        return;
    }
    if (f->sha) {
        unsigned char d[32];
        char hex[65];
        EVP_DigestFinal_ex(f->sha, d, NULL);
        hex_encode(d, 32, hex);
        if (strcasecmp(hex, f->want_sha)) {
            fwd_fail(f, S3E_X_AMZ_CONTENT_SHA256_MISMATCH,
                     "the provided x-amz-content-sha256 does not match what was computed");
            return;
        }
    }
    f->body_ok = 1;
    if (f->later_url) {          /* an empty body, checked: now to the target */
        f->closed = 0;
        f->x = nodeclient_start(worker_hc(r), f->later_method, f->later_url,
                                (const char *const *)f->later_hdrs, f->later_nh, 0,
                        24L * 3600 * 1000, &fwd_ops, f);
        return;
    }
    if (f->up_waiting && !f->closed) {
        f->up_waiting = 0;
        nodeclient_resume_upload(f->x);
    }
}

/* k bytes of the upload buffer into buf, for the target; the client
 * resumes once the buffer has room. */
static ssize_t up_take(struct fwd *f, char *buf, size_t k)
{
    evbuffer_remove(f->up, buf, k);
    f->up_out += k;
    if (f->client_paused && evbuffer_get_length(f->up) < UP_HIGH / 2 && f->r) {
        f->client_paused = 0;
        http_req_resume(f->r);
    }
    return (ssize_t)k;
}

/* fwd_read for a body of no known length: its last byte is held back
 * until the body is in and checked. */
static ssize_t fwd_read_chunked(struct fwd *f, char *buf, size_t n)
{
    size_t avail = evbuffer_get_length(f->up);
    size_t hold = f->body_done && f->body_ok ? 0 : 1;
    if (avail <= hold) {
        if (avail == 0 && f->body_done && f->body_ok)
            return 0;            /* the end */
        if (!f->r)
            return -1;           /* the client is gone */
        f->up_waiting = 1;
        return NODECLIENT_READ_PAUSE;
    }
    return up_take(f, buf, avail - hold < n ? avail - hold : n);
}

static ssize_t fwd_read(void *arg, char *buf, size_t n)
{
    struct fwd *f = arg;
    if (f->up_len == NODECLIENT_UP_CHUNKED)
        return fwd_read_chunked(f, buf, n);
    uint64_t len = (uint64_t)f->up_len;
    uint64_t limit = f->body_ok || len == 0 ? len : len - 1;
    size_t avail = evbuffer_get_length(f->up);
    size_t k = avail < n ? avail : n;
    if (f->up_out + k > limit)
        k = (size_t)(limit - f->up_out);
    if (k == 0) {
        if (f->up_out == len && f->body_ok)
            return 0;
        if (!f->r)
            return -1; /* the client is gone */
        if (f->cfd >= 0 && avail == 0 && f->sock_left > 0)
            return NODECLIENT_READ_SOCKET; /* the rest, spliced: fwd_socket */
        f->up_waiting = 1;
        return NODECLIENT_READ_PAUSE;
    }
    return up_take(f, buf, k);
}

/* The client's socket: the body bytes that came with the head go through
 * the buffer, the rest is spliced once the target's side asks for it. */
static void fwd_taken(struct http_req *r, const char *pre, size_t pre_len, int fd, uint64_t left)
{
    struct fwd *f = r->data;
    f->cfd = fd;
    f->sock_left = left;
    up_push(f, pre, pre_len);
    if (left == 0) {
        f->body_done = 1;
        http_req_body_taken(r, 1);
    }
}

static void fwd_pumped(void *arg, const char *err, enum pump_side side)
{
    struct fwd *f = arg;
    pump_free(f->pump);
    f->pump = NULL;
    if (!err) {
        f->up_out += f->sock_left;
        f->body_done = 1;
        if (f->r)
            http_req_body_taken(f->r, 1);
        nodeclient_upload_moved(f->x, 1);
        return;
    }
    if (side == PUMP_IN) {
        fwd_fail(f, S3E_INCOMPLETE_BODY, "the request body ended before its Content-Length");
        return;
    }
    nodeclient_upload_moved(f->x, 0); /* the target's side: fwd_done answers */
}

static void fwd_socket(void *arg, struct nodeclient_xfer *x, int fd)
{
    struct fwd *f = arg;
    struct http_req *r = f->r;
    f->pump = pump_start(r->w->base, f->cfd, fd, f->sock_left, FWD_IDLE_S, fwd_pumped, f);
    if (!f->pump)                /* inside nodeclient's callback: fwd_done answers, later */
        nodeclient_upload_moved(x, 0);
}

/* ---- download ------------------------------------------------------------- */

static int fwd_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct fwd *f = arg;
    struct http_req *r = f->r;
    if (!r)
        return -1;
    s3relay_headers(r, x);
    const char *cl = nodeclient_header(x, "Content-Length");
    int64_t len = -1;
    uint64_t v;
    if (cl && !parse_u64(cl, strlen(cl), &v))
        len = (int64_t)v;
    if (status == 204 || status == 304)
        len = 0;
    f->resp_started = 1;
    http_resp_begin(r, status, len);
    return 0;
}

static void fwd_drain(struct http_req *r)
{
    struct fwd *f = r->data;
    if (f && f->down_paused && !f->closed && http_resp_pending(r) < FWD_HIGH / 2) {
        f->down_paused = 0;
        nodeclient_resume(f->x);
    }
}

static int fwd_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct fwd *f = arg;
    if (!f->r)
        return -1;
    f->down += n;
    http_resp_write(f->r, p, n);
    if (http_resp_pending(f->r) > FWD_HIGH && !f->down_paused) {
        f->down_paused = 1;
        nodeclient_pause(x);
    }
    return 0;
}

static void fwd_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct fwd *f = arg;
    (void)x;
    f->closed = 1;
    if (status)
        node_count_bytes(f->node, f->up_out, f->down);
    struct http_req *r = f->r;
    if (r) {
        if (status == 0 && !f->resp_started) {
            log_warn("s3: %s %s: target transfer failed: %s", r->method_name, r->target,
                     err ? err : "?");
            http_resp_header_str(r, "Retry-After", "5");
            s3_fail(r, S3E_SERVICE_UNAVAILABLE, "the storage target did not answer: %s",
                    err ? err : "?");
        } else if (status == 0) {
            http_resp_abort(r);
        } else {
            http_resp_end(r);
        }
    }
    fwd_release(f);
}

static void fwd_abort(struct http_req *r)
{
    struct fwd *f = r->data;
    if (!f->closed) {
        nodeclient_cancel(f->x);
        f->closed = 1;
    }
    fwd_release(f);
}

static const struct nodeclient_ops fwd_ops = {
    .on_headers = fwd_headers,
    .on_data = fwd_data,
    .on_read = fwd_read,
    .on_done = fwd_done,
    .on_socket = fwd_socket,
};

/* ---- start ----------------------------------------------------------------- */

/* The target a request for bucket/key goes to (objects_pick; read: it
 * only reads), with the map it is in (*m, which the caller releases);
 * NULL with r answered 503 when the cluster has none, or none this proxy
 * can reach. */
static const struct cmap_node *owner_of(struct http_req *r, const char *bucket,
                                        const char *key, int read, struct cmap **m)
{
    *m = cmap_current();
    const struct cmap_node *lost;
    const struct cmap_node *owner = objects_pick(*m, BMD_PROVIDER_SHOAL, bucket, key, read, &lost);
    if (!owner && lost) {
        http_resp_header_str(r, "Retry-After", "1");
        s3_fail(r, S3E_SERVICE_UNAVAILABLE, "target %s, which holds this key, cannot be "
                "reached from this proxy", lost->id);
    } else if (!owner) {
        s3_fail(r, S3E_SERVICE_UNAVAILABLE, "no storage target is in the cluster");
    }
    if (!owner) {
        cmap_unref(*m);
        *m = NULL;
    }
    return owner;
}

/* Does r only read (GET, HEAD)? */
static int reads(const struct http_req *r)
{
    return r->method == HTTP_M_GET || r->method == HTTP_M_HEAD;
}

/* How the body comes and what must be checked; 0, or the error answered. */
static int body_setup(struct fwd *f, struct http_req *r, const struct s3auth_result *auth)
{
    const char *pay = auth->payload;
    uint64_t decoded;
    int is_signed;
    int streaming = s3_streaming(r, pay, &decoded, &is_signed);
    if (streaming < 0)
        return 400; /* answered */
    if (streaming) {
        /* anonymous: nothing was verified, so there is no chain to check */
        f->up_len = (int64_t)decoded;
        f->chunks = awschunk_new(is_signed && !auth->anonymous ? auth : NULL, decoded, fwd_out,
                                 f);
        if (r->method == HTTP_M_PUT && s3ck_req_open(r, &f->ck, S3CK_NONE))
            return 400; /* answered */
        if (!f->ck.trailer) {    /* a header's checksum: the target checks it */
            s3ck_req_free(&f->ck);
            f->ck.alg = S3CK_NONE;
        }
        return 0;
    }
    if (r->content_length < 0) {
        /* chunked: to the target the same way */
        f->up_len = r->chunked ? NODECLIENT_UP_CHUNKED : 0;
    } else {
        f->up_len = r->content_length;
    }
    if (strlen(pay) == 64 && !auth->anonymous) {
        f->sha = EVP_MD_CTX_new();
        EVP_DigestInit_ex(f->sha, EVP_sha256(), NULL);
        memcpy(f->want_sha, pay, 65);
    }
    return 0;
}

/* Stream r (method, with query and an optional extra header line) to
 * the owner of bucket/key in S3 mode and relay the answer. */
static void forward(struct http_req *r, const char *bucket, const char *key,
                    const struct s3auth_result *auth, const char *method, const char *query,
                    const char *extra_hdr)
{
    struct cmap *m;
    const struct cmap_node *owner = owner_of(r, bucket, key, reads(r), &m);
    if (!owner)
        return;
    struct proxy *p = r->w->ctx;
    struct fwd *f = xcalloc(1, sizeof(*f));
    f->r = r;
    f->node = &p->node;
    f->up_len = -1;
    f->cfd = -1;
    int upload = r->method == HTTP_M_PUT || r->method == HTTP_M_POST;
    if (upload && body_setup(f, r, auth)) {
        cmap_unref(m);
        fwd_free(f);
        return;
    }
    if (!upload || (!f->sha && !f->chunks))
        f->body_ok = 1;
    char *full = objects_url(&p->node, owner, method, bucket, key, strlen(key), query);
    cmap_unref(m);

    const char *hdrs[ARRAY_LEN(req_headers) + 66];
    char *owned[ARRAY_LEN(req_headers) + 66];
    int nh = 0, no = 0;
    hdrs[nh++] = S3_MODE_HEADER ": 1";
    if (extra_hdr)
        hdrs[nh++] = extra_hdr;
    if (f->ck.trailer && !http_req_header(r, "x-amz-sdk-checksum-algorithm"))
        hdrs[nh++] = owned[no++] = xasprintf("x-amz-sdk-checksum-algorithm: %s",
                                             s3ck_name(f->ck.alg));
    uint64_t seen = 0;
    for (int i = 0; i < r->n_hdrs; i++) {
        const char *n = r->hdrs[i].name;
        int k = http_name_find(n, strlen(n), req_headers, ARRAY_LEN(req_headers));
        if (k < 0 || (seen >> k & 1))
            continue;
        seen |= 1ull << k;
        hdrs[nh++] = owned[no++] = xstrcat(req_headers[k].s, ": ", r->hdrs[i].value, NULL);
    }
    for (int i = 0; i < r->n_hdrs && nh < (int)ARRAY_LEN(hdrs); i++)
        if (!strncasecmp(r->hdrs[i].name, "x-amz-meta-", 11))
            hdrs[nh++] = owned[no++] = xstrcat(r->hdrs[i].name, ": ", r->hdrs[i].value, NULL);
    if (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD) {
        /* a raw connection, the body spliced (s3relay.c) */
        fwd_free(f);
        s3relay_get(r, full, hdrs, nh);
        for (int i = 0; i < no; i++)
            free(owned[i]);
        return;
    }
    if (upload)
        f->up = evbuffer_new();
    http_req_ref(r);
    r->data = f;
    r->on_abort = fwd_abort;
    r->on_drain = fwd_drain;
    /* a large body nothing needs to look at moves without a copy */
    int spliced = upload && !f->sha && !f->chunks && f->up_len >= SPLICE_MIN &&
                  !url_is_https(full) && http_req_take_body(r, fwd_taken) == 0;
    if (upload && !spliced) {
        r->on_body = fwd_body;
        r->on_end = fwd_end;
    }
    if (upload && f->chunks && f->up_len == 0) {
        f->closed = 1;           /* no transfer until fwd_end */
        f->later_method = xstrdup(method);
        f->later_url = full;
        f->later_hdrs = xcalloc((size_t)nh, sizeof(char *));
        for (int i = 0; i < nh; i++)
            f->later_hdrs[f->later_nh++] = xstrdup(hdrs[i]);
        for (int i = 0; i < no; i++)
            free(owned[i]);
        return;
    }
    f->x = nodeclient_start(worker_hc(r), method, full, hdrs, nh, upload ? f->up_len : -1,
                            24L * 3600 * 1000, &fwd_ops, f);
    for (int i = 0; i < no; i++)
        free(owned[i]);
    free(full);
}

/* ---- the object request ------------------------------------------------------- */

/* S3's limit on one PUT (an object, or a part); larger ones are multipart
 * uploads. Refused before any of the body is read: 1 when r was answered. */
static int put_too_large(struct http_req *r)
{
    const char *dl = http_req_header(r, "x-amz-decoded-content-length");
    uint64_t declared = 0;
    if (dl && parse_u64(dl, strlen(dl), &declared))
        declared = 0;
    if ((r->content_length <= 0 || (uint64_t)r->content_length <= S3_PUT_MAX) &&
        declared <= S3_PUT_MAX)
        return 0;
    http_resp_close(r);
    s3_fail(r, S3E_ENTITY_TOO_LARGE,
            "your proposed upload exceeds the maximum allowed size of 5 GiB per PUT; "
            "use a multipart upload");
    return 1;
}

/*
 * Redirect mode (s3_redirect): the client is sent to the owning target.
 * Location carries the proxy's signature (the target trusts it instead of
 * the client's SigV4, which named the proxy) and asks for S3 answers; the
 * body is S3's TemporaryRedirect error with the target as <Endpoint>.
 */
static void redirect(struct http_req *r, const char *bucket, const char *key,
                     const char *method, const char *query)
{
    struct cmap *m;
    const struct cmap_node *owner = owner_of(r, bucket, key, reads(r), &m);
    if (!owner)
        return;
    struct proxy *p = r->w->ctx;
    char *q = xasprintf("%s%s%s", S3_MODE_QUERY, query[0] ? "&" : "", query);
    char *url = objects_url(&p->node, owner, method, bucket, key, strlen(key), q);
    free(q);
    http_resp_header_str(r, "Location", url);
    __atomic_add_fetch(&p->node.st.redirects, 1, __ATOMIC_RELAXED);
    s3_redirect_reply(r, owner->url, bucket);
    cmap_unref(m);
    free(url);
}

/* Does a copy onto itself change something S3 lets it change besides
 * the metadata (storage class, encryption, website redirect)? */
static int copy_changes(const struct http_req *r)
{
    for (int i = 0; i < r->n_hdrs; i++) {
        const char *n = r->hdrs[i].name;
        if (!strcasecmp(n, "x-amz-storage-class") ||
            !strncasecmp(n, "x-amz-server-side-encryption", 28) ||
            !strcasecmp(n, "x-amz-website-redirect-location"))
            return 1;
    }
    return 0;
}

/* Does the copy carry x-amz-copy-source-if-* conditions? */
static int copy_conditional(const struct http_req *r)
{
    for (int i = 0; i < r->n_hdrs; i++)
        if (!strncasecmp(r->hdrs[i].name, "x-amz-copy-source-if-", 21))
            return 1;
    return 0;
}

/* Has Shoal bucket name a backend? */
static int source_backed(const char *name)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, BMD_PROVIDER_SHOAL, name) : NULL;
    int backed = bk && bmd_has_backend(bk);
    bmd_unref(b);
    return backed;
}

/* May who read objects of bucket name (authz.h)? If not, the copy reads
 * a source object only if its own ACL lets who. */
static int source_readable(const char *name, const struct authz_who *who)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, BMD_PROVIDER_SHOAL, name) : NULL;
    int ok = !who->enforced || (bk && authz_allows(bk->props, who, AUTHZ_READ));
    bmd_unref(b);
    return ok;
}

/* CopyObject's source, "[/]bucket/key[?versionId=...]" percent-encoded,
 * as a header line naming a signed URL on the source's target (naming who
 * for the object's ACL to decide when the bucket does not let who); NULL
 * when the client was answered (bad or missing source, or a CopyObject
 * onto itself that changes nothing: to_bucket/to_key, NULL for a part). */
static char *copy_from(struct http_req *r, const char *src, const char *to_bucket,
                       const char *to_key, const struct authz_who *who)
{
    size_t n = strcspn(src, "?");
    char *dec = xmalloc(n + 1);
    int dl = http_pct_decode(src, n, dec);
    char *s = dec, err[256];
    if (dl > 0 && *s == '/')
        s++, dl--;
    char *slash = dl > 0 ? memchr(s, '/', (size_t)dl) : NULL;
    if (!slash || slash == s || (size_t)(slash - s) >= S3_BUCKET_LEN ||
        objname_valid(slash + 1, (size_t)(dl - (slash + 1 - s)), err, sizeof(err))) {
        free(dec);
        s3_fail(r, S3E_INVALID_ARGUMENT, "x-amz-copy-source must be bucket/key");
        return NULL;
    }
    *slash = '\0';
    /* a version of the source: its target reads it (target/api/vers.c) */
    const char *q = src[n] == '?' ? src + n + 1 : "";
    const char *dir = http_req_header(r, "x-amz-metadata-directive");
    if (to_key && !q[0] && !strcmp(s, to_bucket) && !strcmp(slash + 1, to_key) &&
        (!dir || strcasecmp(dir, "REPLACE")) && !copy_changes(r)) {
        free(dec);
        s3_fail(r, S3E_INVALID_REQUEST, "This copy request is illegal because it is trying to "
                                        "copy an object to itself without changing the object's "
                                        "metadata, storage class, website redirect location or "
                                        "encryption attributes.");
        return NULL;
    }
    if (!buckets_exist(BMD_PROVIDER_SHOAL, s)) {
        free(dec);
        s3_fail(r, S3E_NO_SUCH_BUCKET, "the copy source bucket does not exist");
        return NULL;
    }
    if (copy_conditional(r) && source_backed(s)) {
        free(dec);
        s3_fail(r, S3E_NOT_IMPLEMENTED, "x-amz-copy-source-if-* on a source bucket with a "
                                        "backend (the source may be there only): not "
                                        "implemented");
        return NULL;
    }
    if (q[0] && (strncmp(q, "versionId=", 10) ||
                 (strcmp(q + 10, "null") &&
                  (strlen(q + 10) != 16 || strspn(q + 10, "0123456789abcdef") != 16)))) {
        free(dec);
        s3_fail(r, S3E_INVALID_ARGUMENT, "x-amz-copy-source may name only a versionId");
        return NULL;
    }
    const char *key = slash + 1;
    struct cmap *m;
    const struct cmap_node *owner = owner_of(r, s, key, 1, &m);   /* the copy's source, read */
    char *line = NULL;
    if (owner) {
        struct proxy *p = r->w->ctx;
        int pub = !source_readable(s, who);
        char *wq = pub ? s3own_who_query(who) : xstrdup("");
        char *sq = xasprintf("%s%s%s", q, q[0] && pub ? "&" : "", wq);
        free(wq);
        char *url = objects_url(&p->node, owner, "GET", s, key, strlen(key), sq[0] ? sq : NULL);
        free(sq);
        line = xasprintf("%s: %s", COPY_FROM_HEADER, url);
        free(url);
    }
    cmap_unref(m);
    free(dec);
    return line;
}

void s3fwd_object(struct http_req *r, const char *bucket, const struct s3auth_result *auth,
                  const struct authz_who *who, const char *key, size_t klen, int object_decides)
{
    char err[256];
    const struct s3sub *sub = s3sub_find(r);
    if (sub && !s3sub_serves(sub, 1, r->method)) {
        s3sub_refuse(r, sub, 1);
        return;
    }
    int part = sub && sub->id == S3SUB_UPLOAD_ID;
    if (objname_valid(key, klen, err, sizeof(err))) {
        s3_fail(r,
                klen > OBJNAME_MAX                       ? S3E_KEY_TOO_LONG
                : utf8_valid_prefix(key, klen) != klen ? S3E_INVALID_OBJECT_NAME
                                                         : S3E_INVALID_ARGUMENT,
                "%s", err);
        return;
    }
    if (!buckets_exist(BMD_PROVIDER_SHOAL, bucket)) {
        s3_fail(r, S3E_NO_SUCH_BUCKET, "the specified bucket does not exist");
        return;
    }
    const char *method = NULL;
    switch (r->method) {
    case HTTP_M_GET: method = "GET"; break;
    case HTTP_M_HEAD: method = "HEAD"; break;
    case HTTP_M_PUT: method = "PUT"; break;
    case HTTP_M_DELETE: method = "DELETE"; break;
    case HTTP_M_POST: method = "POST"; break; /* multipart create and complete */
    default: break;
    }
    if (!method) {
        s3_fail(r, S3E_METHOD_NOT_ALLOWED, "%s is not allowed on an object", r->method_name);
        return;
    }
    if (r->method == HTTP_M_PUT && put_too_large(r))
        return;
    char *k = xstrndup(key, klen);
    char *fq = s3_query_without(r->query, "X-Amz-"); /* presigning */
    char *wq = object_decides ? s3own_who_query(who)
               : r->method == HTTP_M_PUT || r->method == HTTP_M_POST
                   ? s3own_writer_query(who, bucket)   /* the object may be the writer's */
                   : xstrdup("");
    if (wq[0]) {
        char *q = xasprintf("%s%s%s", fq, fq[0] ? "&" : "", wq);
        free(fq);
        fq = q;
    }
    free(wq);
    char *copy = NULL;
    /* CopyObject, UploadPartCopy */
    const char *src = http_req_header(r, "x-amz-copy-source");
    if (src && r->method == HTTP_M_PUT && (!sub || part) &&
        !(copy = copy_from(r, src, bucket, part ? NULL : k, who))) {
        free(fq);
        free(k);
        return; /* answered */
    }
    struct proxy *p = r->w->ctx;
    if (p->conf.s3_redirect && !copy && r->method != HTTP_M_HEAD && r->method != HTTP_M_POST &&
        !part)
        redirect(r, bucket, k, method, fq);
    else
        forward(r, bucket, k, auth, method, fq, copy);
    free(copy);
    free(fq);
    free(k);
}
