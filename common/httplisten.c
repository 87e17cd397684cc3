/*
 * httplisten: how a worker takes connections (see http_int.h). Each
 * worker has its own listening socket (SO_REUSEPORT) and its share of
 * max_connections; it stops accepting at that share, and for
 * ACCEPT_BACKOFF_MS when accept fails (out of descriptors), rather than
 * retrying in a loop. Idle connections do not hold that share against new
 * clients: a worker at it closes its longest idle connection to take a new
 * one, and from PRESSURE_PCT of it on, those idle longer than
 * PRESSURE_IDLE_S (see http_conns_make_room).
 *
 * Threads: everything runs on the worker's own loop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "http_int.h"
#include "log.h"
#include "util.h"

#define ACCEPT_BACKOFF_MS 100       /* no accepts for this long after accept failed */
#define PRESSURE_PCT 90             /* of a worker's share: idle connections close sooner */
#define PRESSURE_IDLE_S 5           /* ... once idle this long */

/* ---- idle connections ------------------------------------------------- */

/*
 * Each worker lists its idle connections, oldest first: those between
 * requests whose answers have all left, new ones that have sent nothing
 * for HTTP_FRESH_IDLE_S (not at once: a client's first request arrives just
 * after the accept, and a burst of new connections must not close one
 * another before they are read), and, at the oldest end, those past their
 * head's deadline (being closed with a 408). A connection joins when its
 * last answer has left and leaves at the next request's first byte: two
 * O(1) moves per request. A connection with a request under way (head
 * complete, body being read, answer being made or written) is never on
 * the list, so http_conns_make_room, which closes from the oldest end, never
 * cuts one. Everything here runs on the connection's worker thread.
 */

/* c joins its worker's idle list: at the newest end, idle from now; or,
 * doomed (past its head's deadline), at the oldest end, to close first. */
void http_idle_add(struct http_conn *c, int doomed)
{
    struct http_listener *l = &c->w->srv->lis[c->w->idx];
    if (c->idle)
        return;
    c->idle = 1;
    c->idle_since_ns = doomed ? 0 : mono_ns();
    c->idle_prev = doomed ? NULL : l->idle_new;
    c->idle_next = doomed ? l->idle_old : NULL;
    if (c->idle_prev)
        c->idle_prev->idle_next = c;
    else
        l->idle_old = c;
    if (c->idle_next)
        c->idle_next->idle_prev = c;
    else
        l->idle_new = c;
    if (!l->on)                  /* at its share, it has one to close now */
        http_listener_update(c->w);
}

void http_idle_del(struct http_conn *c)
{
    struct http_listener *l = &c->w->srv->lis[c->w->idx];
    if (!c->idle)
        return;
    if (c->idle_prev)
        c->idle_prev->idle_next = c->idle_next;
    else
        l->idle_old = c->idle_next;
    if (c->idle_next)
        c->idle_next->idle_prev = c->idle_prev;
    else
        l->idle_new = c->idle_prev;
    c->idle_prev = c->idle_next = NULL;
    c->idle = 0;
}

/* c joins the idle list when it is between requests, with nothing left to
 * send and nothing received that is still to be parsed (a pipelined
 * request); called where any of those may have just become true. */
void http_idle_check(struct http_conn *c)
{
    if (!c->req && !c->closing && !c->aborting && !c->lingering &&
        evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 &&
        evbuffer_get_length(bufferevent_get_input(c->bev)) == 0)
        http_idle_add(c, 0);
}

/*
 * Room for one more connection on w, made before it is taken: at its
 * share of max_connections the longest idle connection closes (as nginx
 * reuses idle keep-alive connections when it runs out), so that idle
 * sockets cannot keep new clients waiting in the backlog for an idle
 * timeout; from PRESSURE_PCT of the share on, every connection idle
 * longer than PRESSURE_IDLE_S closes too. Each connection closes once, so
 * this is O(1) per connection taken, amortised.
 */
void http_conns_make_room(struct http_worker *w)
{
    struct http_listener *l = &w->srv->lis[w->idx];
    if (w->nconns < l->pressure || !l->idle_old)
        return;
    uint64_t now = mono_ns();
    while (l->idle_old && w->nconns >= l->pressure &&
           now - l->idle_old->idle_since_ns >= PRESSURE_IDLE_S * 1000000000ull)
        http_conn_free(l->idle_old);
    if (l->idle_old && w->nconns >= l->max_conns) {
        log_warn_rl("%d connections, this worker's share of max_connections: closing the "
                    "longest idle one for a new one",
                    w->nconns);
        http_conn_free(l->idle_old);
    }
}

/* Enable w's listener when it may accept (under its share of connections,
 * or with an idle one to close for a new one; not backing off), disable it
 * otherwise. */
void http_listener_update(struct http_worker *w)
{
    struct http_listener *l = &w->srv->lis[w->idx];
    int want = !l->backoff && (w->nconns < l->max_conns || l->idle_old);
    if (!l->lis || want == l->on)
        return;
    l->on = want;
    if (want)
        evconnlistener_enable(l->lis);
    else
        evconnlistener_disable(l->lis);
}

static void peer_name(const struct sockaddr *sa, char *out, size_t outlen)
{
    char ip[INET6_ADDRSTRLEN];
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
        snprintf(out, outlen, "%s:%d", ip, ntohs(sin->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
        snprintf(out, outlen, "[%s]:%d", ip, ntohs(sin6->sin6_port));
    } else {
        snprintf(out, outlen, "local");
    }
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct http_worker *w = arg;
    (void)l;
    (void)salen;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char peer[64];
    peer_name(sa, peer, sizeof(peer));
    http_conn_new(w, fd, peer);
}

/*
 * accept failed with an error that retrying at once cannot cure (libevent
 * filters out EINTR, EAGAIN, ECONNABORTED): most often EMFILE or ENFILE.
 * The pending connection stays queued, so the listener would wake the loop
 * again at once and spin; it pauses for ACCEPT_BACKOFF_MS instead, or
 * until one of this worker's connections closes and frees a descriptor.
 */
static void accept_error_cb(struct evconnlistener *lis, void *arg)
{
    struct http_worker *w = arg;
    struct http_listener *l = &w->srv->lis[w->idx];
    int e = EVUTIL_SOCKET_ERROR();
    (void)lis;
    log_warn_rl("accept: %s; not accepting for %d ms", strerror(e), ACCEPT_BACKOFF_MS);
    l->backoff = 1;
    http_listener_update(w);
    struct timeval tv = {0, ACCEPT_BACKOFF_MS * 1000};
    evtimer_add(l->retry_ev, &tv);
}

static void accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_worker *w = arg;
    (void)fd;
    (void)what;
    w->srv->lis[w->idx].backoff = 0;
    http_listener_update(w);
}

void http_server_adopt(struct http_worker *w, int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char peer[64] = "local";
    if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0)
        peer_name((struct sockaddr *)&ss, peer, sizeof(peer));
    http_conn_new(w, fd, peer);
}

void http_listener_init(struct http_server *s, int i)
{
    struct http_listener *l = &s->lis[i];
    l->max_conns = (s->o.max_connections + s->n - 1) / s->n;
    l->pressure = l->max_conns * PRESSURE_PCT / 100;
    l->retry_ev = evtimer_new(s->w[i].base, accept_retry_cb, &s->w[i]);
}

int http_listener_bind(struct http_server *s, int i, const struct sockaddr_in *sin)
{
    struct http_listener *l = &s->lis[i];
    l->lis = evconnlistener_new_bind(s->w[i].base, accept_cb, &s->w[i],
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                         LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_EXEC,
                                     1024, (const struct sockaddr *)sin, sizeof(*sin));
    if (!l->lis)
        return -1;
    l->on = 1;
    evconnlistener_set_error_cb(l->lis, accept_error_cb);
    return 0;
}
