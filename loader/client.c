/*
 * client: the loader's raw HTTP/1.1 client, the per-request path. A
 * worker's request goes out on a keep-alive connection of its own to the
 * URL's host (at most CONNS_PER_WORKER of them, the oldest closed for a
 * new one); the response is read with one read(2) into the thread's
 * buffer and parsed there by llhttp, with only Location and
 * X-Shoal-Checksum kept and the body counted (and hashed with --verify).
 * A redirect is followed on the same worker; any other outcome is
 * recorded in the thread's statistics and the worker moves on
 * (worker_next). Native requests are signed with SigV4 when a key is set,
 * S3 ones always.
 *
 * Threads: everything here runs on the worker's loop thread, but for
 * client_init/client_free (main thread, around the runs) and host_of's
 * table, which loop threads share under hosts_mu.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <llhttp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include "loader.h"
#include "sigv4.h"

const char *const op_names[OP_N] = {"GET", "PUT", "DELETE"};

struct host {
    char name[300];
    int port;
    struct sockaddr_in sa;
};

/* ---- hosts ------------------------------------------------------------------- */

static pthread_mutex_t hosts_mu = PTHREAD_MUTEX_INITIALIZER;
static struct host *hosts;
static int n_hosts;

/* Split http://host[:port][/rest] into a host entry and *rest. */
static const struct host *host_of(const char *url, const char **rest)
{
    const char *p = url;
    if (!strncmp(p, "http://", 7))
        p += 7;
    const char *slash = strchr(p, '/');
    size_t hl = slash ? (size_t)(slash - p) : strlen(p);
    char hp[300];
    snprintf(hp, sizeof(hp), "%.*s", (int)hl, p);
    if (rest)
        *rest = slash ? slash : "/";
    char *colon = strrchr(hp, ':');
    int port = 80;
    if (colon) {
        port = atoi(colon + 1);
        *colon = '\0';
    }
    pthread_mutex_lock(&hosts_mu);
    for (int i = 0; i < n_hosts; i++) {
        if (hosts[i].port == port && !strcmp(hosts[i].name, hp)) {
            pthread_mutex_unlock(&hosts_mu);
            return &hosts[i];
        }
    }
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(hp, NULL, &hints, &res) || !res) {
        pthread_mutex_unlock(&hosts_mu);
        return NULL;
    }
    if (n_hosts == 64) { /* a fixed table: pointers to it stay valid */
        freeaddrinfo(res);
        pthread_mutex_unlock(&hosts_mu);
        return NULL;
    }
    struct host *h = &hosts[n_hosts++];
    snprintf(h->name, sizeof(h->name), "%s", hp);
    h->port = port;
    h->sa = *(struct sockaddr_in *)res->ai_addr;
    h->sa.sin_port = htons((uint16_t)port);
    freeaddrinfo(res);
    pthread_mutex_unlock(&hosts_mu);
    return h;
}

/* ---- connections -------------------------------------------------------------------- */

struct conn {
    struct worker *w;
    const struct host *host;
    struct bufferevent *bev;     /* connect and write side */
    struct event *rev;           /* reads go straight into the thread's buffer */
    struct event *timer;         /* the current request's time limit */
    llhttp_t parser;
    int busy;
    /* response being parsed */
    int status;
    int done;
    uint64_t body;
    int64_t clen;
    char field[64];
    size_t flen;
    int in_loc, in_ck;
    char location[2048];
    size_t loclen;
    char cksum[40];
    size_t cklen;
    XXH3_state_t *xs;
};

static llhttp_settings_t rsettings;

static void conn_close(struct conn *c)
{
    struct worker *w = c->w;
    for (int i = 0; i < CONNS_PER_WORKER; i++)
        if (w->conns[i] == c)
            w->conns[i] = NULL;
    if (w->cur == c)
        w->cur = NULL;
    if (c->rev)
        event_free(c->rev);
    event_free(c->timer);
    bufferevent_free(c->bev);
    XXH3_freeState(c->xs);
    free(c);
}

static void record(struct worker *w, int ok, enum err e, uint64_t bytes)
{
    struct thread *t = w->t;
    struct opstats *s = &t->st[w->op];
    pthread_mutex_lock(&t->mu);
    if (ok) {
        s->ops++;
        s->bytes += bytes;
        hist_add(&s->h, now_us() - w->start_us);
    } else {
        s->errs[e]++;
    }
    pthread_mutex_unlock(&t->mu);
}

static void fail_request(struct worker *w, enum err e)
{
    record(w, 0, e, 0);
    if (w->cur)
        conn_close(w->cur);
    worker_next(w);
}

/* ---- response parsing ---------------------------------------------------------------- */

static int r_field(llhttp_t *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    if (c->flen + n < sizeof(c->field)) {
        memcpy(c->field + c->flen, at, n);
        c->flen += n;
    }
    return 0;
}

static int r_field_done(llhttp_t *p)
{
    struct conn *c = p->data;
    c->field[c->flen] = '\0';
    c->in_loc = !strcasecmp(c->field, "Location");
    c->in_ck = !strcasecmp(c->field, "X-Shoal-Checksum");
    c->flen = 0;
    return 0;
}

static int r_value(llhttp_t *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    if (c->in_loc && c->loclen + n < sizeof(c->location)) {
        memcpy(c->location + c->loclen, at, n);
        c->loclen += n;
        c->location[c->loclen] = '\0';
    } else if (c->in_ck && c->cklen + n < sizeof(c->cksum)) {
        memcpy(c->cksum + c->cklen, at, n);
        c->cklen += n;
        c->cksum[c->cklen] = '\0';
    }
    return 0;
}

static int r_value_done(llhttp_t *p)
{
    struct conn *c = p->data;
    c->in_loc = c->in_ck = 0;
    return 0;
}

static int r_headers(llhttp_t *p)
{
    struct conn *c = p->data;
    c->status = p->status_code;
    c->clen = (p->flags & F_CONTENT_LENGTH) ? (int64_t)p->content_length : -1;
    if (opt.verify)
        XXH3_64bits_reset(c->xs);
    return 0;
}

static int r_body(llhttp_t *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    c->body += n;
    if (opt.verify)
        XXH3_64bits_update(c->xs, at, n);
    return 0;
}

static int r_done(llhttp_t *p)
{
    struct conn *c = p->data;
    c->done = 1;
    return HPE_PAUSED;
}

/* A whole response is in: decide what it means for the worker's op.
 * Returns 1 when the connection goes on with the same request (after a
 * 100 Continue), 0 when c may be gone. */
static int response_done(struct conn *c)
{
    struct worker *w = c->w;
    int keep = llhttp_should_keep_alive(&c->parser);
    int status = c->status;
    if (status == 100) {
        /* the target wants the body now */
        w->awaiting_continue = 0;
        evbuffer_add_reference(bufferevent_get_output(c->bev), shared_body, w->size, NULL, NULL);
        c->status = 0;
        return 1;
    }
    c->busy = 0;
    w->cur = NULL;
    evtimer_del(c->timer);
    if (status == 307 || status == 302 || status == 301) {
        char loc[sizeof(c->location)];
        snprintf(loc, sizeof(loc), "%s", c->location);
        if (!keep)
            conn_close(c);
        if (!loc[0] || ++w->hops > 4) {
            record(w, 0, E_REDIRECT, 0);
            worker_next(w);
            return 0;
        }
        client_send(w, loc, w->op == OP_PUT);
        return 0;
    }
    uint64_t bytes = w->op == OP_PUT ? w->size : c->body;
    enum err e = E_N;
    if (status >= 500)
        e = E_5XX;
    else if (status >= 400)
        e = E_4XX;
    else if (c->clen >= 0 && c->body != (uint64_t)c->clen)
        e = E_SHORT;
    else if (opt.verify && w->op == OP_GET && c->cklen > 8 && opt.read_len < 0) {
        char got[32];
        snprintf(got, sizeof(got), "xxh3-64:%016llx",
                 (unsigned long long)XXH3_64bits_digest(c->xs));
        if (strcmp(got, c->cksum))
            e = E_VERIFY;
    }
    if (!keep)
        conn_close(c);
    record(w, e == E_N, e, bytes);
    worker_next(w);
    return 0;
}

static void conn_eof(struct conn *c, short what);

/* Feed n bytes to the parser; returns 0 when c may be gone. */
static int conn_feed(struct conn *c, const char *p, size_t n)
{
    while (n > 0 && c->busy) {
        llhttp_errno_t e = llhttp_execute(&c->parser, p, n);
        size_t used = n;
        if (e == HPE_PAUSED) {
            used = (size_t)(llhttp_get_error_pos(&c->parser) - p);
            llhttp_resume(&c->parser);
        } else if (e != HPE_OK) {
            fail_request(c->w, E_RESET);
            return 0;
        }
        p += used;
        n -= used;
        if (c->done) {
            c->done = 0;
            if (!response_done(c)) /* c may be gone */
                return 0;
        }
    }
    return 1;
}

static void conn_rawread(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    char *buf = c->w->t->rbuf;
    (void)what;
    for (int rounds = 0; rounds < 4; rounds++) {
        ssize_t n = read(fd, buf, RBUF);
        if (n > 0) {
            if (!c->busy) { /* bytes nobody asked for */
                conn_close(c);
                return;
            }
            if (!conn_feed(c, buf, (size_t)n))
                return;
            if ((size_t)n < RBUF)
                return;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        conn_eof(c, n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR);
        return;
    }
}

static void conn_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    if (c->busy)
        fail_request(c->w, E_TIMEOUT);
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return;
    }
    conn_eof(c, what);
}

/* The connection ended or failed (what: BEV_EVENT_* bits). */
static void conn_eof(struct conn *c, short what)
{
    struct worker *w = c->w;
    if (!c->busy) {
        conn_close(c); /* an idle keep-alive connection went away */
        return;
    }
    /* a body that ends at EOF (no length) is complete */
    if ((what & BEV_EVENT_EOF) && c->status && c->clen < 0 &&
        llhttp_finish(&c->parser) == HPE_OK) {
        response_done(c);
        return;
    }
    enum err e = (what & BEV_EVENT_TIMEOUT) ? E_TIMEOUT
                 : c->status == 0 && c->body == 0 && !(what & BEV_EVENT_EOF) ? E_CONNECT
                                                                               : E_RESET;
    (void)w;
    fail_request(c->w, e);
}

static struct conn *conn_get(struct worker *w, const struct host *h)
{
    for (int i = 0; i < CONNS_PER_WORKER; i++)
        if (w->conns[i] && w->conns[i]->host == h)
            return w->conns[i];
    int slot = -1;
    for (int i = 0; i < CONNS_PER_WORKER && slot < 0; i++)
        if (!w->conns[i])
            slot = i;
    if (slot < 0) {
        conn_close(w->conns[0]);
        slot = 0;
    }
    struct conn *c = xcalloc(1, sizeof(*c));
    c->w = w;
    c->host = h;
    c->xs = XXH3_createState();
    c->bev = bufferevent_socket_new(w->t->base, -1, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(c->bev, NULL, NULL, conn_event, c);
    bufferevent_enable(c->bev, EV_WRITE);
    c->timer = evtimer_new(w->t->base, conn_timeout, c);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&h->sa, sizeof(h->sa))) {
        bufferevent_free(c->bev);
        event_free(c->timer);
        XXH3_freeState(c->xs);
        free(c);
        return NULL;
    }
    /* Reads bypass the bufferevent: one read(2) into the thread's buffer,
     * parsed in place, no copies into evbuffers and no per-read timers. */
    c->rev = event_new(w->t->base, bufferevent_getfd(c->bev), EV_READ | EV_PERSIST,
                       conn_rawread, c);
    event_add(c->rev, NULL);
    w->conns[slot] = c;
    return c;
}

/* ---- requests --------------------------------------------------------------------------- */

/* SigV4 headers for a native request (not for a redirect's signed URL,
 * which the target trusts as it is). Bodies are sent UNSIGNED-PAYLOAD. */
static void sign_native(struct evbuffer *out, const char *method, const struct host *h,
                        const char *path, int with_body)
{
    char hostport[320], amzdate[17], date[9];
    snprintf(hostport, sizeof(hostport), "%s:%d", h->name, h->port);
    time_t now = (time_t)(wall_ns() / 1000000000u);
    sigv4_dates(now, amzdate, date);
    const char *ph = with_body ? SIGV4_UNSIGNED : SIGV4_EMPTY_SHA256;
    struct sigv4_hdr sh[] = {{"host", hostport}, {"x-amz-content-sha256", ph},
                             {"x-amz-date", amzdate}};
    const char *q = strchr(path, '?');
    char *p = xstrndup(path, q ? (size_t)(q - path) : strlen(path));
    struct sigv4_req r = {method, p, q ? q + 1 : "", sh, 3, ph};
    struct sigv4_ctx ctx = {opt.region, "s3", now, 0};
    struct sigv4_creds k = {opt.access_key, opt.secret_key, NULL};
    char *auth = sigv4_authorization(&r, &ctx, &k, NULL);
    evbuffer_add_printf(out, "x-amz-date: %s\r\nx-amz-content-sha256: %s\r\nAuthorization: %s\r\n",
                        amzdate, ph, auth);
    free(auth);
    free(p);
}

void client_send(struct worker *w, const char *url, int with_body)
{
    const char *path;
    const struct host *h = host_of(url, &path);
    if (!h) {
        record(w, 0, E_CONNECT, 0);
        worker_next(w);
        return;
    }
    struct conn *c = conn_get(w, h);
    if (!c) {
        record(w, 0, E_CONNECT, 0);
        worker_next(w);
        return;
    }
    w->cur = c;
    c->busy = 1;
    c->status = 0;
    c->body = 0;
    c->clen = -1;
    c->loclen = 0;
    c->location[0] = '\0';
    c->cklen = 0;
    c->cksum[0] = '\0';
    c->done = 0;
    struct timeval tv = {opt.timeout_s, 0};
    evtimer_add(c->timer, &tv);
    llhttp_init(&c->parser, HTTP_RESPONSE, &rsettings);
    c->parser.data = c;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    const char *method = op_names[w->op];
    evbuffer_add_printf(out, "%s %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: shoal-loader\r\n",
                        method, path, h->name, h->port);
    if (w->op == OP_GET && opt.read_len > 0)
        evbuffer_add_printf(out, "Range: bytes=%lld-%lld\r\n", (long long)opt.read_off,
                            (long long)(opt.read_off + opt.read_len - 1));
    if ((opt.mode == M_SHOAL || opt.mode == M_DIRECT) && opt.access_key &&
        !strstr(path, "shoal_sig="))
        sign_native(out, method, h, path, with_body);
    if (opt.mode == M_S3) {
        struct s3_req q;
        s3_req_build(&q, &s3, method, opt.bucket, w->name, "",
                     w->op == OP_PUT ? SIGV4_UNSIGNED : SIGV4_EMPTY_SHA256, NULL, 0,
                     (time_t)(wall_ns() / 1000000000u));
        for (int i = 0; i < q.n; i++)
            evbuffer_add_printf(out, "%s\r\n", q.hdrs[i]);
        s3_req_free(&q);
    }
    if (with_body) {
        evbuffer_add_printf(out, "Content-Length: %llu\r\n", (unsigned long long)w->size);
        /* Through a proxy the body waits for 100 Continue, so a redirect
         * costs no upload. */
        if (opt.mode == M_SHOAL && w->size > 0) {
            w->awaiting_continue = 1;
            evbuffer_add_printf(out, "Expect: 100-continue\r\n\r\n");
            return;
        }
        evbuffer_add(out, "\r\n", 2);
        evbuffer_add_reference(out, shared_body, w->size, NULL, NULL);
        return;
    }
    evbuffer_add(out, "\r\n", 2);
}

void client_worker_close(struct worker *w)
{
    for (int k = 0; k < CONNS_PER_WORKER; k++)
        if (w->conns[k])
            conn_close(w->conns[k]);
}

void client_init(void)
{
    llhttp_settings_init(&rsettings);
    rsettings.on_header_field = r_field;
    rsettings.on_header_field_complete = r_field_done;
    rsettings.on_header_value = r_value;
    rsettings.on_header_value_complete = r_value_done;
    rsettings.on_headers_complete = r_headers;
    rsettings.on_body = r_body;
    rsettings.on_message_complete = r_done;
    hosts = xcalloc(64, sizeof(*hosts));
}

void client_free(void)
{
    free(hosts);
}
