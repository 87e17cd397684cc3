/*
 * s3relay: S3 GET and HEAD forwarded without copying the body through the
 * proxy. The request goes to the owning target over a raw keep-alive
 * connection from the worker's pool; llhttp reads the response head, which
 * is relayed; then the body moves target socket -> pipe -> client socket
 * with splice(2), waiting on whichever side is not ready (backpressure
 * both ways). A body of up to RELAY_COPY_MAX that arrived with the head is
 * written as bytes instead. A connection goes back to the pool only after
 * a whole, keep-alive response; one that failed at once after being
 * reused (the target closed it while idle) is retried on a new one.
 *
 * Thread: everything runs on the worker's loop.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <llhttp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hc.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "s3.h"
#include "s3relay.h"
#include "util.h"
#include "worker.h"

#define HEAD_MAX (64 * 1024)     /* a response head larger than this fails */
#define RELAY_COPY_MAX (64 * 1024)
#define PIPE_BYTES (1 << 20)

enum rstate { R_CONNECT, R_SEND, R_HEAD, R_WAIT_DRAIN, R_BODY };

struct relay {
    struct http_req *r;
    struct proxy_worker *pw;
    struct event_base *base;
    struct tconn *c;
    struct hc_dial *dial;        /* connecting a new connection */
    int reused;
    enum rstate st;
    char *url;
    struct gbuf req;             /* the request head to send */
    size_t sent;
    struct event *tev;           /* on the target's socket */
    struct event *cev;           /* on the client's socket, while splicing */
    llhttp_t parser;
    llhttp_settings_t settings;
    char *buf;                   /* the response head as read */
    size_t blen;
    size_t body_at;              /* where the body starts in buf */
    struct gbuf hname, hval;
    int in_value;
    int head_done;
    int status;
    int64_t clen;
    int keepalive;
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

static void relay_free(struct relay *x, int reuse)
{
    if (x->dial)
        hc_dial_cancel(x->dial);
    if (x->tev)
        event_free(x->tev);
    if (x->cev)
        event_free(x->cev);
    if (x->c) {
        if (reuse)
            worker_conn_put(x->pw, x->c);
        else
            worker_conn_close(x->c);
    }
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
    gbuf_free(&x->req);
    gbuf_free(&x->hname);
    gbuf_free(&x->hval);
    free(x->buf);
    free(x->url);
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

/* ---- the response head --------------------------------------------------------- */

static int flush_header(struct relay *x)
{
    if (!x->hname.n)
        return 0;
    const char *n = x->hname.p, *v = x->hval.p ? x->hval.p : "";
    if (!strcasecmp(n, "Content-Length")) {
        uint64_t len;
        if (!parse_u64(v, strlen(v), &len))
            x->clen = (int64_t)len;
    } else if (s3relay_header(n)) {
        http_resp_header(x->r, n, "%s", v);
    }
    x->hname.n = x->hval.n = 0;
    if (x->hname.p)
        x->hname.p[0] = '\0';
    if (x->hval.p)
        x->hval.p[0] = '\0';
    return 0;
}

static int on_hfield(llhttp_t *p, const char *at, size_t n)
{
    struct relay *x = p->data;
    if (x->in_value)
        flush_header(x);
    x->in_value = 0;
    gbuf_add(&x->hname, at, n);
    return 0;
}

static int on_hvalue(llhttp_t *p, const char *at, size_t n)
{
    struct relay *x = p->data;
    x->in_value = 1;
    gbuf_add(&x->hval, at, n);
    return 0;
}

static int on_hdone(llhttp_t *p)
{
    struct relay *x = p->data;
    flush_header(x);
    x->head_done = 1;
    x->status = p->status_code;
    x->keepalive = llhttp_should_keep_alive(p);
    return HPE_PAUSED;
}

static void relay_step(struct relay *x);

/* The whole answer is relayed. */
static void body_done(struct relay *x)
{
    struct http_req *r = x->r;
    struct proxy *p = r->w->ctx;
    node_count_bytes(&p->node, 0, x->body_len);
    http_resp_end(r);
    relay_free(x, x->keepalive);
}

/* The head is in: relay it and whatever body came with it. */
static void head_in(struct relay *x)
{
    struct http_req *r = x->r;
    int nobody = r->method == HTTP_M_HEAD || x->status == 204 || x->status == 304;
    if (x->clen < 0 && !nobody) {
        relay_fail(x, "the target's answer has no Content-Length");
        return;
    }
    http_resp_begin(r, x->status, nobody ? (x->clen < 0 ? 0 : x->clen) : x->clen);
    x->st = R_WAIT_DRAIN;
    if (nobody) {
        body_done(x);
        return;
    }
    x->body_len = (uint64_t)x->clen;
    size_t have = x->blen - x->body_at;
    if (have > (uint64_t)x->clen)
        have = (size_t)x->clen; /* never read past this response */
    http_resp_write(r, x->buf + x->body_at, have);
    x->left = (uint64_t)x->clen - have;
    if (x->left == 0) {
        body_done(x);
        return;
    }
    relay_step(x);
}

/* ---- moving the body -------------------------------------------------------- */

static void tev_cb(evutil_socket_t fd, short what, void *arg);

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
        ssize_t n = read(x->c->fd, tmp, x->left < sizeof(tmp) ? (size_t)x->left : sizeof(tmp));
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
    int tfd = x->c->fd;
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

/* ---- connect, send, read the head ------------------------------------------------ */

static void relay_connect(struct relay *x);

static void retry_or_fail(struct relay *x, const char *why)
{
    if (x->reused && x->st <= R_HEAD && x->blen == 0) {
        /* an idle connection the target had closed: once more, fresh */
        event_free(x->tev);
        x->tev = NULL;
        close(x->c->fd);
        x->c->fd = -1;
        x->reused = 0;
        x->sent = 0;
        relay_connect(x);
        return;
    }
    relay_fail(x, why);
}

static void tev_cb(evutil_socket_t fd, short what, void *arg)
{
    struct relay *x = arg;
    (void)what;
    if (x->st == R_SEND) {
        while (x->sent < x->req.n) {
            ssize_t n = send(fd, x->req.p + x->sent, x->req.n - x->sent, MSG_NOSIGNAL);
            if (n > 0) {
                x->sent += (size_t)n;
            } else if (n < 0 && errno == EAGAIN) {
                event_assign(x->tev, x->base, fd, EV_WRITE, tev_cb, x);
                event_add(x->tev, NULL);
                return;
            } else if (n < 0 && errno != EINTR) {
                retry_or_fail(x, strerror(errno));
                return;
            }
        }
        x->st = R_HEAD;
        event_assign(x->tev, x->base, fd, EV_READ, tev_cb, x);
    }
    if (x->st == R_HEAD) {
        for (;;) {
            if (x->blen == HEAD_MAX) {
                relay_fail(x, "the target's answer head is too large");
                return;
            }
            ssize_t n = read(fd, x->buf + x->blen, HEAD_MAX - x->blen);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN) {
                event_add(x->tev, NULL);
                return;
            }
            if (n <= 0) {
                retry_or_fail(x, n == 0 ? "the target closed the connection" : strerror(errno));
                return;
            }
            size_t from = x->blen;
            x->blen += (size_t)n;
            llhttp_errno_t e = llhttp_execute(&x->parser, x->buf + from, (size_t)n);
            if (e == HPE_PAUSED) {
                x->body_at = (size_t)(llhttp_get_error_pos(&x->parser) - x->buf);
                head_in(x);
                return;
            }
            if (e != HPE_OK) {
                relay_fail(x, llhttp_errno_name(e));
                return;
            }
        }
    }
    relay_step(x); /* R_BODY: the target's socket is readable */
}

static void dial_done(void *arg, int fd, const char *err)
{
    struct relay *x = arg;
    x->dial = NULL;
    if (fd < 0) {
        relay_fail(x, err);
        return;
    }
    x->c->fd = fd;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    x->st = R_SEND;
    x->tev = event_new(x->base, fd, EV_WRITE, tev_cb, x);
    event_add(x->tev, NULL);
}

/* A new connection through the worker's client: resolved and connected
 * without blocking the loop; dial_done goes on. */
static void relay_connect(struct relay *x)
{
    x->st = R_CONNECT;
    x->dial = hc_dial(x->pw->hc, x->c->host, x->c->port, dial_done, x);
}

void s3relay_get(struct http_req *r, char *url, const char *const *hdrs, int n)
{
    struct relay *x = xcalloc(1, sizeof(*x));
    x->r = r;
    x->pw = r->w->local;
    x->base = r->w->base;
    x->url = url;
    x->clen = -1;
    char host[sizeof(x->c->host)], line[sizeof(host) + 64];
    int port;
    const char *path;
    if (hc_url_split(url, host, sizeof(host), &port, &path)) {
        s3_fail(r, S3E_INTERNAL_ERROR, "a target's URL is not usable: %.200s", url);
        free(x);
        free(url);
        return;
    }
    gbuf_str(&x->req, r->method == HTTP_M_HEAD ? "HEAD " : "GET ");
    gbuf_str(&x->req, path);
    int v6 = strchr(host, ':') != NULL;
    snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: %s%s%s:%d\r\n", v6 ? "[" : "", host,
             v6 ? "]" : "", port);
    gbuf_str(&x->req, line);
    for (int i = 0; i < n; i++) {
        gbuf_str(&x->req, hdrs[i]);
        gbuf_str(&x->req, "\r\n");
    }
    gbuf_str(&x->req, "\r\n");
    x->buf = xmalloc(HEAD_MAX);
    llhttp_settings_init(&x->settings);
    x->settings.on_header_field = on_hfield;
    x->settings.on_header_value = on_hvalue;
    x->settings.on_headers_complete = on_hdone;
    llhttp_init(&x->parser, HTTP_RESPONSE, &x->settings);
    x->parser.data = x;
    http_req_ref(r);
    r->data = x;
    r->on_abort = relay_abort;
    x->c = worker_conn_take(x->pw, host, port);
    if (x->c) {
        x->reused = 1;
        x->st = R_SEND;
        x->tev = event_new(x->base, x->c->fd, EV_WRITE, tev_cb, x);
        event_active(x->tev, EV_WRITE, 0);
        return;
    }
    x->c = xcalloc(1, sizeof(*x->c));
    snprintf(x->c->host, sizeof(x->c->host), "%s", host);
    x->c->port = port;
    x->c->fd = -1;
    relay_connect(x);
}
