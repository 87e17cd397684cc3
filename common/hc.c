/*
 * hc: the intra-cluster HTTP client (see hc.h).
 *
 * A request owns its bytes to send (kept whole, so that a retry can send
 * them again) and its answer's parser. A connection is either idle in the
 * pool or carries exactly one request; it goes back to the pool only after
 * a whole answer that allows keep-alive with nothing after it, so a pooled
 * connection never holds stray bytes. An idle connection that hears
 * anything (the peer's close, or bytes nobody asked for) is dropped.
 *
 * Every failure, even one found inside hc_request (a bad URL, a connect
 * that fails at once), is reported from the request's timer event, armed
 * to fire at once: the callback never runs inside hc_request.
 *
 * Thread: the loop of the hc.
 */
#include <arpa/inet.h>
#include <event2/bufferevent.h>
#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hc.h"
#include "util.h"

#define HC_IDLE_MAX 64           /* pooled connections per hc */
#define HC_HOST_MAX 256

struct hc_req;

struct hc_conn {
    struct hc *c;
    struct hc_conn *next;        /* in c->idle */
    struct bufferevent *bev;
    char host[HC_HOST_MAX];
    int port;
    int reused;                  /* has carried a request before */
    struct hc_req *req;          /* the request it carries, or NULL (idle) */
};

struct hc_req {
    struct hc *c;
    struct hc_req *prev, *next;  /* in c->reqs */
    struct hc_conn *conn;
    char host[HC_HOST_MAX];
    int port;
    int head;                    /* a HEAD: the answer has no body */
    struct gbuf out;             /* the request's bytes */
    struct gbuf body;            /* the answer's body */
    llhttp_t parser;
    int got_bytes;               /* any of the answer has arrived */
    int complete;                /* the whole answer has arrived */
    int too_large;
    int tries;
    char err[400];               /* set: the timer reports this failure */
    struct event *timer;         /* the deadline, or an immediate failure */
    hc_done_fn cb;
    void *arg;
};

struct hc {
    struct event_base *base;
    struct evdns_base *dns;      /* made on the first name to resolve */
    struct hc_conn *idle;
    int n_idle;
    struct hc_req *reqs;         /* in flight */
    llhttp_settings_t settings;
};

static void conn_free(struct hc_conn *k)
{
    bufferevent_free(k->bev);
    free(k);
}

static void idle_remove(struct hc *c, struct hc_conn *k)
{
    for (struct hc_conn **pp = &c->idle; *pp; pp = &(*pp)->next)
        if (*pp == k) {
            *pp = k->next;
            c->n_idle--;
            return;
        }
}

/* The request is over: report it and free it. Its connection, if it
 * still has one, was not finished cleanly and is closed. */
static void finish(struct hc_req *q, int status, const char *err)
{
    struct hc *c = q->c;
    if (q->conn) {
        q->conn->req = NULL;
        conn_free(q->conn);
    }
    if (q->prev)
        q->prev->next = q->next;
    else
        c->reqs = q->next;
    if (q->next)
        q->next->prev = q->prev;
    event_free(q->timer);
    q->cb(q->arg, status, status && q->body.p ? q->body.p : "", status ? q->body.n : 0, err);
    gbuf_free(&q->out);
    gbuf_free(&q->body);
    free(q);
}

/* Fail q from its timer, at once (never inside hc_request's caller). */
static void fail_later(struct hc_req *q, const char *why)
{
    snprintf(q->err, sizeof(q->err), "%s", why);
    struct timeval now = {0, 0};
    evtimer_add(q->timer, &now);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct hc_req *q = arg;
    (void)fd;
    (void)what;
    finish(q, 0, q->err[0] ? q->err : "timed out");
}

/* ---- the answer ------------------------------------------------------------- */

static int on_headers_complete(llhttp_t *p)
{
    struct hc_req *q = p->data;
    return q->head || p->status_code == 204 || p->status_code == 304 ? 1 : 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct hc_req *q = p->data;
    if (q->body.n + n > HC_BODY_MAX) {
        q->too_large = 1;
        return HPE_USER;
    }
    gbuf_add(&q->body, at, n);
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct hc_req *q = p->data;
    if (p->status_code < 200) {  /* an interim answer: the real one follows */
        q->body.n = 0;
        return 0;
    }
    q->complete = 1;
    return HPE_PAUSED;
}

/* q's connection delivered its whole answer: pool or close the
 * connection, then report. */
static void deliver(struct hc_req *q, int keep)
{
    struct hc_conn *k = q->conn;
    struct hc *c = q->c;
    if (keep && c->n_idle < HC_IDLE_MAX) {
        q->conn = NULL;
        k->req = NULL;
        k->reused = 1;
        k->next = c->idle;
        c->idle = k;
        c->n_idle++;
    }
    finish(q, q->parser.status_code, NULL);
}

static void send_on(struct hc_req *q, int fresh);

/* The connection under q ended before q's whole answer. */
static void conn_lost(struct hc_req *q, const char *why)
{
    struct hc_conn *k = q->conn;
    if (k->reused && !q->got_bytes && q->tries < 2) {
        /* a pooled connection the peer had closed: send again, fresh */
        q->conn = NULL;
        k->req = NULL;
        conn_free(k);
        send_on(q, 1);
        return;
    }
    finish(q, 0, why);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct hc_conn *k = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct hc_req *q = k->req;
    if (!q) {                    /* an idle connection has nothing to say */
        idle_remove(k->c, k);
        conn_free(k);
        return;
    }
    size_t n;
    while (!q->complete && (n = evbuffer_get_contiguous_space(in)) > 0) {
        const char *p = (const char *)evbuffer_pullup(in, (ssize_t)n);
        q->got_bytes = 1;
        llhttp_errno_t e = llhttp_execute(&q->parser, p, n);
        if (e == HPE_PAUSED) {
            size_t used = (size_t)(llhttp_get_error_pos(&q->parser) - p);
            evbuffer_drain(in, used);
            break;
        }
        if (e != HPE_OK) {
            finish(q, 0, q->too_large ? "answer too large" : "malformed answer");
            return;
        }
        evbuffer_drain(in, n);
    }
    if (q->complete)
        deliver(q, llhttp_should_keep_alive(&q->parser) && evbuffer_get_length(in) == 0);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct hc_conn *k = arg;
    struct hc_req *q = k->req;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED)
        return;
    if (!q) {
        idle_remove(k->c, k);
        conn_free(k);
        return;
    }
    llhttp_errno_t e = (what & BEV_EVENT_EOF) && q->got_bytes ? llhttp_finish(&q->parser)
                                                                : HPE_USER;
    if ((e == HPE_OK || e == HPE_PAUSED) && q->complete) {
        deliver(q, 0);           /* an answer that ends with the connection */
        return;
    }
    char why[400];
    int err = EVUTIL_SOCKET_ERROR();
    if (what & BEV_EVENT_ERROR) {
        int dns = bufferevent_socket_get_dns_error(bev);
        snprintf(why, sizeof(why), "%s:%d: %s", q->host, q->port,
                 dns ? evutil_gai_strerror(dns) : evutil_socket_error_to_string(err));
    } else {
        snprintf(why, sizeof(why), "%s:%d closed the connection", q->host, q->port);
    }
    conn_lost(q, why);
}

/* ---- sending ------------------------------------------------------------------ */

static struct hc_conn *pool_take(struct hc *c, const char *host, int port)
{
    for (struct hc_conn **pp = &c->idle; *pp; pp = &(*pp)->next) {
        struct hc_conn *k = *pp;
        if (k->port == port && !strcmp(k->host, host)) {
            *pp = k->next;
            c->n_idle--;
            return k;
        }
    }
    return NULL;
}

/* A new connection to host:port, connecting; NULL with why set. */
static struct hc_conn *conn_open(struct hc *c, const char *host, int port, char *why,
                                 size_t whylen)
{
    struct hc_conn *k = xcalloc(1, sizeof(*k));
    k->c = c;
    snprintf(k->host, sizeof(k->host), "%s", host);
    k->port = port;
    k->bev = bufferevent_socket_new(c->base, -1, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(k->bev, on_read, NULL, on_event, k);
    struct sockaddr_in6 a6 = {0};
    struct sockaddr_in a4 = {0};
    int rc;
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)port);
        rc = bufferevent_socket_connect(k->bev, (struct sockaddr *)&a4, sizeof(a4));
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)port);
        rc = bufferevent_socket_connect(k->bev, (struct sockaddr *)&a6, sizeof(a6));
    } else {
        if (!c->dns)
            c->dns = evdns_base_new(c->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
        rc = c->dns ? bufferevent_socket_connect_hostname(k->bev, c->dns, AF_UNSPEC, host, port)
                    : -1;
    }
    if (rc) {
        snprintf(why, whylen, "cannot connect to %s:%d", host, port);
        conn_free(k);
        return NULL;
    }
    return k;
}

static void send_on(struct hc_req *q, int fresh)
{
    struct hc *c = q->c;
    struct hc_conn *k = fresh ? NULL : pool_take(c, q->host, q->port);
    char why[400];
    if (!k && !(k = conn_open(c, q->host, q->port, why, sizeof(why)))) {
        fail_later(q, why);
        return;
    }
    q->tries++;
    q->conn = k;
    k->req = q;
    q->got_bytes = q->complete = 0;
    q->body.n = 0;
    llhttp_init(&q->parser, HTTP_RESPONSE, &c->settings);
    q->parser.data = q;
    bufferevent_write(k->bev, q->out.p, q->out.n);
    bufferevent_enable(k->bev, EV_READ | EV_WRITE);
}

int hc_url_split(const char *url, char *host, size_t hostlen, int *port, const char **path)
{
    if (strncmp(url, "http://", 7))
        return -1;
    const char *a = url + 7;
    size_t alen = strcspn(a, "/?");
    const char *aend = a + alen, *hs = a, *he, *portp = NULL;
    if (memchr(a, '@', alen) || memchr(a, '#', alen) || strchr(aend, '#'))
        return -1;               /* no user info, no fragments */
    if (alen && a[0] == '[') {   /* an IPv6 literal */
        const char *rb = memchr(a, ']', alen);
        if (!rb || (rb + 1 < aend && rb[1] != ':'))
            return -1;
        hs = a + 1;
        he = rb;
        portp = rb + 1 < aend ? rb + 2 : NULL;
    } else {
        const char *colon = memchr(a, ':', alen);
        he = colon ? colon : aend;
        portp = colon ? colon + 1 : NULL;
    }
    if (he == hs || (size_t)(he - hs) >= hostlen)
        return -1;
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    *port = 80;
    if (portp) {
        uint64_t v;
        if (parse_u64(portp, (size_t)(aend - portp), &v) || v < 1 || v > 65535)
            return -1;
        *port = (int)v;
    }
    *path = *aend ? aend : "/";
    return 0;
}

void hc_request(struct hc *c, const char *method, const char *url, const void *body,
                size_t len, const char *extra_hdr, long timeout_ms, hc_done_fn cb, void *arg)
{
    struct hc_req *q = xcalloc(1, sizeof(*q));
    q->c = c;
    q->cb = cb;
    q->arg = arg;
    q->head = !strcmp(method, "HEAD");
    q->timer = evtimer_new(c->base, on_timer, q);
    q->next = c->reqs;
    if (c->reqs)
        c->reqs->prev = q;
    c->reqs = q;
    const char *path;
    if (hc_url_split(url, q->host, sizeof(q->host), &q->port, &path)) {
        fail_later(q, "not an http:// URL");
        return;
    }
    char line[HC_HOST_MAX + 128];
    gbuf_str(&q->out, method);
    gbuf_add(&q->out, " ", 1);
    gbuf_str(&q->out, path[0] == '?' ? "/" : "");
    gbuf_str(&q->out, path);
    snprintf(line, sizeof(line), " HTTP/1.1\r\nHost: %s%s%s:%d\r\nContent-Length: %zu\r\n",
             strchr(q->host, ':') ? "[" : "", q->host, strchr(q->host, ':') ? "]" : "",
             q->port, len);
    gbuf_str(&q->out, line);
    if (extra_hdr) {
        gbuf_str(&q->out, extra_hdr);
        gbuf_add(&q->out, "\r\n", 2);
    }
    gbuf_add(&q->out, "\r\n", 2);
    if (len)
        gbuf_add(&q->out, body, len);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(q->timer, &tv);
    send_on(q, 0);
}

struct hc *hc_new(struct event_base *base)
{
    struct hc *c = xcalloc(1, sizeof(*c));
    c->base = base;
    llhttp_settings_init(&c->settings);
    c->settings.on_headers_complete = on_headers_complete;
    c->settings.on_body = on_body;
    c->settings.on_message_complete = on_message_complete;
    return c;
}

void hc_free(struct hc *c)
{
    if (!c)
        return;
    while (c->reqs) {
        struct hc_req *q = c->reqs;
        c->reqs = q->next;
        if (q->conn)
            conn_free(q->conn);
        event_free(q->timer);
        gbuf_free(&q->out);
        gbuf_free(&q->body);
        free(q);
    }
    while (c->idle) {
        struct hc_conn *k = c->idle;
        c->idle = k->next;
        conn_free(k);
    }
    if (c->dns)
        evdns_base_free(c->dns, 0);
    free(c);
}
