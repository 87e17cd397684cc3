/*
 * raftnet: libraft's TCP transport with an HMAC challenge on every
 * connection (see raftnet.h). Dialing goes through libraft's transport;
 * accepting is done here, so that nothing of libraft's reads a byte from
 * a peer that has not answered the challenge: the preamble libraft's
 * dialer sends (protocol, id and address length as little-endian 64-bit
 * words, then the address, NUL-padded to 8 bytes) is read and bounded
 * here, with the challenge's deadline.
 */
#include "raftnet.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "log.h"
#include "util.h"

#define NONCE 32
#define SHAKE_MS 5000
#define USER_TIMEOUT_MS 3000
#define PREAMBLE 24
#define ADDRESS_MAX 256
#define PROTOCOL 1

struct shake;

struct net {
    struct raft_uv_transport inner;  /* libraft's TCP transport */
    struct raft_uv_transport *outer;
    uv_loop_t *loop;
    uv_timer_t timer;            /* expires handshakes */
    char *secret;
    raft_id self;                /* what a dial proves */
    char *self_addr;             /* what a dial to this server is bound to */
    char *bind_addr;
    uv_tcp_t listener;
    int listening;
    raft_uv_accept_cb accept_cb;
    raft_uv_transport_close_cb close_cb;
    int closing, pending_close;  /* the inner transport, the timer, the listener */
    struct shake *shakes;
};

enum phase { PH_NONCE, PH_PREAMBLE, PH_ADDRESS, PH_ANSWER };

struct shake {
    struct net *net;
    struct shake *next, **prev;
    uv_stream_t *stream;
    uint64_t deadline;
    int dialer;
    int writing, have_all, dead;
    raft_id id;                  /* the dialer's */
    char *address;               /* the dialer's (accepting side) or the dialed one's */
    struct raft_uv_connect ireq; /* dialing side: the inner connect */
    struct raft_uv_connect *req;
    raft_uv_connect_cb cb;
    enum phase phase;
    unsigned char *rbuf;         /* what is being read, exactly rlen bytes */
    size_t rlen, got;
    unsigned char pre[PREAMBLE];
    unsigned char in[NONCE];     /* the nonce, or the answer */
    unsigned char nonce[NONCE];  /* accepting side: what was sent */
    unsigned char out[NONCE];
    uv_write_t wr;
};

/* The answer to nonce from dialer id to the server at address (as the
 * dialer names it: a relay at another address cannot pass it on). */
static void mac(const struct net *net, const unsigned char *nonce, raft_id id,
                const char *address, unsigned char out[NONCE])
{
    size_t al = strlen(address) + 1, n = 10 + NONCE + 8 + al;
    unsigned char *msg = xmalloc(n);
    memcpy(msg, "shoal-raft", 10);
    memcpy(msg + 10, nonce, NONCE);
    for (int i = 0; i < 8; i++)
        msg[10 + NONCE + i] = (unsigned char)(id >> (56 - 8 * i));
    memcpy(msg + 10 + NONCE + 8, address, al);
    unsigned int len = NONCE;
    HMAC(EVP_sha256(), net->secret, (int)strlen(net->secret), msg, n, out, &len);
    free(msg);
}

static void shake_link(struct net *net, struct shake *s)
{
    s->net = net;
    s->deadline = uv_now(net->loop) + SHAKE_MS;
    s->next = net->shakes;
    if (s->next)
        s->next->prev = &s->next;
    s->prev = &net->shakes;
    net->shakes = s;
}

static void shake_unlink(struct shake *s)
{
    if (!s->prev)
        return;
    *s->prev = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = NULL;
}

static void stream_closed(uv_handle_t *h)
{
    struct shake *s = h->data;
    raft_free(h);
    if (s) {
        free(s->address);
        free(s);
    }
}

/* The handshake failed (or the transport closes): the stream goes; a
 * dialer's Raft hears that the connection failed. */
static void shake_fail(struct shake *s, const char *why, int status)
{
    if (s->dead)
        return;
    s->dead = 1;
    shake_unlink(s);
    if (why)
        log_warn("consensus connection %s %s: %s", s->dialer ? "to" : "from",
                 s->address ? s->address : "a peer", why);
    if (s->dialer)
        s->cb(s->req, NULL, status);
    s->stream->data = s;
    uv_close((uv_handle_t *)s->stream, stream_closed);
}

/* Handed to Raft: the shake ends, the stream is Raft's. */
static void shake_done(struct shake *s)
{
    shake_unlink(s);
    s->dead = 1;
    if (s->dialer)
        s->cb(s->req, s->stream, 0);
    else
        s->net->accept_cb(s->net->outer, s->id, s->address, s->stream);
    free(s->address);
    free(s);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct shake *s = h->data;
    (void)hint;
    /* exactly what is still due: nothing of Raft's own bytes is read */
    *buf = uv_buf_init((char *)s->rbuf + s->got, (unsigned)(s->rlen - s->got));
}

static void expect(struct shake *s, enum phase ph, unsigned char *buf, size_t len)
{
    s->phase = ph;
    s->rbuf = buf;
    s->rlen = len;
    s->got = 0;
}

static uint64_t le64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void written(uv_write_t *w, int status)
{
    struct shake *s = w->data;
    s->writing = 0;
    if (s->dead)
        return;                  /* cancelled by the close; the close frees s */
    if (status < 0)
        shake_fail(s, uv_strerror(status), RAFT_NOCONNECTION);
    else if (s->dialer || s->have_all)
        shake_done(s);
}

static void send_out(struct shake *s)
{
    uv_buf_t b = uv_buf_init((char *)s->out, NONCE);
    s->wr.data = s;
    s->writing = 1;
    int rc = uv_write(&s->wr, s->stream, &b, 1, written);
    if (rc) {
        s->writing = 0;
        shake_fail(s, uv_strerror(rc), RAFT_NOCONNECTION);
    }
}

/* The accepting side has read a whole part: the next, or the verdict. */
static void accept_step(struct shake *s)
{
    if (s->phase == PH_PREAMBLE) {
        uint64_t alen = le64(s->pre + 16);
        if (le64(s->pre) != PROTOCOL || !alen || alen > ADDRESS_MAX || alen % 8) {
            shake_fail(s, "not a consensus peer", 0);   /* nothing of it reaches libraft */
            return;
        }
        s->id = le64(s->pre + 8);
        s->address = xcalloc(1, (size_t)alen + 1);   /* NUL-ended whatever was sent */
        expect(s, PH_ADDRESS, (unsigned char *)s->address, (size_t)alen);
        return;
    }
    if (s->phase == PH_ADDRESS) {
        expect(s, PH_ANSWER, s->in, NONCE);
        return;
    }
    uv_read_stop(s->stream);
    unsigned char want[NONCE];
    mac(s->net, s->nonce, s->id, s->net->self_addr, want);
    if (CRYPTO_memcmp(want, s->in, NONCE)) {
        shake_fail(s, "it does not know the cluster secret", 0);
        return;
    }
    s->have_all = 1;
    if (!s->writing)
        shake_done(s);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct shake *s = st->data;
    (void)buf;
    if (nread == 0)
        return;
    if (nread < 0) {
        uv_read_stop(st);
        shake_fail(s, nread == UV_EOF ? "closed by the peer" : uv_strerror((int)nread),
                   RAFT_NOCONNECTION);
        return;
    }
    s->got += (size_t)nread;
    if (s->got < s->rlen)
        return;
    if (!s->dialer) {
        accept_step(s);
        return;
    }
    uv_read_stop(st);            /* the nonce: answer it, then Raft has the stream */
    mac(s->net, s->in, s->id, s->address, s->out);
    send_out(s);
}

/* A peer that stops acknowledging (a partition) costs the connection in
 * seconds, not TCP's minutes of retransmission backoff: Raft then dials
 * again and is through as soon as the network is back. */
static void tcp_timeouts(uv_stream_t *st)
{
    uv_os_fd_t fd;
    unsigned ms = USER_TIMEOUT_MS;
    if (st->type == UV_TCP && uv_fileno((uv_handle_t *)st, &fd) == 0) {
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
        uv_tcp_keepalive((uv_tcp_t *)st, 1, 2);
    }
}

static void start_read(struct shake *s)
{
    s->stream->data = s;
    tcp_timeouts(s->stream);
    int rc = uv_read_start(s->stream, on_alloc, on_read);
    if (rc)
        shake_fail(s, uv_strerror(rc), RAFT_NOCONNECTION);
}

/* ---- accepting ---------------------------------------------------------------- */

static void incoming(uv_stream_t *server, int status)
{
    struct net *net = server->data;
    if (status < 0 || net->closing)
        return;
    uv_tcp_t *tcp = raft_malloc(sizeof(*tcp));   /* Raft frees what it is given */
    if (!tcp)
        return;
    uv_tcp_init(net->loop, tcp);
    tcp->data = NULL;
    if (uv_accept(server, (uv_stream_t *)tcp)) {
        uv_close((uv_handle_t *)tcp, stream_closed);
        return;
    }
    struct shake *s = xcalloc(1, sizeof(*s));
    s->stream = (uv_stream_t *)tcp;
    s->address = NULL;
    shake_link(net, s);
    expect(s, PH_PREAMBLE, s->pre, PREAMBLE);
    rand_bytes(s->nonce, NONCE);
    memcpy(s->out, s->nonce, NONCE);
    send_out(s);
    if (!s->dead)
        start_read(s);
}

static int t_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
    struct net *net = t->impl;
    struct sockaddr_in sa;
    char host[64];
    const char *colon = strrchr(net->bind_addr, ':');
    int rc = -1;
    net->accept_cb = cb;
    if (colon && (size_t)(colon - net->bind_addr) < sizeof(host)) {
        snprintf(host, sizeof(host), "%.*s", (int)(colon - net->bind_addr), net->bind_addr);
        rc = uv_ip4_addr(host, atoi(colon + 1), &sa);
    }
    if (!rc)
        rc = uv_tcp_bind(&net->listener, (const struct sockaddr *)&sa, 0);
    if (!rc)
        rc = uv_listen((uv_stream_t *)&net->listener, 64, incoming);
    if (rc) {
        snprintf(t->errmsg, sizeof(t->errmsg), "listen on %s: %s", net->bind_addr,
                 rc < 0 ? uv_strerror(rc) : "not an IPv4 address:port");
        return RAFT_IOERR;
    }
    net->listening = 1;
    return 0;
}

/* ---- dialing ------------------------------------------------------------------ */

static void connected(struct raft_uv_connect *ireq, uv_stream_t *stream, int status)
{
    struct shake *s = ireq->data;
    if (status) {
        shake_unlink(s);
        s->cb(s->req, NULL, status);
        free(s->address);
        free(s);
        return;
    }
    s->stream = stream;
    expect(s, PH_NONCE, s->in, NONCE);
    start_read(s);
}

static int t_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
                     const char *address, raft_uv_connect_cb cb)
{
    struct net *net = t->impl;
    struct shake *s = xcalloc(1, sizeof(*s));
    s->dialer = 1;
    s->req = req;
    s->cb = cb;
    s->id = net->self;
    s->address = xstrdup(address);
    s->ireq.data = s;
    shake_link(net, s);
    int rc = net->inner.connect(&net->inner, &s->ireq, id, address, connected);
    if (rc) {
        snprintf(t->errmsg, sizeof(t->errmsg), "%s", net->inner.errmsg);
        shake_unlink(s);
        free(s->address);
        free(s);
    }
    return rc;
}

/* ---- life ---------------------------------------------------------------------- */

static void expire(uv_timer_t *timer)
{
    struct net *net = timer->data;
    uint64_t now = uv_now(net->loop);
    struct shake *s = net->shakes, *next;
    for (; s; s = next) {
        next = s->next;
        if (s->stream && now >= s->deadline)
            shake_fail(s, "no answer to the challenge", RAFT_NOCONNECTION);
    }
}

static int t_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
    struct net *net = t->impl;
    net->self = id;
    free(net->self_addr);
    net->self_addr = xstrdup(address);
    int rc = net->inner.init(&net->inner, id, address);
    if (rc)
        snprintf(t->errmsg, sizeof(t->errmsg), "%s", net->inner.errmsg);
    return rc;
}

static void one_closed(struct net *net)
{
    if (--net->pending_close == 0 && net->close_cb)
        net->close_cb(net->outer);
}

static void inner_closed(struct raft_uv_transport *inner)
{
    one_closed(inner->data);
}

static void timer_closed(uv_handle_t *h)
{
    one_closed(h->data);
}

static void listener_closed(uv_handle_t *h)
{
    one_closed(h->data);
}

static void t_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
    struct net *net = t->impl;
    net->close_cb = cb;
    net->closing = 1;
    net->pending_close = 3;
    /* connects still under way in the inner transport are cancelled by it */
    for (struct shake *s = net->shakes, *next; s; s = next) {
        next = s->next;
        if (s->stream)
            shake_fail(s, NULL, RAFT_CANCELED);
    }
    uv_close((uv_handle_t *)&net->timer, timer_closed);
    uv_close((uv_handle_t *)&net->listener, listener_closed);
    net->inner.close(&net->inner, inner_closed);
}

int raftnet_init(struct raft_uv_transport *t, uv_loop_t *loop, const char *bind_addr,
                 const char *secret, char *err, size_t errlen)
{
    struct net *net = xcalloc(1, sizeof(*net));
    net->loop = loop;
    net->outer = t;
    net->secret = xstrdup(secret);
    int rc = raft_uv_tcp_init(&net->inner, loop);
    if (rc) {
        snprintf(err, errlen, "consensus transport on %s: %s", bind_addr, raft_strerror(rc));
        if (net->inner.impl)
            raft_uv_tcp_close(&net->inner);
        free(net->secret);
        free(net);
        return -1;
    }
    net->inner.data = net;
    net->bind_addr = xstrdup(bind_addr);
    uv_tcp_init(loop, &net->listener);
    net->listener.data = net;
    uv_timer_init(loop, &net->timer);
    net->timer.data = net;
    uv_timer_start(&net->timer, expire, 1000, 1000);
    memset(t, 0, sizeof(*t));
    t->impl = net;
    t->init = t_init;
    t->listen = t_listen;
    t->connect = t_connect;
    t->close = t_close;
    return 0;
}

void raftnet_free(struct raft_uv_transport *t)
{
    struct net *net = t->impl;
    if (!net)
        return;
    raft_uv_tcp_close(&net->inner);
    free(net->secret);
    free(net->self_addr);
    free(net->bind_addr);
    free(net);
    t->impl = NULL;
}
