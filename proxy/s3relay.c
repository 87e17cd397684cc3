/*
 * s3relay: S3 GET and HEAD forwarded without copying a large body through
 * the proxy. The request goes to the owning target through the worker's
 * hc (its pooled keep-alive connections); the answer's head is relayed
 * as it comes. A body of up to RELAY_COPY_MAX comes through hc as bytes;
 * a larger one is taken as hc's socket (HC_TAKE_BODY) and moves target
 * socket -> pipe -> client socket with splice(2), waiting on whichever
 * side is not ready (backpressure both ways). The connection goes back to
 * hc's pool after a whole body.
 *
 * Thread: everything runs on the worker's loop.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hc.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "s3.h"
#include "s3relay.h"
#include "util.h"
#include "worker.h"

#define RELAY_COPY_MAX (64 * 1024)
#define RELAY_HEAD_MS 300000     /* the target's head and a small body, at most */
#define PIPE_BYTES (1 << 20)

enum rstate { R_HEAD, R_WAIT_DRAIN, R_BODY };

struct relay {
    struct http_req *r;
    struct event_base *base;
    struct hc_xfer *hx;          /* until the head and a small body are in */
    struct hc_body *b;           /* a large body's socket, taken from hc */
    enum rstate st;
    const char *why;             /* why on_headers stopped the transfer */
    struct event *tev;           /* on the target's socket */
    struct event *cev;           /* on the client's socket, while splicing */
    uint64_t body_len;           /* the answer's body bytes */
    uint64_t left;               /* body bytes still to move */
    int pipefd[2];
    size_t in_pipe;
};

/* ---- which headers pass ------------------------------------------------------ */

int s3relay_header(const char *name)
{
    static const char *const keep[] = {
        "ETag", "Last-Modified", "Content-Type", "Content-Range", "Accept-Ranges",
        "Content-Language", "Expires", "Cache-Control", "Content-Disposition",
        "Content-Encoding", "X-Shoal-Cache", "X-Shoal-Checksum", "X-Shoal-Version",
    };
    if (!strncasecmp(name, "x-amz-", 6))
        return 1;
    for (size_t i = 0; i < ARRAY_LEN(keep); i++)
        if (!strcasecmp(name, keep[i]))
            return 1;
    return 0;
}

/* ---- lifetime ------------------------------------------------------------------ */

static void relay_free(struct relay *x, int whole)
{
    if (x->hx)
        hc_cancel(x->hx);
    if (x->tev)
        event_free(x->tev);
    if (x->cev)
        event_free(x->cev);
    if (x->b)
        hc_body_end(x->b, whole);
    if (x->pipefd[0] > 0) {
        close(x->pipefd[0]);
        close(x->pipefd[1]);
    }
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
    else
        s3_fail(r, S3E_SERVICE_UNAVAILABLE, "the storage target did not answer: %s", why);
    relay_free(x, 0);
}

static void relay_abort(struct http_req *r)
{
    struct relay *x = r->data;
    relay_free(x, 0); /* detaches from r and drops our reference */
}

/* ---- the answer's head ----------------------------------------------------------- */

static void relay_step(struct relay *x);

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
static int on_head(void *arg, struct hc_xfer *hx, int status)
{
    struct relay *x = arg;
    struct http_req *r = x->r;
    int nobody = r->method == HTTP_M_HEAD || status == 204 || status == 304;
    const char *cl = hc_header(hx, "Content-Length");
    uint64_t clen = 0;
    if (cl ? parse_u64(cl, strlen(cl), &clen) : !nobody) {
        x->why = "the target's answer has no Content-Length";
        return -1;
    }
    for (int i = 0; i < hc_header_count(hx); i++) {
        const char *v, *n = hc_header_at(hx, i, &v);
        if (s3relay_header(n))
            http_resp_header(r, n, "%s", v);
    }
    http_resp_begin(r, status, (int64_t)clen);
    x->st = R_WAIT_DRAIN;
    x->body_len = nobody ? 0 : clen;
    return x->body_len > RELAY_COPY_MAX ? HC_TAKE_BODY : 0;
}

/* A small body, as bytes. */
static int on_piece(void *arg, struct hc_xfer *hx, const char *p, size_t n)
{
    struct relay *x = arg;
    (void)hx;
    http_resp_write(x->r, p, n);
    return 0;
}

static void on_end(void *arg, struct hc_xfer *hx, int status, const char *err)
{
    struct relay *x = arg;
    (void)hx;
    x->hx = NULL;
    if (status)
        body_done(x);
    else
        relay_fail(x, x->why ? x->why : err);
}

/* The target's socket is readable. */
static void tev_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    relay_step(arg);
}

/* A large body: its socket is ours; splice it once the head is out. */
static void on_taken(void *arg, struct hc_body *b)
{
    struct relay *x = arg;
    x->hx = NULL;
    x->b = b;
    http_resp_write(x->r, b->pre, b->pre_len);
    x->left = b->left;
    x->tev = event_new(x->base, b->fd, EV_READ, tev_cb, x);
    if (x->left == 0)
        body_done(x);
    else
        relay_step(x);
}

static const struct hc_ops relay_ops = {on_head, on_piece, NULL, on_end, on_taken};

/* ---- moving the body -------------------------------------------------------- */

static void cev_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    relay_step(arg);
}

static void relay_drain(struct http_req *r)
{
    struct relay *x = r->data;
    if (x && x->st == R_WAIT_DRAIN)
        relay_step(x);
}

/* A small rest (no pipe): read it and queue it as bytes. */
static void relay_copy(struct relay *x)
{
    char tmp[16384];
    for (;;) {
        ssize_t n = read(x->b->fd, tmp, x->left < sizeof(tmp) ? (size_t)x->left : sizeof(tmp));
        if (n > 0) {
            http_resp_write(x->r, tmp, (size_t)n);
            x->left -= (uint64_t)n;
            if (x->left == 0) {
                body_done(x);
                return;
            }
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            event_add(x->tev, NULL);
            return;
        } else {
            relay_fail(x, n == 0 ? "the target closed mid-body" : strerror(errno));
            return;
        }
    }
}

/* Move what can move without blocking; arm the event of the side that
 * is not ready. */
static void relay_step(struct relay *x)
{
    struct http_req *r = x->r;
    if (x->st == R_WAIT_DRAIN) {
        int cfd = http_resp_fd(r);
        if (cfd < 0) {
            r->on_drain = relay_drain; /* output still queued: wait for it */
            return;
        }
        if (x->left <= RELAY_COPY_MAX || pipe2(x->pipefd, O_CLOEXEC | O_NONBLOCK)) {
            x->pipefd[0] = x->pipefd[1] = 0;
        } else {
            fcntl(x->pipefd[1], F_SETPIPE_SZ, PIPE_BYTES);
            x->cev = event_new(x->base, cfd, EV_WRITE, cev_cb, x);
        }
        x->st = R_BODY;
    }
    int cfd = http_resp_fd(r);
    int tfd = x->b->fd;
    if (!x->cev) {
        relay_copy(x);
        return;
    }
    if (cfd < 0) {
        relay_fail(x, "the client connection is gone");
        return;
    }
    for (;;) {
        int in_wait = 0, out_wait = 0;
        if (x->left > 0 && x->in_pipe < PIPE_BYTES) {
            size_t want = x->left < PIPE_BYTES - x->in_pipe ? (size_t)x->left
                                                              : PIPE_BYTES - x->in_pipe;
            ssize_t n = splice(tfd, NULL, x->pipefd[1], NULL, want,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                x->in_pipe += (size_t)n;
                x->left -= (uint64_t)n;
            } else if (n == 0) {
                relay_fail(x, "the target closed mid-body");
                return;
            } else if (errno == EAGAIN) {
                in_wait = 1;
            } else if (errno != EINTR) {
                relay_fail(x, strerror(errno));
                return;
            }
        }
        if (x->in_pipe > 0) {
            ssize_t n = splice(x->pipefd[0], NULL, cfd, NULL, x->in_pipe,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                x->in_pipe -= (size_t)n;
            } else if (n < 0 && errno == EAGAIN) {
                out_wait = 1;
            } else if (n < 0 && errno != EINTR) {
                /* the client went away: on_abort follows from the layer */
                relay_fail(x, strerror(errno));
                return;
            }
        }
        if (x->left == 0 && x->in_pipe == 0) {
            body_done(x);
            return;
        }
        int can_in = x->left > 0 && x->in_pipe < PIPE_BYTES && !in_wait;
        int can_out = x->in_pipe > 0 && !out_wait;
        if (can_in || can_out)
            continue;
        /* splice-in's EAGAIN means "socket empty" only with an empty pipe
         * (a pipe fills by page slots, before PIPE_BYTES of bytes): wait
         * on the target then, else on the client */
        if (out_wait)
            event_add(x->cev, NULL);
        if (in_wait && x->in_pipe == 0)
            event_add(x->tev, NULL);
        return;
    }
}

/* ---- the request ------------------------------------------------------------------- */

void s3relay_get(struct http_req *r, char *url, const char *const *hdrs, int n)
{
    struct relay *x = xcalloc(1, sizeof(*x));
    x->r = r;
    x->base = r->w->base;
    http_req_ref(r);
    r->data = x;
    r->on_abort = relay_abort;
    x->hx = hc_start(worker_hc(r), r->method == HTTP_M_HEAD ? "HEAD" : "GET", url, hdrs, n, -1,
                     RELAY_HEAD_MS, &relay_ops, x);
    free(url);
}
