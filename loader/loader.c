/*
 * shoal-loader: the bundled load generator.
 *
 * Each of --threads threads runs an event loop with its share of the
 * --workers; a worker runs one request at a time, back to back, over
 * keep-alive connections it keeps per host (so a worker following Shoal's
 * redirects holds one connection to the proxy and one to each target it
 * meets). Requests and responses go through llhttp, bodies are counted
 * (and optionally checksummed) as they stream, and PUT bodies are sent
 * from one shared random buffer without copies. Latencies go into
 * per-thread histograms that the main thread merges for the periodic line
 * and the final summary.
 *
 * Modes: shoal (native API through a proxy, following 307s), direct
 * (native API straight to the owning target, placed with the cluster map
 * and the same HRW as the cluster), s3 (path-style S3 with SigV4), http
 * (plain GET/PUT of <endpoint>/<bucket>/<name>, e.g. nginx).
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <getopt.h>
#include <jansson.h>
#include <llhttp.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include "cmap.h"
#include "hist.h"
#include "http.h"
#include "s3req.h"
#include "sigv4.h"
#include "util.h"

enum mode { M_SHOAL, M_DIRECT, M_S3, M_HTTP };
enum op { OP_GET, OP_PUT, OP_DEL, OP_N };
static const char *op_names[] = {"GET", "PUT", "DELETE"};

enum err { E_CONNECT, E_TIMEOUT, E_RESET, E_4XX, E_5XX, E_SHORT, E_VERIFY, E_REDIRECT, E_N };
static const char *err_names[] = {"connect", "timeout", "reset", "http_4xx", "http_5xx",
                                  "short_body", "verify", "redirect"};

static struct {
    char *endpoint, *bucket, *provider, *prefix, *names_file;
    char *access_key, *secret_key, *region; /* credentials: every mode signs with them */
    int list_names;
    enum mode mode;
    int workers, threads, pct_put, epochs, sequential, verify, cleanup, json;
    double duration, stats_interval;
    int64_t max_ops, num_objects, read_off, read_len;
    uint64_t min_size, max_size, seed;
    int timeout_s;
} opt;

struct host {
    char name[300];
    int port;
    struct sockaddr_in sa;
};

/* ---- shared run state ------------------------------------------------------- */

static char **names;
static int64_t n_names;
static uint32_t *perm;            /* per-epoch orders, epochs * n_names */
static int64_t total_ops_cap;     /* INT64_MAX when only time bounds the run */
static int64_t next_index;        /* atomic: the next op's index */
static int stopping;              /* atomic */
static struct cmap *cmap;         /* direct mode */
static struct s3_cfg s3;          /* s3 mode */
static char *shared_body;         /* PUT source */
static enum op phase_op = OP_GET; /* OP_DEL during cleanup */

struct opstats {
    uint64_t ops, bytes;
    uint64_t errs[E_N];
    struct hist h;
};

#define RBUF (256 * 1024)

struct thread {
    pthread_t tid;
    struct event_base *base;
    char *rbuf;                  /* RBUF bytes, shared by the thread's connections */
    struct worker *workers;
    int n;
    pthread_mutex_t mu;          /* guards st against the stats reader */
    struct opstats st[OP_N];
    int live;
    uint64_t rng;
};

static struct thread *threads;

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

/* ---- connections and workers ------------------------------------------------------ */

#define CONNS_PER_WORKER 8

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

struct worker {
    struct thread *t;
    struct conn *conns[CONNS_PER_WORKER];
    enum op op;
    int64_t index;
    const char *name;
    uint64_t size;               /* PUT body size */
    uint64_t start_us;
    int hops;
    int awaiting_continue;
    struct conn *cur;
    char *url;                   /* current request target, full URL */
};

static llhttp_settings_t rsettings;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t rnd(struct thread *t)
{
    /* xorshift64* */
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    return t->rng * 0x2545F4914F6CDD1DULL;
}

static void worker_next(struct worker *w);

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

static void send_request(struct worker *w, const char *url, int with_body);

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
        send_request(w, loc, w->op == OP_PUT);
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

static void send_request(struct worker *w, const char *url, int with_body)
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

static char *enc(const char *s)
{
    return sigv4_uri_encode(s, strlen(s), 1);
}

static char *op_url(const char *name)
{
    char *en = enc(name), *u;
    if (opt.mode == M_SHOAL) {
        u = xasprintf("%s/v1/objects/%s/%s%s%s", opt.endpoint, opt.bucket, en,
                      opt.provider ? "?provider=" : "", opt.provider ? opt.provider : "");
    } else if (opt.mode == M_DIRECT) {
        size_t kl;
        char *key = xasprintf("%s/%s/%s", opt.provider ? opt.provider : "shoal", opt.bucket,
                              name);
        kl = strlen(key);
        const struct cmap_node *t = cmap_owner(cmap, key, kl);
        free(key);
        u = xasprintf("%s/v1/objects/%s/%s%s%s", t ? t->url : opt.endpoint, opt.bucket, en,
                      opt.provider ? "?provider=" : "", opt.provider ? opt.provider : "");
    } else {
        u = xasprintf("%s/%s/%s", opt.endpoint, opt.bucket, en);
    }
    free(en);
    return u;
}

/* Pick and start the worker's next op, or stop it. */
static void worker_next(struct worker *w)
{
    struct thread *t = w->t;
    if (__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
        t->live--;
        if (t->live == 0)
            event_base_loopexit(t->base, NULL);
        return;
    }
    int64_t i = __atomic_fetch_add(&next_index, 1, __ATOMIC_RELAXED);
    if (i >= total_ops_cap) {
        __atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
        t->live--;
        if (t->live == 0)
            event_base_loopexit(t->base, NULL);
        return;
    }
    int64_t pos;
    if (opt.epochs > 0 || phase_op == OP_DEL) {
        int64_t e = i / n_names, k = i % n_names;
        pos = opt.sequential || phase_op == OP_DEL ? k : perm[(size_t)(e * n_names + k)];
    } else {
        pos = opt.sequential ? i % n_names : (int64_t)(rnd(t) % (uint64_t)n_names);
    }
    w->name = names[pos];
    w->op = phase_op == OP_DEL ? OP_DEL
            : (int)(rnd(t) % 100) < opt.pct_put ? OP_PUT
                                                : OP_GET;
    w->size = opt.min_size + (opt.max_size > opt.min_size
                                  ? rnd(t) % (opt.max_size - opt.min_size + 1)
                                  : 0);
    w->hops = 0;
    w->awaiting_continue = 0;
    w->start_us = now_us();
    char *url = op_url(w->name);
    send_request(w, url, w->op == OP_PUT);
    free(url);
}

static void start_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct thread *t = arg;
    for (int i = 0; i < t->n; i++)
        worker_next(&t->workers[i]);
}

static void *thread_main(void *arg)
{
    struct thread *t = arg;
    event_base_once(t->base, -1, EV_TIMEOUT, start_cb, t, NULL);
    event_base_dispatch(t->base);
    for (int i = 0; i < t->n; i++)
        for (int k = 0; k < CONNS_PER_WORKER; k++)
            if (t->workers[i].conns[k])
                conn_close(t->workers[i].conns[k]);
    return NULL;
}

/* ---- stats -------------------------------------------------------------------------------- */

static void collect(struct opstats out[OP_N])
{
    memset(out, 0, sizeof(struct opstats) * OP_N);
    for (int i = 0; i < opt.threads; i++) {
        pthread_mutex_lock(&threads[i].mu);
        for (int o = 0; o < OP_N; o++) {
            out[o].ops += threads[i].st[o].ops;
            out[o].bytes += threads[i].st[o].bytes;
            for (int e = 0; e < E_N; e++)
                out[o].errs[e] += threads[i].st[o].errs[e];
            hist_merge(&out[o].h, &threads[i].st[o].h);
        }
        pthread_mutex_unlock(&threads[i].mu);
    }
}

static uint64_t errs_total(const struct opstats *s)
{
    uint64_t n = 0;
    for (int e = 0; e < E_N; e++)
        n += s->errs[e];
    return n;
}

static void fmt_lat(char *out, size_t n, uint64_t us)
{
    if (us < 1000)
        snprintf(out, n, "%lluus", (unsigned long long)us);
    else if (us < 1000000)
        snprintf(out, n, "%.2fms", us / 1000.0);
    else
        snprintf(out, n, "%.2fs", us / 1e6);
}

static void print_line(double t, const struct opstats *now, const struct opstats *prev,
                       double dt)
{
    char line[512];
    int o = snprintf(line, sizeof(line), "%7.1fs", t);
    for (int k = 0; k < OP_N; k++) {
        uint64_t d_ops = now[k].ops - prev[k].ops, d_b = now[k].bytes - prev[k].bytes;
        if (d_ops == 0 && errs_total(&now[k]) == errs_total(&prev[k]))
            continue;
        char p50[16], p99[16];
        fmt_lat(p50, sizeof(p50), hist_quantile(&now[k].h, 0.5));
        fmt_lat(p99, sizeof(p99), hist_quantile(&now[k].h, 0.99));
        o += snprintf(line + o, sizeof(line) - (size_t)o,
                      "  %s %.0f ops/s %.1f MiB/s p50 %s p99 %s err %llu", op_names[k],
                      d_ops / dt, d_b / dt / 1048576.0, p50, p99,
                      (unsigned long long)errs_total(&now[k]));
    }
    printf("%s\n", line);
    fflush(stdout);
}

static json_t *summary_json(const struct opstats *s, double secs)
{
    json_t *ops = json_object();
    for (int k = 0; k < OP_N; k++) {
        if (s[k].ops == 0 && errs_total(&s[k]) == 0)
            continue;
        json_t *errs = json_object();
        for (int e = 0; e < E_N; e++)
            if (s[k].errs[e])
                json_object_set_new(errs, err_names[e], json_integer((json_int_t)s[k].errs[e]));
        const struct hist *h = &s[k].h;
        json_object_set_new(
            ops, op_names[k],
            json_pack("{s:I, s:I, s:f, s:f, s:{s:I, s:f, s:I, s:I, s:I, s:I}, s:o}", "count",
                      (json_int_t)s[k].ops, "bytes", (json_int_t)s[k].bytes, "mib_per_s",
                      s[k].bytes / secs / 1048576.0, "ops_per_s", s[k].ops / secs,
                      "latency_us", "min", (json_int_t)h->min, "avg",
                      h->n ? (double)h->sum / (double)h->n : 0.0, "p50",
                      (json_int_t)hist_quantile(h, 0.5), "p90",
                      (json_int_t)hist_quantile(h, 0.9), "p99",
                      (json_int_t)hist_quantile(h, 0.99), "max", (json_int_t)h->max,
                      "errors", errs));
    }
    return json_pack("{s:f, s:o}", "seconds", secs, "ops", ops);
}

static void print_summary(const struct opstats *s, double secs)
{
    printf("%-7s %10s %12s %10s %10s %9s %9s %9s %9s %9s %9s  %s\n", "op", "count", "bytes",
           "MiB/s", "ops/s", "min", "avg", "p50", "p90", "p99", "max", "errors");
    for (int k = 0; k < OP_N; k++) {
        if (s[k].ops == 0 && errs_total(&s[k]) == 0)
            continue;
        const struct hist *h = &s[k].h;
        char mn[16], av[16], p50[16], p90[16], p99[16], mx[16], errs[256] = "";
        fmt_lat(mn, sizeof(mn), h->min);
        fmt_lat(av, sizeof(av), h->n ? h->sum / h->n : 0);
        fmt_lat(p50, sizeof(p50), hist_quantile(h, 0.5));
        fmt_lat(p90, sizeof(p90), hist_quantile(h, 0.9));
        fmt_lat(p99, sizeof(p99), hist_quantile(h, 0.99));
        fmt_lat(mx, sizeof(mx), h->max);
        size_t o = 0;
        for (int e = 0; e < E_N; e++)
            if (s[k].errs[e])
                o += (size_t)snprintf(errs + o, sizeof(errs) - o, "%s%s=%llu", o ? "," : "",
                                      err_names[e], (unsigned long long)s[k].errs[e]);
        printf("%-7s %10llu %12llu %10.1f %10.0f %9s %9s %9s %9s %9s %9s  %s\n", op_names[k],
               (unsigned long long)s[k].ops, (unsigned long long)s[k].bytes,
               s[k].bytes / secs / 1048576.0, s[k].ops / secs, mn, av, p50, p90, p99, mx,
               o ? errs : "0");
    }
}

/* ---- a run -------------------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Run the workers until the op cap, the duration or ^C; fill res. */
static double run(struct opstats res[OP_N], int live_stats)
{
    next_index = 0;
    stopping = 0;
    threads = xcalloc((size_t)opt.threads, sizeof(*threads));
    for (int i = 0; i < opt.threads; i++) {
        struct thread *t = &threads[i];
        t->base = event_base_new();
        t->rbuf = xmalloc(RBUF);
        t->n = opt.workers / opt.threads + (i < opt.workers % opt.threads);
        t->live = t->n;
        t->workers = xcalloc((size_t)t->n + 1, sizeof(*t->workers));
        for (int k = 0; k < t->n; k++)
            t->workers[k].t = t;
        t->rng = opt.seed * 0x9E3779B97F4A7C15ULL + (uint64_t)i * 7919 + 1;
        pthread_mutex_init(&t->mu, NULL);
    }
    uint64_t t0 = now_us();
    for (int i = 0; i < opt.threads; i++)
        if (threads[i].n)
            pthread_create(&threads[i].tid, NULL, thread_main, &threads[i]);
    struct opstats prev[OP_N], now[OP_N];
    memset(prev, 0, sizeof(prev));
    double last = 0;
    int tty = isatty(1);
    for (;;) {
        usleep(50000);
        double el = (now_us() - t0) / 1e6;
        if (interrupted || (opt.duration > 0 && el >= opt.duration))
            __atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
        int alive = 0;
        for (int i = 0; i < opt.threads; i++)
            alive |= __atomic_load_n(&threads[i].live, __ATOMIC_RELAXED) > 0;
        if (!alive)
            break;
        if (live_stats && opt.stats_interval > 0 && el - last >= opt.stats_interval) {
            collect(now);
            if (!opt.json)
                print_line(el, now, prev, el - last);
            memcpy(prev, now, sizeof(prev));
            last = el;
        } else if (live_stats && tty && !opt.json) {
            collect(now);
            fprintf(stderr, "\r%6.1fs  %llu ops", el,
                    (unsigned long long)(now[0].ops + now[1].ops + now[2].ops));
        }
    }
    for (int i = 0; i < opt.threads; i++)
        if (threads[i].n)
            pthread_join(threads[i].tid, NULL);
    double secs = (now_us() - t0) / 1e6;
    if (tty && !opt.json && live_stats)
        fprintf(stderr, "\r%40s\r", "");
    collect(res);
    for (int i = 0; i < opt.threads; i++) {
        event_base_free(threads[i].base);
        free(threads[i].rbuf);
        free(threads[i].workers);
        pthread_mutex_destroy(&threads[i].mu);
    }
    free(threads);
    return secs;
}

/* ---- setup -------------------------------------------------------------------------------- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "shoal-loader: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static size_t sink(char *p, size_t s, size_t n, void *arg)
{
    gbuf_add(arg, p, s * n);
    return s * n;
}

/* A blocking request for set-up (before any event loop runs). */
static long fetch(const char *method, const char *url, struct gbuf *body, char *err,
                  size_t errlen)
{
    CURL *c = curl_easy_init();
    char eb[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, eb);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    char sigv4[128];
    if (opt.access_key) {
        snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", opt.region);
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4);
        curl_easy_setopt(c, CURLOPT_USERNAME, opt.access_key);
        curl_easy_setopt(c, CURLOPT_PASSWORD, opt.secret_key);
    }
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    else
        snprintf(err, errlen, "%s", eb[0] ? eb : curl_easy_strerror(rc));
    curl_easy_cleanup(c);
    return status;
}

static void check_target(void)
{
    char err[CURL_ERROR_SIZE];
    struct gbuf b = {0};
    char *url;
    if (opt.mode == M_SHOAL || opt.mode == M_DIRECT) {
        url = xasprintf("%s/v1/buckets/%s%s%s", opt.endpoint, opt.bucket,
                        opt.provider ? "?provider=" : "", opt.provider ? opt.provider : "");
        long st = fetch("HEAD", url, &b, err, sizeof(err));
        if (st == 0)
            die("cannot reach %s: %s", opt.endpoint, err);
        if (st == 404 && !opt.provider)
            die("bucket '%s' not found at %s (create it with PUT /v1/buckets/%s)", opt.bucket,
                opt.endpoint, opt.bucket);
        if (st >= 400 && st != 404)
            die("%s answered %ld for bucket '%s'", opt.endpoint, st, opt.bucket);
        free(url);
        if (opt.mode == M_DIRECT) {
            gbuf_free(&b);
            url = xasprintf("%s/v1/cluster", opt.endpoint);
            if (fetch("GET", url, &b, err, sizeof(err)) != 200)
                die("cannot read the cluster map from %s", opt.endpoint);
            json_t *j = json_loadb(b.p, b.n, 0, NULL);
            char e2[256];
            cmap = j ? cmap_from_json(j, e2, sizeof(e2)) : NULL;
            json_decref(j);
            if (!cmap || cmap->n_targets == 0)
                die("the cluster map from %s has no targets", opt.endpoint);
            free(url);
        }
    } else {
        url = xasprintf("%s/", opt.endpoint);
        if (fetch("GET", url, &b, err, sizeof(err)) == 0)
            die("cannot reach %s: %s", opt.endpoint, err);
        free(url);
    }
    gbuf_free(&b);
}

static void add_name(const char *n)
{
    names = xrealloc(names, sizeof(char *) * (size_t)(n_names + 1));
    names[n_names++] = xstrdup(n);
}

/* The bucket's own listing (native API, paged), under --prefix if given. */
static void list_bucket_names(void)
{
    char err[CURL_ERROR_SIZE];
    char *token = xstrdup("");
    char *ep = sigv4_uri_encode(opt.prefix, strlen(opt.prefix), 0);
    for (;;) {
        char *et = sigv4_uri_encode(token, strlen(token), 0);
        char *url = xasprintf("%s/v1/buckets/%s/objects?limit=10000&prefix=%s&token=%s%s%s",
                              opt.endpoint, opt.bucket, ep, et,
                              opt.provider ? "&provider=" : "", opt.provider ? opt.provider : "");
        struct gbuf b = {0};
        long st = fetch("GET", url, &b, err, sizeof(err));
        free(url);
        free(et);
        json_t *j = st == 200 ? json_loadb(b.p, b.n, 0, NULL) : NULL;
        gbuf_free(&b);
        if (!j)
            die("cannot list bucket '%s' (status %ld)", opt.bucket, st);
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(j, "objects"), i, o) {
            const char *n = json_string_value(json_object_get(o, "name"));
            if (n)
                add_name(n);
        }
        free(token);
        token = xstrdup(json_string_value(json_object_get(j, "next")) ?: "");
        json_decref(j);
        if (!token[0])
            break;
    }
    free(token);
    free(ep);
    if (n_names == 0)
        die("bucket '%s' lists no objects%s%s", opt.bucket, opt.prefix[0] ? " under " : "",
            opt.prefix);
}

static void make_names(void)
{
    if (opt.list_names) {
        list_bucket_names();
        return;
    }
    if (opt.names_file) {
        size_t len;
        char *text = file_read(opt.names_file, 1u << 30, &len);
        if (!text)
            die("cannot read --names-file %s: %s", opt.names_file, strerror(errno));
        for (char *save = NULL, *l = strtok_r(text, "\r\n", &save); l;
             l = strtok_r(NULL, "\r\n", &save)) {
            if (!l[0])
                continue;
            add_name(l);
        }
        free(text);
        if (n_names == 0)
            die("--names-file %s holds no names", opt.names_file);
        return;
    }
    n_names = opt.num_objects;
    names = xcalloc((size_t)n_names, sizeof(char *));
    for (int64_t i = 0; i < n_names; i++)
        names[i] = xasprintf("%s%08lld", opt.prefix, (long long)i);
}

static void make_perms(void)
{
    int epochs = opt.epochs > 0 ? opt.epochs : 0;
    if (!epochs)
        return;
    perm = xcalloc((size_t)(epochs * n_names), sizeof(uint32_t));
    uint64_t r = opt.seed * 0xD1B54A32D192ED03ULL + 3;
    for (int e = 0; e < epochs; e++) {
        uint32_t *p = perm + (size_t)e * (size_t)n_names;
        for (int64_t i = 0; i < n_names; i++)
            p[i] = (uint32_t)i;
        for (int64_t i = n_names - 1; i > 0; i--) { /* Fisher-Yates */
            r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
            int64_t j = (int64_t)((r * 0x2545F4914F6CDD1DULL) % (uint64_t)(i + 1));
            uint32_t t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
    }
}

/* ---- options ----------------------------------------------------------------------------- */

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    uint64_t m = 1;
    if (!strcasecmp(end, "") || !strcasecmp(end, "B"))
        m = 1;
    else if (!strcasecmp(end, "K") || !strcasecmp(end, "KiB") || !strcasecmp(end, "KB"))
        m = 1024;
    else if (!strcasecmp(end, "M") || !strcasecmp(end, "MiB") || !strcasecmp(end, "MB"))
        m = 1024 * 1024;
    else if (!strcasecmp(end, "G") || !strcasecmp(end, "GiB") || !strcasecmp(end, "GB"))
        m = 1024ull * 1024 * 1024;
    else
        return -1;
    *out = (uint64_t)(v * (double)m);
    return 0;
}

static int parse_duration(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return -1;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        *out = v;
    else if (!strcmp(end, "ms"))
        *out = v / 1000;
    else if (!strcmp(end, "m"))
        *out = v * 60;
    else if (!strcmp(end, "h"))
        *out = v * 3600;
    else
        return -1;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: shoal-loader --endpoint URL --bucket NAME [options]\n\n"
            "  --mode shoal|direct|s3|http  shoal: native API via a proxy, following redirects\n"
            "                               (default); direct: straight to the owning target;\n"
            "                               s3: path-style S3 with SigV4 (AWS_* variables);\n"
            "                               http: GET/PUT <endpoint>/<bucket>/<name>\n"
            "  --provider NAME            remote bucket's provider (e.g. s3) in shoal/direct modes\n"
            "  --access-key K --secret-key S  sign every request (SigV4) with this key; default:\n"
            "                               AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n"
            "  --region R                 region in the signature (default AWS_REGION, us-east-1)\n"
            "  --workers N                concurrent requests (default 16)\n"
            "  --threads N                event-loop threads (default: CPUs)\n"
            "  --pct-put N                percent of PUTs, 0..100 (default 0)\n"
            "  --duration T               run time: 30s, 2m... (default 30s unless a count is set)\n"
            "  --epochs N                 pass over every name N times (each pass in a new order)\n"
            "  --max-ops N                stop after N operations\n"
            "  --min-size S, --max-size S PUT sizes, e.g. 4KiB, 1MiB (default 1MiB)\n"
            "  --num-objects N            names: N generated names (default 1000)...\n"
            "  --prefix P                 ...named P00000000, P00000001, ... (default loader/)\n"
            "  --names-file F             ...or one name per line from F\n"
            "  --list-names               ...or the bucket's own listing (under --prefix if set)\n"
            "  --sequential               names in order instead of random\n"
            "  --read-off N --read-len N  GET a byte range of each object\n"
            "  --verify                   check GET bodies against X-Shoal-Checksum\n"
            "  --cleanup                  DELETE every name at the end\n"
            "  --seed N                   random seed (default 1)\n"
            "  --stats-interval T         periodic line (default 10s; 0 turns it off)\n"
            "  --timeout T                per request (default 60s)\n"
            "  --json                     final summary as JSON\n");
}

int main(int argc, char **argv)
{
    opt.workers = 16;
    opt.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    opt.min_size = opt.max_size = 1 << 20;
    opt.num_objects = 1000;
    opt.prefix = NULL; /* "loader/" for generated names, "" for a listing */
    opt.seed = 1;
    opt.stats_interval = 10;
    opt.read_len = -1;
    opt.timeout_s = 60;
    opt.max_ops = -1;
    static const struct option lo[] = {
        {"endpoint", 1, 0, 'e'}, {"bucket", 1, 0, 'b'}, {"provider", 1, 0, 'P'},
        {"mode", 1, 0, 'm'}, {"workers", 1, 0, 'w'}, {"threads", 1, 0, 't'},
        {"pct-put", 1, 0, 'p'}, {"duration", 1, 0, 'd'}, {"epochs", 1, 0, 'E'},
        {"max-ops", 1, 0, 'x'}, {"min-size", 1, 0, 's'}, {"max-size", 1, 0, 'S'},
        {"num-objects", 1, 0, 'n'}, {"prefix", 1, 0, 'f'}, {"names-file", 1, 0, 'F'},
        {"sequential", 0, 0, 'q'}, {"list-names", 0, 0, 'L'}, {"read-off", 1, 0, 'o'}, {"read-len", 1, 0, 'l'},
        {"verify", 0, 0, 'v'}, {"cleanup", 0, 0, 'c'}, {"seed", 1, 0, 'r'},
        {"stats-interval", 1, 0, 'i'}, {"timeout", 1, 0, 'T'}, {"json", 0, 0, 'j'},
        {"access-key", 1, 0, 'A'}, {"secret-key", 1, 0, 'K'}, {"region", 1, 0, 'R'},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    uint64_t u;
    double d;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case 'e': opt.endpoint = optarg; break;
        case 'A': opt.access_key = optarg; break;
        case 'K': opt.secret_key = optarg; break;
        case 'R': opt.region = optarg; break;
        case 'b': opt.bucket = optarg; break;
        case 'P': opt.provider = optarg; break;
        case 'm':
            if (!strcmp(optarg, "shoal")) opt.mode = M_SHOAL;
            else if (!strcmp(optarg, "direct")) opt.mode = M_DIRECT;
            else if (!strcmp(optarg, "s3")) opt.mode = M_S3;
            else if (!strcmp(optarg, "http")) opt.mode = M_HTTP;
            else die("--mode must be shoal, direct, s3 or http, not '%s'", optarg);
            break;
        case 'w': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 100000) die("--workers must be 1..100000"); opt.workers = (int)u; break;
        case 't': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 256) die("--threads must be 1..256"); opt.threads = (int)u; break;
        case 'p': if (parse_u64(optarg, strlen(optarg), &u) || u > 100) die("--pct-put must be 0..100"); opt.pct_put = (int)u; break;
        case 'd': if (parse_duration(optarg, &opt.duration)) die("--duration: '%s' is not a duration like 30s or 2m", optarg); break;
        case 'E': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 1000) die("--epochs must be 1..1000"); opt.epochs = (int)u; break;
        case 'x': if (parse_u64(optarg, strlen(optarg), &u) || u < 1) die("--max-ops must be a positive number"); opt.max_ops = (int64_t)u; break;
        case 's': if (parse_size(optarg, &opt.min_size)) die("--min-size: '%s' is not a size like 4KiB", optarg); break;
        case 'S': if (parse_size(optarg, &opt.max_size)) die("--max-size: '%s' is not a size like 1MiB", optarg); break;
        case 'n': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 100000000) die("--num-objects must be 1..100000000"); opt.num_objects = (int64_t)u; break;
        case 'f': opt.prefix = optarg; break;
        case 'F': opt.names_file = optarg; break;
        case 'q': opt.sequential = 1; break;
        case 'L': opt.list_names = 1; break;
        case 'o': if (parse_size(optarg, &u)) die("--read-off: bad size"); opt.read_off = (int64_t)u; break;
        case 'l': if (parse_size(optarg, &u) || u == 0) die("--read-len: bad size"); opt.read_len = (int64_t)u; break;
        case 'v': opt.verify = 1; break;
        case 'c': opt.cleanup = 1; break;
        case 'r': if (parse_u64(optarg, strlen(optarg), &opt.seed)) die("--seed must be a number"); break;
        case 'i': if (!strcmp(optarg, "0")) opt.stats_interval = 0; else if (parse_duration(optarg, &d)) die("--stats-interval: bad duration"); else opt.stats_interval = d; break;
        case 'T': if (parse_duration(optarg, &d)) die("--timeout: bad duration"); opt.timeout_s = d < 1 ? 1 : (int)d; break;
        case 'j': opt.json = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        die("unexpected argument '%s' (see --help)", argv[optind]);
    if (!opt.endpoint || !opt.bucket)
        die("--endpoint and --bucket are required (see --help)");
    if (strncmp(opt.endpoint, "http://", 7))
        die("--endpoint must be an http:// URL");
    size_t el = strlen(opt.endpoint);
    while (el > 7 && opt.endpoint[el - 1] == '/')
        opt.endpoint[--el] = '\0';
    if (opt.min_size > opt.max_size)
        die("--min-size is larger than --max-size");
    if (opt.max_size > (1ull << 32))
        die("--max-size may be at most 4GiB");
    if (opt.pct_put > 0 && opt.read_len > 0)
        die("--read-len applies to GETs; use it with --pct-put 0");
    if (opt.threads > opt.workers)
        opt.threads = opt.workers;
    if (opt.list_names && (opt.mode == M_S3 || opt.mode == M_HTTP))
        die("--list-names reads a Shoal bucket's listing: use it with --mode shoal or direct");
    if (!opt.prefix)
        opt.prefix = opt.list_names ? "" : "loader/";
    if (opt.duration == 0 && opt.epochs == 0 && opt.max_ops < 0)
        opt.duration = 30;

    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_sigint);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    llhttp_settings_init(&rsettings);
    rsettings.on_header_field = r_field;
    rsettings.on_header_field_complete = r_field_done;
    rsettings.on_header_value = r_value;
    rsettings.on_header_value_complete = r_value_done;
    rsettings.on_headers_complete = r_headers;
    rsettings.on_body = r_body;
    rsettings.on_message_complete = r_done;
    hosts = xcalloc(64, sizeof(*hosts));
    if (!opt.access_key && getenv("AWS_ACCESS_KEY_ID") && getenv("AWS_ACCESS_KEY_ID")[0])
        opt.access_key = getenv("AWS_ACCESS_KEY_ID");
    if (!opt.secret_key)
        opt.secret_key = getenv("AWS_SECRET_ACCESS_KEY");
    if (opt.access_key && (!opt.secret_key || !opt.secret_key[0]))
        die("an access key needs its secret: --secret-key or AWS_SECRET_ACCESS_KEY");
    if (!opt.region)
        opt.region = getenv("AWS_REGION") && getenv("AWS_REGION")[0] ? getenv("AWS_REGION")
                                                                      : "us-east-1";
    if (opt.mode == M_S3)
        s3_cfg_resolve(&s3, opt.endpoint, opt.region, "path", opt.access_key, opt.secret_key,
                       NULL, NULL);
    check_target();
    make_names();
    make_perms();
    shared_body = xmalloc(opt.max_size + 1);
    uint64_t r = opt.seed | 1;
    for (uint64_t i = 0; i + 8 <= opt.max_size; i += 8) {
        r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
        uint64_t v = r * 0x2545F4914F6CDD1DULL;
        memcpy(shared_body + i, &v, 8);
    }
    total_ops_cap = INT64_MAX;
    if (opt.epochs > 0)
        total_ops_cap = (int64_t)opt.epochs * n_names;
    if (opt.max_ops > 0 && opt.max_ops < total_ops_cap)
        total_ops_cap = opt.max_ops;

    struct opstats res[OP_N];
    double secs = run(res, 1);
    if (opt.json) {
        json_t *j = summary_json(res, secs);
        if (opt.cleanup) {
            phase_op = OP_DEL;
            total_ops_cap = n_names;
            struct opstats del[OP_N];
            double ds = run(del, 0);
            json_object_set_new(j, "cleanup", summary_json(del, ds));
        }
        char *s = json_dumps(j, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(j);
    } else {
        print_summary(res, secs);
        if (opt.cleanup) {
            phase_op = OP_DEL;
            total_ops_cap = n_names;
            struct opstats del[OP_N];
            double ds = run(del, 0);
            printf("cleanup: deleted %llu of %lld names in %.1fs (errors %llu)\n",
                   (unsigned long long)del[OP_DEL].ops, (long long)n_names, ds,
                   (unsigned long long)errs_total(&del[OP_DEL]));
        }
    }
    uint64_t errs = 0;
    for (int k = 0; k < OP_N; k++)
        errs += errs_total(&res[k]);
    for (int64_t i = 0; i < n_names; i++)
        free(names[i]);
    free(names);
    free(perm);
    free(shared_body);
    free(hosts);
    cmap_unref(cmap);
    if (opt.mode == M_S3)
        s3_cfg_free(&s3);
    curl_global_cleanup();
    return errs ? 3 : 0;
}
