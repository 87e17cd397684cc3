/*
 * nodeclient: the intra-cluster HTTP client (see nodeclient.h).
 *
 * A request owns its bytes to send (kept whole, so that a retry can send
 * them again) and its answer's parser. A connection is either idle in the
 * pool or carries exactly one request; it goes back to the pool only after
 * a whole answer that allows keep-alive with nothing after it, so a pooled
 * connection never holds stray bytes. An idle connection that hears
 * anything (the peer's close, or bytes nobody asked for) is dropped.
 *
 * Every failure, even one found inside nodeclient_request (a bad URL, a connect
 * that fails at once), is reported from the request's timer event, armed
 * to fire at once: the callback never runs inside nodeclient_request.
 *
 * Thread: the loop of the nodeclient.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <fcntl.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "headblock.h"
#include "nodeclient.h"
#include "nodeclient_int.h"
#include "tls.h"
#include "url.h"
#include "util.h"

#define NODECLIENT_IDLE_MAX 64   /* pooled connections per nodeclient */
#define NODECLIENT_FEED 262144   /* bytes handed to llhttp at a time */
#define NODECLIENT_HEAD_READ 32768 /* a read before the answer's head is in, at most:
                                  * a body taken as the socket moves the rest */
#define NODECLIENT_HEAD_MAX 65536 /* an answer's header block, at most */
#define NODECLIENT_EXPECT_S 1    /* a 100 Continue awaited this long at most */

static void conn_free(struct nodeclient_conn *k)
{
    if (k->rev)
        event_free(k->rev);
    /* bufferevent_free frees the input later, on the loop: drop its bytes
     * now, so that no reference to the client's rbuf outlives k */
    struct evbuffer *in = bufferevent_get_input(k->bev);
    evbuffer_drain(in, evbuffer_get_length(in));
    bufferevent_free(k->bev);
    free(k);
}

static void idle_remove(struct nodeclient *c, struct nodeclient_conn *k)
{
    for (struct nodeclient_conn **pp = &c->idle; *pp; pp = &(*pp)->next)
        if (*pp == k) {
            *pp = k->next;
            c->n_idle--;
            return;
        }
}

/* Close x's connection, if it still has one: it was not finished
 * cleanly, so it is never reused. */
static void drop_conn(struct nodeclient_xfer *x)
{
    if (x->conn) {
        x->conn->x = NULL;
        conn_free(x->conn);
        x->conn = NULL;
    }
}

/* Unlink and free x, closing its connection. No callback. */
static void xfer_free(struct nodeclient_xfer *x)
{
    struct nodeclient *c = x->c;
    drop_conn(x);
    if (x->prev)
        x->prev->next = x->next;
    else
        c->xfers = x->next;
    if (x->next)
        x->next->prev = x->prev;
    event_free(x->timer);
    event_free(x->kick);
    if (x->expect_ev)
        event_free(x->expect_ev);
    gbuf_free(&x->out);
    headblock_free(&x->hb);
    gbuf_free(&x->body);
    free(x->hdr);
    free(x);
}

/* The transfer is over: report it, then free it. */
void nodeclient_finish(struct nodeclient_xfer *x, int status, const char *err)
{
    drop_conn(x);                /* before reporting: the callback may start more */
    x->ops->on_done(x->arg, x, status, err);
    xfer_free(x);
}

/* Fail x from its timer, at once (never inside nodeclient_start's caller). */
void nodeclient_fail_later(struct nodeclient_xfer *x, const char *why)
{
    snprintf(x->err, sizeof(x->err), "%s", why);
    struct timeval now = {0, 0};
    evtimer_add(x->timer, &now);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct nodeclient_xfer *x = arg;
    (void)fd;
    (void)what;
    if (!x->err[0])
        x->fail = NODECLIENT_FAIL_TIMEOUT;
    nodeclient_finish(x, 0, x->err[0] ? x->err : "timed out");
}

static void send_mem(struct nodeclient_xfer *x);
static void on_expect_timeout(evutil_socket_t fd, short what, void *arg);

/* ---- the answer ------------------------------------------------------------- */

/* Header spans gather in x->hb (common/headblock.h); trailers after a
 * chunked body are not kept (the head's pointers into hb must stay). */
static int on_hdr_span(llhttp_t *p, const char *at, size_t n)
{
    struct nodeclient_xfer *x = p->data;
    return x->headers_done || !headblock_add(&x->hb, at, n) ? 0 : HPE_USER;
}

static int on_hdr_end(llhttp_t *p)
{
    struct nodeclient_xfer *x = p->data;
    return x->headers_done || !headblock_end(&x->hb) ? 0 : HPE_USER;
}

static int on_field_end(llhttp_t *p)
{
    struct nodeclient_xfer *x = p->data;
    if (!x->headers_done && ++x->n_hdrs > 200)
        return HPE_USER;
    return on_hdr_end(p);
}

static int on_headers_complete(llhttp_t *p)
{
    struct nodeclient_xfer *x = p->data;
    if (p->status_code < 200) {  /* an interim answer: the real one follows */
        headblock_reset(&x->hb);
        x->n_hdrs = 0;
        if (p->status_code == 100 && x->expect_wait)
            send_mem(x);
        return 0;
    }
    x->hdr = xcalloc((size_t)x->n_hdrs + 1, sizeof(*x->hdr));
    if (headblock_pairs(x->hb.b.p, x->hb.b.n, 0, x->n_hdrs, x->hdr))
        return HPE_USER;
    x->headers_done = 1;
    int rc = x->ops->on_headers ? x->ops->on_headers(x->arg, x, p->status_code) : 0;
    if (rc < 0) {
        x->stopped = 1;
        return HPE_USER;
    }
    if (x->head || p->status_code == 204 || p->status_code == 304)
        return 1;
    if (rc == NODECLIENT_TAKE_BODY && !x->tls && (p->flags & F_CONTENT_LENGTH) &&
        !(p->flags & F_CHUNKED) && p->content_length > 0) {
        x->taking = 1;
        return HPE_PAUSED;       /* parse_input hands the socket over */
    }
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct nodeclient_xfer *x = p->data;
    if (x->ops->on_data && x->ops->on_data(x->arg, x, at, n)) {
        x->stopped = 1;
        return HPE_USER;
    }
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct nodeclient_xfer *x = p->data;
    if (p->status_code < 200)
        return 0;
    x->complete = 1;
    return HPE_PAUSED;
}

static void on_read(struct nodeclient_conn *k);
static void on_write(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);
static void conn_broke(struct nodeclient_conn *k, short what, int err);

/*
 * Reading goes around the bufferevent (which only connects and writes):
 * libevent 2.1's evbuffer reads at most 4 KiB a call, so a large answer
 * would cost a loop pass per 4 KiB. nodeclient reads up to NODECLIENT_FEED at a time
 * straight into the input evbuffer's free space, where parse_input finds
 * it. A persistent read event's timeout is the "no progress" deadline.
 */
static void rbuf_released(const void *data, size_t len, void *arg)
{
    struct nodeclient *c = arg;
    (void)data;
    (void)len;
    c->rbuf_conn = NULL;
}

/*
 * The read lands in the nodeclient's buffer, which the input evbuffer refers to
 * (no copy) while parse_input runs; bytes still unparsed after it (a paused
 * transfer, a pipelined surplus) are copied into the evbuffer's own memory
 * before the buffer is read into again. Before an answer's head is in, a
 * read takes at most NODECLIENT_HEAD_READ, so that a body taken as the socket has
 * little in user space.
 */
static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct nodeclient_conn *k = arg;
    struct nodeclient *c = k->c;
    if (what & EV_TIMEOUT) {
        conn_broke(k, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
        return;
    }
    size_t want = k->x && k->x->headers_done ? NODECLIENT_FEED : NODECLIENT_HEAD_READ;
    ssize_t n = read(fd, c->rbuf, want);
    if (n == 0) {
        conn_broke(k, BEV_EVENT_READING | BEV_EVENT_EOF, 0);
        return;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            conn_broke(k, BEV_EVENT_READING | BEV_EVENT_ERROR, errno);
        return;
    }
    struct evbuffer *in = bufferevent_get_input(k->bev);
    evbuffer_unfreeze(in, 0);    /* a socket bufferevent freezes its input's end */
    c->rbuf_conn = k;
    evbuffer_add_reference(in, c->rbuf, (size_t)n, rbuf_released, c);
    evbuffer_freeze(in, 0);
    on_read(k);                  /* k may be gone after it, and then rbuf is free */
    if (c->rbuf_conn) {          /* k is alive, its input still refers to rbuf */
        struct nodeclient_conn *h = c->rbuf_conn;
        struct evbuffer *rest = evbuffer_new();
        evbuffer_add_buffer(rest, bufferevent_get_input(h->bev));
        size_t left = evbuffer_get_length(rest);
        char *copy = xmalloc(left + 1);
        evbuffer_remove(rest, copy, left);       /* releases rbuf */
        evbuffer_free(rest);
        in = bufferevent_get_input(h->bev);
        evbuffer_unfreeze(in, 0);
        evbuffer_add(in, copy, left);
        evbuffer_freeze(in, 0);
        free(copy);
    }
}

/* HTTPS: OpenSSL's bufferevent decrypted bytes into k's input. */
static void tls_readable(struct bufferevent *bev, void *arg)
{
    struct nodeclient_conn *k = arg;
    (void)bev;
    if (k->idle_on > 0) {
        struct timeval tv = {k->idle_on, 0};
        evtimer_add(k->rev, &tv);
    }
    on_read(k);
}

static void tls_idle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_broke(arg, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
}

/* Read k's socket (once it is connected), failing after idle_s without a
 * byte when idle_s > 0. */
static void read_on(struct nodeclient_conn *k, int idle_s)
{
    k->reading = 1;
    k->idle_on = idle_s;
    if (!k->connected)
        return;                  /* on_event starts it */
    if (k->tls) {
        if (!k->rev)
            k->rev = evtimer_new(k->c->base, tls_idle, k);
        struct timeval tv = {idle_s, 0};
        if (idle_s > 0)
            evtimer_add(k->rev, &tv);
        else
            evtimer_del(k->rev);
        bufferevent_enable(k->bev, EV_READ);
        return;
    }
    if (!k->rev)
        k->rev = event_new(k->c->base, bufferevent_getfd(k->bev), EV_READ | EV_PERSIST,
                           on_readable, k);
    struct timeval tv = {idle_s, 0};
    event_add(k->rev, idle_s > 0 ? &tv : NULL);
}

static void read_off(struct nodeclient_conn *k)
{
    k->reading = 0;
    if (k->rev)
        event_del(k->rev);
    if (k->tls)
        bufferevent_disable(k->bev, EV_READ);
}

/* A new deadline for reading, kept while reading is off. */
void nodeclient_read_idle(struct nodeclient_conn *k, int idle_s)
{
    if (k->reading)
        read_on(k, idle_s);
    else
        k->idle_on = idle_s;
}

/* Keep an idle connection for the next request to its peer (or close it
 * when the pool is full). */
static void pool_put(struct nodeclient *c, struct nodeclient_conn *k)
{
    if (c->n_idle >= NODECLIENT_IDLE_MAX) {
        conn_free(k);
        return;
    }
    k->x = NULL;
    k->reused = 1;
    k->next = c->idle;
    c->idle = k;
    c->n_idle++;
    bufferevent_set_timeouts(k->bev, NULL, NULL);
    read_on(k, 0);               /* an idle connection's EOF closes it */
}

/* Nothing of x's request is left unsent: its connection may carry another. */
static int all_sent(const struct nodeclient_xfer *x)
{
    return nodeclient_upload_over(x) &&
           evbuffer_get_length(bufferevent_get_output(x->conn->bev)) == 0;
}

/* x's whole answer is in: pool or close the connection, then report. */
static void deliver(struct nodeclient_xfer *x, int keep)
{
    if (keep && all_sent(x)) {
        pool_put(x->c, x->conn);
        x->conn = NULL;
    }
    nodeclient_finish(x, x->parser.status_code, NULL);
}

/* The head is in and the caller takes the body's socket: hand it over
 * with the body bytes already read, then end x without on_done. */
static void take_body(struct nodeclient_xfer *x)
{
    struct nodeclient_conn *k = x->conn;
    struct evbuffer *in = bufferevent_get_input(k->bev);
    uint64_t clen = x->parser.content_length;
    size_t have = evbuffer_get_length(in);
    struct nodeclient_body *b = xcalloc(1, sizeof(*b));
    b->c = x->c;
    snprintf(b->host, sizeof(b->host), "%s", x->host);
    b->port = x->port;
    b->pre_len = have < clen ? have : (size_t)clen;
    b->pre = xmalloc(b->pre_len + 1);
    evbuffer_remove(in, b->pre, b->pre_len);
    b->left = clen - b->pre_len;
    /* a peer that sent more than this answer is not trusted with another */
    b->keep = llhttp_should_keep_alive(&x->parser) && have <= clen && all_sent(x);
    b->fd = bufferevent_getfd(k->bev);
    read_off(k);
    bufferevent_disable(k->bev, EV_WRITE);
    bufferevent_setfd(k->bev, -1);   /* the socket is b's now */
    drop_conn(x);
    x->ops->on_taken(x->arg, b);
    xfer_free(x);
}

void nodeclient_body_end(struct nodeclient_body *b, int whole)
{
    if (whole && b->keep) {
        struct nodeclient_conn *k = xcalloc(1, sizeof(*k));
        k->c = b->c;
        snprintf(k->host, sizeof(k->host), "%s", b->host);
        k->port = b->port;
        k->bev = bufferevent_socket_new(b->c->base, b->fd, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(k->bev, NULL, on_write, on_event, k);
        k->connected = 1;
        pool_put(b->c, k);
    } else {
        close(b->fd);
    }
    free(b->pre);
    free(b);
}


/* The connection under x ended before x's whole answer. A pooled
 * connection the peer closed (EOF or a reset, not a timeout) before any of
 * the answer came is the peer's idle close racing the request: the request
 * is sent once more, fresh, when sending it twice is harmless (an
 * idempotent method, none of its upload taken from its source). */
static void conn_lost(struct nodeclient_xfer *x, int closed, const char *why)
{
    struct nodeclient_conn *k = x->conn;
    if (closed && k->reused && x->idempotent && !x->got_bytes &&
        (x->up_sent == 0 || x->up_mem) && !x->up_socket &&
        !x->up_waiting && x->tries < 2) {
        /* a pooled connection the peer had closed: send again, fresh */
        drop_conn(x);
        nodeclient_send_on(x, 1);
        return;
    }
    nodeclient_finish(x, 0, why);
}

/* Feed what the socket has to the parser while x is not paused. */
static void parse_input(struct nodeclient_xfer *x)
{
    struct evbuffer *in = bufferevent_get_input(x->conn->bev);
    x->in_cb = 1;
    while (!x->complete && !x->paused) {
        struct evbuffer_iovec v;
        if (evbuffer_get_length(in) == 0 || evbuffer_peek(in, NODECLIENT_FEED, NULL, &v, 1) < 1)
            break;
        size_t n = v.iov_len < NODECLIENT_FEED ? v.iov_len : NODECLIENT_FEED;
        x->got_bytes = 1;
        llhttp_errno_t e = llhttp_execute(&x->parser, v.iov_base, n);
        if (e == HPE_PAUSED) {
            evbuffer_drain(in, (size_t)(llhttp_get_error_pos(&x->parser) - (char *)v.iov_base));
            if (x->taking) {
                x->in_cb = 0;
                take_body(x);
                return;
            }
            break;
        }
        if (e != HPE_OK) {
            x->in_cb = 0;
            x->fail = x->stopped ? NODECLIENT_FAIL_CANCELLED : NODECLIENT_FAIL_PROTOCOL;
            nodeclient_finish(x, 0, x->stopped ? "cancelled" : "malformed answer");
            return;
        }
        evbuffer_drain(in, n);
    }
    x->in_cb = 0;
    if (x->complete) {
        deliver(x, llhttp_should_keep_alive(&x->parser) && evbuffer_get_length(in) == 0);
        return;
    }
    if (x->paused)
        read_off(x->conn);
}

static void on_read(struct nodeclient_conn *k)
{
    if (!k->x) {                 /* an idle connection has nothing to say */
        idle_remove(k->c, k);
        conn_free(k);
        return;
    }
    parse_input(k->x);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct nodeclient_conn *k = arg;
    (void)bev;
    if (k->x && k->x->up_mem && k->x->up_sent == k->x->up_len) {
        nodeclient_read_idle(k, NODECLIENT_IDLE_S); /* all out: the wait is for the answer */
        return;
    }
    if (k->x && k->x->up_socket)
        (void)nodeclient_hand_socket(k->x);
    else if (k->x && nodeclient_uploads(k->x) && !k->x->up_waiting)
        (void)nodeclient_pump_upload(k->x);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct nodeclient_conn *k = arg;
    if (what & BEV_EVENT_CONNECTED) {
        k->connected = 1;
        if (k->x)
            k->x->reached = 1;
        if (k->tls && !k->reading)
            evtimer_del(k->rev); /* the handshake's deadline */
        /* requests are single writes: never held back for an ACK */
        int one = 1;
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (k->reading)
            read_on(k, k->idle_on);
        return;
    }
    if (k->starting) {           /* conn_open reports it */
        k->start_failed = 1;
        return;
    }
    conn_broke(k, what, EVUTIL_SOCKET_ERROR());
}

/* k's connection ended, failed or made no progress (what: BEV_EVENT_*
 * bits; err: the socket error). */
static void conn_broke(struct nodeclient_conn *k, short what, int err)
{
    struct nodeclient_xfer *x = k->x;
    if (!x) {
        idle_remove(k->c, k);
        conn_free(k);
        return;
    }
    llhttp_errno_t e = (what & BEV_EVENT_EOF) && x->got_bytes ? llhttp_finish(&x->parser)
                                                                : HPE_USER;
    if ((e == HPE_OK || e == HPE_PAUSED) && x->complete) {
        deliver(x, 0);           /* an answer that ends with the connection */
        return;
    }
    char why[400];
    int closed = !(what & BEV_EVENT_TIMEOUT) &&
                 (!(what & BEV_EVENT_ERROR) || err == ECONNRESET || err == EPIPE);
    x->fail = (what & BEV_EVENT_TIMEOUT) ? NODECLIENT_FAIL_TIMEOUT
              : !k->connected             ? NODECLIENT_FAIL_CONNECT
                                          : NODECLIENT_FAIL_CLOSED;
    if (what & BEV_EVENT_TIMEOUT) {
        snprintf(why, sizeof(why), "%s:%d: no progress for %d s", x->host, x->port,
                 NODECLIENT_IDLE_S);
    } else if (what & BEV_EVENT_ERROR) {
        int dns = bufferevent_socket_get_dns_error(k->bev);
        unsigned long tls_err = k->tls ? bufferevent_get_openssl_error(k->bev) : 0;
        char tls_why[256];
        if (tls_err)
            ERR_error_string_n(tls_err, tls_why, sizeof(tls_why));
        snprintf(why, sizeof(why), "%.200s:%d: %s%.120s", x->host, x->port,
                 tls_err ? "TLS: " : "",
                 tls_err ? tls_why
                 : dns   ? evutil_gai_strerror(dns)
                         : evutil_socket_error_to_string(err));
    } else {
        snprintf(why, sizeof(why), "%s:%d closed the connection", x->host, x->port);
    }
    conn_lost(x, closed, why);
}

/* Resume reading or uploading, from the loop rather than the caller's
 * stack (which may be one of x's own callbacks). */
static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    struct nodeclient_xfer *x = arg;
    (void)fd;
    (void)what;
    if (!x->conn)
        return;
    if (nodeclient_uploads(x) && !x->up_waiting && !x->up_socket && !nodeclient_upload_over(x) &&
        nodeclient_pump_upload(x))
        return;                  /* failed: x is gone */
    if (!x->paused) {
        read_on(x->conn, x->conn->idle_on);
        parse_input(x);
    }
}

/* ---- sending ------------------------------------------------------------------ */

static struct nodeclient_conn *pool_take(struct nodeclient *c, const char *host, int port, int tls)
{
    for (struct nodeclient_conn **pp = &c->idle; *pp; pp = &(*pp)->next) {
        struct nodeclient_conn *k = *pp;
        if (k->port == port && k->tls == tls && !strcmp(k->host, host)) {
            *pp = k->next;
            c->n_idle--;
            return k;
        }
    }
    return NULL;
}

/* Start bev connecting to host:port: a numeric address at once, a name
 * through evdns. 0 or -1. */
static int bev_connect(struct nodeclient *c, struct bufferevent *bev, const char *host, int port)
{
    struct sockaddr_in6 a6 = {0};
    struct sockaddr_in a4 = {0};
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)port);
        return bufferevent_socket_connect(bev, (struct sockaddr *)&a4, sizeof(a4));
    }
    if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)port);
        return bufferevent_socket_connect(bev, (struct sockaddr *)&a6, sizeof(a6));
    }
    if (!c->dns)
        c->dns = evdns_base_new(c->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    return c->dns ? bufferevent_socket_connect_hostname(bev, c->dns, AF_UNSPEC, host, port) : -1;
}

/* A new connection to host:port (tls: HTTPS), connecting; NULL with why
 * set. */
static struct nodeclient_conn *conn_open(struct nodeclient *c, const char *host, int port, int tls,
                                         char *why, size_t whylen)
{
    SSL *ssl = tls ? tls_client_ssl(host) : NULL;
    if (tls && !ssl) {
        snprintf(why, whylen, "https://%s:%d: this node has no TLS client context", host, port);
        return NULL;
    }
    struct nodeclient_conn *k = xcalloc(1, sizeof(*k));
    k->c = c;
    snprintf(k->host, sizeof(k->host), "%s", host);
    k->port = port;
    k->tls = tls;
    if (tls) {
        k->bev = bufferevent_openssl_socket_new(c->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                BEV_OPT_CLOSE_ON_FREE);   /* frees ssl on failure */
        if (!k->bev) {
            snprintf(why, whylen, "https://%s:%d: cannot start TLS", host, port);
            free(k);
            return NULL;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(k->bev, 1);
        bufferevent_setcb(k->bev, tls_readable, on_write, on_event, k);
        /* the handshake has a deadline too: a peer that takes the connection
         * and says nothing fails it in NODECLIENT_IDLE_S */
        k->rev = evtimer_new(c->base, tls_idle, k);
        struct timeval tv = {NODECLIENT_IDLE_S, 0};
        evtimer_add(k->rev, &tv);
    } else {
        k->bev = bufferevent_socket_new(c->base, -1, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(k->bev, NULL, on_write, on_event, k);
    }
    /* a name resolved at once (the hosts file) whose connect fails at once
     * reports the failure from inside bev_connect */
    k->starting = 1;
    int rc = bev_connect(c, k->bev, host, port);
    k->starting = 0;
    if (rc || k->start_failed) {
        snprintf(why, whylen, "cannot connect to %s:%d", host, port);
        conn_free(k);
        return NULL;
    }
    return k;
}

/* A request without a body is written at once, in this loop pass, not
 * after an epoll round that arms EV_WRITE and another that disarms it:
 * 1 when it is all out, 0 when the bufferevent must write the rest (or
 * meet the error), as it does over TLS and while connecting. */
static int write_now(struct nodeclient_conn *k)
{
    struct evbuffer *out = bufferevent_get_output(k->bev);
    evbuffer_unfreeze(out, 1);   /* as the bufferevent does around its own writes */
    int n = evbuffer_write(out, bufferevent_getfd(k->bev));
    evbuffer_freeze(out, 1);
    return n >= 0 && evbuffer_get_length(out) == 0;
}

/* A memory body goes out by reference, whole; the wait for the answer
 * starts once it is out (on_write). */
static void send_mem(struct nodeclient_xfer *x)
{
    struct bufferevent *bev = x->conn->bev;
    x->expect_wait = 0;
    if (x->expect_ev)
        evtimer_del(x->expect_ev);
    if (x->up_len > 0)
        evbuffer_add_reference(bufferevent_get_output(bev), x->up_mem, (size_t)x->up_len, NULL,
                               NULL);
    x->up_sent = x->up_len;
    bufferevent_enable(bev, EV_WRITE);
}

/* A peer that does not answer Expect: 100-continue in time gets the body
 * anyway, as HTTP/1.1 clients do. */
static void on_expect_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct nodeclient_xfer *x = arg;
    (void)fd;
    (void)what;
    if (x->expect_wait && x->conn)
        send_mem(x);
}

void nodeclient_send_on(struct nodeclient_xfer *x, int fresh)
{
    struct nodeclient *c = x->c;
    struct nodeclient_conn *k = fresh ? NULL : pool_take(c, x->host, x->port, x->tls);
    char why[400];
    if (!k && !(k = conn_open(c, x->host, x->port, x->tls, why, sizeof(why)))) {
        x->fail = NODECLIENT_FAIL_CONNECT;
        nodeclient_fail_later(x, why);
        return;
    }
    x->tries++;
    x->conn = k;
    x->reached = k->connected;
    k->x = x;
    x->got_bytes = x->complete = x->headers_done = 0;
    x->n_hdrs = 0;
    headblock_reset(&x->hb);
    x->body.n = 0;
    llhttp_init(&x->parser, HTTP_RESPONSE, &c->settings);
    x->parser.data = x;
    struct timeval idle = {NODECLIENT_IDLE_S, 0};
    /* while the upload runs, only a stuck write counts as no progress */
    bufferevent_set_timeouts(k->bev, NULL, &idle);
    read_on(k, nodeclient_uploads(x) ? 0 : NODECLIENT_IDLE_S);
    int now = !x->up_mem && !nodeclient_uploads(x) && !k->tls && k->connected;
    if (now)                     /* else adding output arms EV_WRITE */
        bufferevent_disable(k->bev, EV_WRITE);
    bufferevent_write(k->bev, x->out.p, x->out.n);
    if (!now || !write_now(k))
        bufferevent_enable(k->bev, EV_WRITE);
    x->up_sent = 0;
    x->up_ended = 0;
    if (x->up_mem)
        x->expect_wait = x->expect;
    if (x->up_mem && !x->expect_wait) {
        send_mem(x);
    } else if (x->expect_wait) {
        struct timeval wait = {NODECLIENT_EXPECT_S, 0};
        if (!x->expect_ev)       /* only the rare upload that waits has one */
            x->expect_ev = evtimer_new(c->base, on_expect_timeout, x);
        evtimer_add(x->expect_ev, &wait);
    }
    else if (nodeclient_uploads(x) && !x->up_mem)
        event_active(x->kick, EV_TIMEOUT, 0);   /* the first pieces, from the loop */
}



/* A transfer with its head written (Content-Length: clen unless clen < 0)
 * and its deadline set, not sent yet; one whose URL is bad is already
 * failing (x->err set). */
struct nodeclient_xfer *nodeclient_xfer_new(struct nodeclient *c, const char *method,
                                            const char *url, const char *const *hdrs, int n,
                                            int64_t clen, long timeout_ms,
                                            const struct nodeclient_ops *ops, void *arg)
{
    struct nodeclient_xfer *x = xcalloc(1, sizeof(*x));
    x->c = c;
    x->ops = ops;
    x->arg = arg;
    x->up_len = -1;
    x->head = !strcmp(method, "HEAD");
    x->idempotent = x->head || !strcmp(method, "GET") || !strcmp(method, "PUT") ||
                    !strcmp(method, "DELETE");
    x->hb.max = NODECLIENT_HEAD_MAX;
    x->timer = evtimer_new(c->base, on_timer, x);
    x->kick = event_new(c->base, -1, 0, on_kick, x);
    x->next = c->xfers;
    if (c->xfers)
        c->xfers->prev = x;
    c->xfers = x;
    const char *path;
    if (url_split(url, x->host, sizeof(x->host), &x->port, &path)) {
        x->fail = NODECLIENT_FAIL_REQUEST;
        nodeclient_fail_later(x, "not an http:// or https:// URL");
        return x;
    }
    x->tls = url_is_https(url);
    int v6 = strchr(x->host, ':') != NULL;
    gbuf_strs(&x->out, method, path[0] == '?' ? " /" : " ", path, " HTTP/1.1\r\nHost: ",
              v6 ? "[" : "", x->host, v6 ? "]:" : ":", NULL);
    gbuf_i64(&x->out, x->port);
    gbuf_add(&x->out, "\r\n", 2);
    for (int i = 0; i < n; i++)
        gbuf_strs(&x->out, hdrs[i], "\r\n", NULL);
    if (clen >= 0) {
        gbuf_str(&x->out, "Content-Length: ");
        gbuf_i64(&x->out, clen);
        gbuf_add(&x->out, "\r\n", 2);
    } else if (clen == NODECLIENT_UP_CHUNKED) {
        gbuf_str(&x->out, "Transfer-Encoding: chunked\r\n");
    }
    gbuf_add(&x->out, "\r\n", 2);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(x->timer, &tv);
    return x;
}

struct nodeclient_xfer *nodeclient_start(struct nodeclient *c, const char *method, const char *url,
                                         const char *const *hdrs, int n, int64_t upload_len,
                                         long timeout_ms, const struct nodeclient_ops *ops,
                                         void *arg)
{
    struct nodeclient_xfer *x =
        nodeclient_xfer_new(c, method, url, hdrs, n, upload_len, timeout_ms, ops, arg);
    x->up_len = upload_len;
    if (!x->err[0])
        nodeclient_send_on(x, 0);
    return x;
}

struct nodeclient_xfer *nodeclient_start_mem(struct nodeclient *c, const char *method,
                                             const char *url, const char *const *hdrs, int n,
                                             const void *body, size_t len, long timeout_ms,
                                             const struct nodeclient_ops *ops, void *arg)
{
    struct nodeclient_xfer *x =
        nodeclient_xfer_new(c, method, url, hdrs, n, (int64_t)len, timeout_ms, ops, arg);
    x->up_len = (int64_t)len;
    x->up_mem = len ? body : "";
    for (int i = 0; i < n; i++)
        if (!strcasecmp(hdrs[i], "Expect: 100-continue"))
            x->expect = len > 0;
    if (!x->err[0])
        nodeclient_send_on(x, 0);
    return x;
}

enum nodeclient_fail nodeclient_failure(const struct nodeclient_xfer *x)
{
    return x->fail;
}

const char *nodeclient_header(const struct nodeclient_xfer *x, const char *name)
{
    for (int i = 0; x->hdr && i < x->n_hdrs; i++)
        if (!strcasecmp(x->hdr[i].name, name))
            return x->hdr[i].value;
    return NULL;
}

int nodeclient_header_count(const struct nodeclient_xfer *x)
{
    return x->hdr ? x->n_hdrs : 0;
}

const char *nodeclient_header_at(const struct nodeclient_xfer *x, int i, const char **value)
{
    *value = x->hdr[i].value;
    return x->hdr[i].name;
}

int nodeclient_xfer_tls(const struct nodeclient_xfer *x)
{
    return x->tls;
}

int nodeclient_reached(const struct nodeclient_xfer *x)
{
    return x->reached;
}

void nodeclient_pause(struct nodeclient_xfer *x)
{
    x->paused = 1;
    if (x->conn && !x->in_cb)
        read_off(x->conn);
}

void nodeclient_resume(struct nodeclient_xfer *x)
{
    if (!x->paused)
        return;
    x->paused = 0;
    event_active(x->kick, EV_TIMEOUT, 0);
}

void nodeclient_resume_upload(struct nodeclient_xfer *x)
{
    if (!x->up_waiting)
        return;
    x->up_waiting = 0;
    event_active(x->kick, EV_TIMEOUT, 0);
}

void nodeclient_cancel(struct nodeclient_xfer *x)
{
    xfer_free(x);
}

struct nodeclient *nodeclient_new(struct event_base *base)
{
    struct nodeclient *c = xcalloc(1, sizeof(*c));
    c->base = base;
    c->rbuf = xmalloc(NODECLIENT_FEED);
    llhttp_settings_init(&c->settings);
    c->settings.on_header_field = on_hdr_span;
    c->settings.on_header_field_complete = on_field_end;
    c->settings.on_header_value = on_hdr_span;
    c->settings.on_header_value_complete = on_hdr_end;
    c->settings.on_headers_complete = on_headers_complete;
    c->settings.on_body = on_body;
    c->settings.on_message_complete = on_message_complete;
    return c;
}

void nodeclient_free(struct nodeclient *c)
{
    if (!c)
        return;
    while (c->xfers)
        xfer_free(c->xfers);
    while (c->idle) {
        struct nodeclient_conn *k = c->idle;
        c->idle = k->next;
        conn_free(k);
    }
    if (c->dns)
        evdns_base_free(c->dns, 0);
    free(c->rbuf);
    free(c);
}
