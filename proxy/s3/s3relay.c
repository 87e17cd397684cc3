/*
 * s3relay: S3 GET and HEAD forwarded without copying a large body through
 * the proxy. The request goes to the owning target through the worker's
 * nodeclient (its pooled keep-alive connections); the answer's head is relayed
 * as it comes. A body of up to RELAY_COPY_MAX comes through nodeclient as bytes;
 * a larger one is taken as nodeclient's socket (NODECLIENT_TAKE_BODY) and spliced to the
 * client's socket by a pump (common/pump.h) once the head is out. Over
 * HTTPS (either side) there is no socket to splice: every body comes as
 * bytes, nodeclient paused while the client's output is over RELAY_HIGH. The
 * connection goes back to nodeclient's pool after a whole body.
 *
 * Thread: everything runs on the worker's loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nodeclient.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "pump.h"
#include "s3.h"
#include "s3relay.h"
#include "url.h"
#include "util.h"
#include "worker.h"

#define RELAY_COPY_MAX (64 * 1024)
#define RELAY_HEAD_MS 300000     /* the target's head and a small body, at most */
#define RELAY_BYTES_MS (24L * 3600 * 1000)   /* HTTPS: the whole body, as bytes, at most */
#define RELAY_IDLE_S 60          /* a large body moving nowhere for this long fails */
#define RELAY_HIGH (8u << 20)    /* HTTPS: the client's unsent bytes that pause nodeclient */

enum rstate { R_HEAD, R_WAIT_DRAIN, R_BODY };

struct relay {
    struct http_req *r;
    struct event_base *base;
    struct nodeclient_xfer *hx;  /* until the head and a small body are in */
    struct nodeclient_body *b;   /* a large body's socket, taken from nodeclient */
    enum rstate st;
    const char *why;             /* why on_headers stopped the transfer */
    struct pump *pump;           /* splicing a large body to the client */
    uint64_t body_len;           /* the answer's body bytes */
    uint64_t left;               /* body bytes after those read with the head */
};

/* ---- which headers pass ------------------------------------------------------ */

/* Is a target's response header one the client should see? */
static int passes(const char *name)
{
    static const struct http_name keep[] = {
        HTTP_NAME("ETag"), HTTP_NAME("Last-Modified"), HTTP_NAME("Content-Type"),
        HTTP_NAME("Content-Range"), HTTP_NAME("Accept-Ranges"), HTTP_NAME("Content-Language"),
        HTTP_NAME("Expires"), HTTP_NAME("Cache-Control"), HTTP_NAME("Content-Disposition"),
        HTTP_NAME("Content-Encoding"), HTTP_NAME("X-Shoal-Cache"), HTTP_NAME("X-Shoal-Checksum"),
        HTTP_NAME("X-Shoal-Version"),
    };
    return !strncasecmp(name, "x-amz-", 6) ||
           http_name_find(name, strlen(name), keep, ARRAY_LEN(keep)) >= 0;
}

void s3relay_headers(struct http_req *r, const struct nodeclient_xfer *x)
{
    for (int i = 0; i < nodeclient_header_count(x); i++) {
        const char *v, *n = nodeclient_header_at(x, i, &v);
        if (passes(n))
            http_resp_header_str(r, n, v);
    }
}

/* ---- lifetime ------------------------------------------------------------------ */

static void relay_free(struct relay *x, int whole)
{
    if (x->hx)
        nodeclient_cancel(x->hx);
    pump_free(x->pump);
    if (x->b)
        nodeclient_body_end(x->b, whole);
    if (x->r) {
        x->r->data = NULL;
        x->r->on_abort = NULL;
        x->r->on_drain = NULL;
        http_req_unref(x->r);
    }
    free(x);
}

/* The exchange failed: answer (or cut) the client and drop the connection. */
static void relay_fail(struct relay *x, const char *why)
{
    struct http_req *r = x->r;
    log_warn("s3: %s %s: relay to the target failed: %s", r->method_name, r->target, why);
    if (x->st >= R_WAIT_DRAIN)
        http_resp_abort(r);
    else {
        http_resp_header_str(r, "Retry-After", "5");
        s3_fail(r, S3E_SERVICE_UNAVAILABLE, "the storage target did not answer: %s", why);
    }
    relay_free(x, 0);
}

static void relay_abort(struct http_req *r)
{
    struct relay *x = r->data;
    relay_free(x, 0); /* detaches from r and drops our reference */
}

/* ---- the answer's head ----------------------------------------------------------- */

/* The whole answer is relayed. */
static void body_done(struct relay *x)
{
    struct http_req *r = x->r;
    struct proxy *p = r->w->ctx;
    node_count_bytes(&p->node, 0, x->body_len);
    http_resp_end(r);
    relay_free(x, 1);
}

/* The head is in: relay it; a large body is taken as the socket. */
static int on_head(void *arg, struct nodeclient_xfer *hx, int status)
{
    struct relay *x = arg;
    struct http_req *r = x->r;
    int nobody = r->method == HTTP_M_HEAD || status == 204 || status == 304;
    const char *cl = nodeclient_header(hx, "Content-Length");
    uint64_t clen = 0;
    if (cl ? parse_u64(cl, strlen(cl), &clen) : !nobody) {
        x->why = "the target's answer has no Content-Length";
        return -1;
    }
    s3relay_headers(r, hx);
    http_resp_begin(r, status, (int64_t)clen);
    x->st = R_WAIT_DRAIN;
    x->body_len = nobody ? 0 : clen;
    int splice = x->body_len > RELAY_COPY_MAX && !http_req_tls(r) && !nodeclient_xfer_tls(hx);
    return splice ? NODECLIENT_TAKE_BODY : 0;
}

static void relay_resume(struct http_req *r)
{
    struct relay *x = r->data;
    r->on_drain = NULL;
    if (x && x->hx)
        nodeclient_resume(x->hx);
}

/* A body as bytes: a small one, or any over HTTPS. */
static int on_piece(void *arg, struct nodeclient_xfer *hx, const char *p, size_t n)
{
    struct relay *x = arg;
    http_resp_write(x->r, p, n);
    if (http_resp_pending(x->r) > RELAY_HIGH) {
        nodeclient_pause(hx);
        x->r->on_drain = relay_resume;
    }
    return 0;
}

static void on_end(void *arg, struct nodeclient_xfer *hx, int status, const char *err)
{
    struct relay *x = arg;
    (void)hx;
    x->hx = NULL;
    if (status)
        body_done(x);
    else
        relay_fail(x, x->why ? x->why : err);
}

static void relay_drain(struct http_req *r);

static void pumped(void *arg, const char *err, enum pump_side side)
{
    struct relay *x = arg;
    (void)side;
    if (err)
        relay_fail(x, err);
    else
        body_done(x);
}

/* Splice the rest of the body to the client once its output (the head
 * and the bytes that came with it) is out. */
static void relay_body(struct relay *x)
{
    struct http_req *r = x->r;
    int cfd = http_resp_fd(r);
    if (cfd < 0) {
        r->on_drain = relay_drain; /* output still queued: wait for it */
        return;
    }
    r->on_drain = NULL;
    x->st = R_BODY;
    x->pump = pump_start(x->base, x->b->fd, cfd, x->left, RELAY_IDLE_S, pumped, x);
    if (!x->pump)
        relay_fail(x, strerror(errno));
}

static void relay_drain(struct http_req *r)
{
    struct relay *x = r->data;
    if (x && x->st == R_WAIT_DRAIN && x->b)
        relay_body(x);
}

/* A large body: its socket is ours. */
static void on_taken(void *arg, struct nodeclient_body *b)
{
    struct relay *x = arg;
    x->hx = NULL;
    x->b = b;
    http_resp_write(x->r, b->pre, b->pre_len);
    x->left = b->left;
    if (x->left == 0)
        body_done(x);
    else
        relay_body(x);
}

static const struct nodeclient_ops relay_ops = {
    .on_headers = on_head,
    .on_data = on_piece,
    .on_done = on_end,
    .on_taken = on_taken,
};

/* ---- the request ------------------------------------------------------------------- */

void s3relay_get(struct http_req *r, char *url, const char *const *hdrs, int n)
{
    struct relay *x = xcalloc(1, sizeof(*x));
    x->r = r;
    x->base = r->w->base;
    http_req_ref(r);
    r->data = x;
    r->on_abort = relay_abort;
    /* over HTTPS the whole body comes through nodeclient: its deadline is the body's */
    long ms = http_req_tls(r) || url_is_https(url) ? RELAY_BYTES_MS : RELAY_HEAD_MS;
    x->hx = nodeclient_start(worker_hc(r), r->method == HTTP_M_HEAD ? "HEAD" : "GET", url, hdrs, n,
                             -1, ms, &relay_ops, x);
    free(url);
}
