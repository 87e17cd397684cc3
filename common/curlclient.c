/*
 * curlclient: the classic libcurl multi-socket integration. curl tells us which
 * sockets to watch (sock_cb) and when to time out (timer_cb); libevent tells
 * curl when a socket is ready (ev_cb). Finished transfers are collected in
 * check_done() and their callbacks run there, outside any curl call that
 * could re-enter.
 *
 * Response headers are gathered line by line; a new status line (after a
 * 100 Continue, say) starts the set afresh, and on_headers fires at the
 * blank line that ends a final (>= 200) response's headers.
 *
 * Body pieces come from curl 16 KiB at a time (CURL_MAX_WRITE_SIZE,
 * whatever the receive buffer); they are gathered per transfer, up to
 * STAGE_MAX, and handed to on_data when that is full or when the curl
 * call that received them returns (and before on_done): a consumer
 * writing them to a file or a socket makes one call per read of the
 * socket, not one per 16 KiB. on_data then runs outside curl, so what it
 * does that would re-enter curl (a resume) waits for the loop.
 *
 * Every transfer is counted as it ends, by backend (the URL's host and
 * port) and operation (the method): requests, errors (failed transfers,
 * 5xx, and 4xx but 404 and 412, which are answers), bytes each way and
 * duration.
 */
#include "curlclient.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "metrics.h"
#include "util.h"

#define STAGE_MAX (256u << 10)   /* body bytes gathered before on_data */

struct curlclient {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    int running;
    struct curlclient_xfer *xfers; /* in flight, for curlclient_free */
    int delivering;              /* an on_data runs: curl is not to be re-entered */
};

struct curlclient_xfer {
    struct curlclient *c;
    struct curlclient_xfer *prev, *next;
    CURL *easy;
    struct curl_slist *hdrs;
    const struct curlclient_ops *ops;
    void *arg;
    char **rh;                   /* response header lines, "name\0value" */
    int n_rh;
    int headers_done;
    int follow;                  /* redirects are followed: theirs are not the answer */
    int stopped;                 /* a callback asked to stop */
    int pause_bits;              /* CURLPAUSE_RECV when in force */
    char *stage;                 /* body bytes not yet given to on_data */
    size_t staged, stage_cap;
    char errbuf[CURL_ERROR_SIZE];
    char labels[180];            /* "backend,provider,op" of the metrics */
    char where[150];             /* "backend,provider" */
};

static struct metric_family *m_req, *m_err, *m_bytes, *m_lat;

static void metrics_register(void)
{
    static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                    0.5,   1,      2.5,   5,    10,   30,   60,  300};
    m_req = metrics_family(METRIC_COUNTER, "shoal_backend_requests_total",
                           "Requests to remote backends, by backend (host:port), provider "
                           "(s3, azure, shoal, http) and operation.",
                           "backend,provider,op", NULL, 0);
    m_err = metrics_family(METRIC_COUNTER, "shoal_backend_errors_total",
                           "Backend requests that failed: no answer, 5xx, or a 4xx other than "
                           "404 and 412.",
                           "backend,provider,op", NULL, 0);
    m_bytes = metrics_family(METRIC_COUNTER, "shoal_backend_bytes_total",
                             "Bytes to and from remote backends (bodies), by backend and "
                             "direction (in: received, out: sent).",
                             "backend,provider,direction", NULL, 0);
    m_lat = metrics_family(METRIC_HISTOGRAM, "shoal_backend_request_duration_seconds",
                           "Backend requests from start to end, by backend and operation.",
                           "backend,provider,op", bounds, (int)ARRAY_LEN(bounds));
}

/* x's labels: "host[:port],provider" and that with ",method" (lower-case). */
static void labels_of(struct curlclient_xfer *x, const char *method, const char *url,
                      const char *provider)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t hl = strcspn(h, "/?#");
    char m[16];
    size_t ml = 0;
    for (; method[ml] && ml < sizeof(m) - 1; ml++)
        m[ml] = (char)(method[ml] >= 'A' && method[ml] <= 'Z' ? method[ml] + 32 : method[ml]);
    m[ml] = '\0';
    snprintf(x->where, sizeof(x->where), "%.*s,%s", (int)(hl < 120 ? hl : 120), h,
             provider ? provider : "http");
    snprintf(x->labels, sizeof(x->labels), "%s,%s", x->where, m);
}

/* x ended with status (0: no answer): counted. */
static void count(struct curlclient_xfer *x, long status)
{
    curl_off_t us = 0, down = 0, up = 0;
    curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &us);
    curl_easy_getinfo(x->easy, CURLINFO_SIZE_DOWNLOAD_T, &down);
    curl_easy_getinfo(x->easy, CURLINFO_SIZE_UPLOAD_T, &up);
    metrics_add(metrics_series(m_req, x->labels), 1);
    if (status == 0 || status >= 500 || (status >= 400 && status != 404 && status != 412))
        metrics_add(metrics_series(m_err, x->labels), 1);
    metrics_observe(metrics_series(m_lat, x->labels), (double)us / 1e6);
    char l[180];
    snprintf(l, sizeof(l), "%s,in", x->where);
    metrics_add(metrics_series(m_bytes, l), (uint64_t)down);
    snprintf(l, sizeof(l), "%s,out", x->where);
    metrics_add(metrics_series(m_bytes, l), (uint64_t)up);
}

struct sock {
    struct event *ev;
};

static void xfer_free(struct curlclient_xfer *x)
{
    struct curlclient *c = x->c;
    if (x->prev)
        x->prev->next = x->next;
    else
        c->xfers = x->next;
    if (x->next)
        x->next->prev = x->prev;
    curl_multi_remove_handle(c->multi, x->easy);
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdrs);
    for (int i = 0; i < x->n_rh; i++)
        free(x->rh[i]);
    free(x->rh);
    free(x->stage);
    free(x);
}

/* The body bytes x gathered go to its on_data: 0, or -1 when it asked to
 * stop (curl is told at its next piece, or sees the end as cancelled). */
static int deliver(struct curlclient_xfer *x)
{
    if (!x->staged)
        return x->stopped ? -1 : 0;
    size_t n = x->staged, cap = x->stage_cap;
    char *p = x->stage;
    x->staged = 0;
    if (x->stopped)
        return -1;
    /* the buffer is on_data's while it runs: a piece curl hands over
     * meanwhile (an unpause inside it) is gathered into another */
    x->stage = NULL;
    x->stage_cap = 0;
    x->c->delivering++;
    int rc = x->ops->on_data(x->arg, x, p, n);
    x->c->delivering--;
    if (x->stage) {
        free(p);
    } else {
        x->stage = p;
        x->stage_cap = cap;
    }
    if (rc)
        x->stopped = 1;
    return rc ? -1 : 0;
}

/* After a curl call: every transfer's gathered bytes are delivered. One
 * that stops here, outside curl's callbacks, is unpaused so that curl
 * comes back to it and aborts it at its next piece. */
static void deliver_all(struct curlclient *c)
{
    for (struct curlclient_xfer *x = c->xfers; x; x = x->next) {
        if (x->staged && deliver(x) && x->pause_bits) {
            x->pause_bits = 0;
            curl_easy_pause(x->easy, CURLPAUSE_CONT);
            event_active(c->timer, EV_TIMEOUT, 0);
        }
    }
}

/* curl_multi_socket_action, then what it received goes to its consumers. */
static void act(struct curlclient *c, curl_socket_t fd, int action)
{
    curl_multi_socket_action(c->multi, fd, action, &c->running);
    deliver_all(c);
}

static void check_done(struct curlclient *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct curlclient_xfer *x;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        deliver(x);              /* the body's last bytes before its end */
        CURLcode res = m->data.result;
        long status = 0;
        if (res == CURLE_OK)
            curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        if (res == CURLE_OK && !x->headers_done && x->ops->on_headers) {
            x->headers_done = 1;
            if (x->ops->on_headers(x->arg, x, (int)status))
                x->stopped = 1;
        }
        count(x, x->stopped || res != CURLE_OK ? 0 : status);
        const char *err = x->stopped        ? "cancelled"
                          : res == CURLE_OK ? NULL
                          : x->errbuf[0]    ? x->errbuf
                                            : curl_easy_strerror(res);
        x->ops->on_done(x->arg, x, x->stopped || res != CURLE_OK ? 0 : (int)status, err);
        xfer_free(x);
    }
}

static void ev_cb(evutil_socket_t fd, short what, void *arg)
{
    struct curlclient *c = arg;
    int action = ((what & EV_READ) ? CURL_CSELECT_IN : 0) |
                 ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    act(c, fd, action);
    /* The timer stays as curl last set it: a callback run from check_done
     * may have started a transfer that needs it. */
    check_done(c);
}

static void timer_ev_cb(evutil_socket_t fd, short what, void *arg)
{
    struct curlclient *c = arg;
    (void)fd;
    (void)what;
    act(c, CURL_SOCKET_TIMEOUT, 0);
    check_done(c);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *arg)
{
    struct curlclient *c = arg;
    (void)multi;
    if (timeout_ms < 0) {
        evtimer_del(c->timer);
        return 0;
    }
    /* A zero timeout still goes through the loop, so callbacks never run
     * from inside curlclient_start(). */
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
    return 0;
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *arg, void *sockp)
{
    struct curlclient *c = arg;
    struct sock *sk = sockp;
    (void)e;
    if (what == CURL_POLL_REMOVE) {
        if (sk) {
            event_free(sk->ev);
            free(sk);
            curl_multi_assign(c->multi, s, NULL);
        }
        return 0;
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) |
                         ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    if (!sk) {
        sk = xcalloc(1, sizeof(*sk));
        curl_multi_assign(c->multi, s, sk);
    } else {
        event_free(sk->ev);
    }
    sk->ev = event_new(c->base, s, kind, ev_cb, c);
    event_add(sk->ev, NULL);
    return 0;
}

static size_t header_cb(char *p, size_t size, size_t n, void *arg)
{
    struct curlclient_xfer *x = arg;
    size_t len = size * n;
    if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
        for (int i = 0; i < x->n_rh; i++)
            free(x->rh[i]);
        x->n_rh = 0;
        return len;
    }
    size_t l = len;
    while (l > 0 && (p[l - 1] == '\r' || p[l - 1] == '\n'))
        l--;
    if (l == 0) {
        long status = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        if (x->follow && status >= 300 && status < 400 && curlclient_header(x, "Location"))
            return len;          /* curl goes on to where it points */
        if (status >= 200 && !x->headers_done) {
            x->headers_done = 1;
            if (x->ops->on_headers && x->ops->on_headers(x->arg, x, (int)status)) {
                x->stopped = 1;
                return 0; /* curl aborts the transfer */
            }
        }
        return len;
    }
    const char *colon = memchr(p, ':', l);
    if (!colon)
        return len;
    const char *v = colon + 1;
    while (v < p + l && (*v == ' ' || *v == '\t'))
        v++;
    size_t nl = (size_t)(colon - p), vl = (size_t)(p + l - v);
    char *h = xmalloc(nl + vl + 2);
    memcpy(h, p, nl);
    h[nl] = '\0';
    memcpy(h + nl + 1, v, vl);
    h[nl + 1 + vl] = '\0';
    x->rh = xrealloc(x->rh, sizeof(char *) * (size_t)(x->n_rh + 1));
    x->rh[x->n_rh++] = h;
    return len;
}

static size_t write_cb(char *p, size_t size, size_t n, void *arg)
{
    struct curlclient_xfer *x = arg;
    size_t len = size * n;
    if (!x->ops->on_data)
        return len;
    if (x->staged + len > STAGE_MAX && deliver(x))
        return 0;                /* curl aborts the transfer */
    if (len > STAGE_MAX / 2) {   /* large already: no copy */
        if (deliver(x))
            return 0;
        x->c->delivering++;
        int rc = x->ops->on_data(x->arg, x, p, len);
        x->c->delivering--;
        if (rc)
            x->stopped = 1;
        return rc ? 0 : len;
    }
    if (x->stopped)
        return 0;
    if (x->staged + len > x->stage_cap) {
        size_t cap = x->stage_cap ? x->stage_cap : 32u << 10;
        while (cap < x->staged + len)
            cap *= 2;
        x->stage = xrealloc(x->stage, cap);
        x->stage_cap = cap;
    }
    memcpy(x->stage + x->staged, p, len);
    x->staged += len;
    return len;
}

static size_t read_cb(char *buf, size_t size, size_t n, void *arg)
{
    struct curlclient_xfer *x = arg;
    ssize_t r = x->ops->on_read(x->arg, buf, size * n);
    return r < 0 ? CURL_READFUNC_ABORT : (size_t)r;
}

/* curl rewinds the upload to send it again after a redirect (always to 0). */
static int seek_cb(void *arg, curl_off_t off, int origin)
{
    struct curlclient_xfer *x = arg;
    if (off != 0 || origin != SEEK_SET || x->ops->on_rewind(x->arg))
        return CURL_SEEKFUNC_CANTSEEK;
    return CURL_SEEKFUNC_OK;
}

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct curlclient *curlclient_new(struct event_base *base)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT, met_once = PTHREAD_ONCE_INIT;
    pthread_once(&once, global_init);
    pthread_once(&met_once, metrics_register);
    struct curlclient *c = xcalloc(1, sizeof(*c));
    c->base = base;
    c->multi = curl_multi_init();
    c->timer = evtimer_new(base, timer_ev_cb, c);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 64L);
    return c;
}

struct event_base *curlclient_base(const struct curlclient *c)
{
    return c->base;
}

void curlclient_free(struct curlclient *c)
{
    if (!c)
        return;
    while (c->xfers)
        xfer_free(c->xfers);
    curl_multi_cleanup(c->multi);
    event_free(c->timer);
    free(c);
}

struct curlclient_xfer *curlclient_start(struct curlclient *c, const char *method, const char *url,
                                         const char *const *hdrs, int n,
                                         const struct curlclient_opt *opt,
                                         const struct curlclient_ops *ops, void *arg)
{
    long timeout_ms = opt->timeout_ms;
    struct curlclient_xfer *x = xcalloc(1, sizeof(*x));
    x->c = c;
    x->ops = ops;
    x->arg = arg;
    labels_of(x, method, url, opt->provider);
    x->easy = curl_easy_init();
    CURL *e = x->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    /* object data in large pieces (curl's default is 16 KiB) */
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
    /* a peer that stalls (accepts, then says nothing) fails in 30 s, not at
     * the end of the whole transfer's limit */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 30L);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET"))
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (opt->upload_len >= 0) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)opt->upload_len);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, read_cb);
        curl_easy_setopt(e, CURLOPT_READDATA, x);
        if (ops->on_rewind) {
            curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, seek_cb);
            curl_easy_setopt(e, CURLOPT_SEEKDATA, x);
        }
    }
    if (opt->follow > 0) {
        x->follow = 1;
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(e, CURLOPT_MAXREDIRS, (long)opt->follow);
        curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    }
    x->hdrs = curl_slist_append(x->hdrs, "Expect:");
    for (int i = 0; i < n; i++)
        x->hdrs = curl_slist_append(x->hdrs, hdrs[i]);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
    x->next = c->xfers;
    if (c->xfers)
        c->xfers->prev = x;
    c->xfers = x;
    curl_multi_add_handle(c->multi, e);
    return x;
}

const char *curlclient_header(const struct curlclient_xfer *x, const char *name)
{
    for (int i = 0; i < x->n_rh; i++)
        if (!strcasecmp(x->rh[i], name))
            return x->rh[i] + strlen(x->rh[i]) + 1;
    return NULL;
}

/* Pausing may happen inside curl's callbacks; unpausing happens from the
 * loop, which then lets curl move what it held back. */
static void set_pause(struct curlclient_xfer *x, int bits)
{
    int unpausing = (x->pause_bits & ~bits) != 0;
    x->pause_bits = bits;
    curl_easy_pause(x->easy, bits);
    if (unpausing && x->c->delivering)
        event_active(x->c->timer, EV_TIMEOUT, 0); /* the loop lets curl move, not us */
    else if (unpausing)
        act(x->c, CURL_SOCKET_TIMEOUT, 0);
}

void curlclient_pause(struct curlclient_xfer *x)
{
    set_pause(x, x->pause_bits | CURLPAUSE_RECV);
}

void curlclient_resume(struct curlclient_xfer *x)
{
    set_pause(x, x->pause_bits & ~CURLPAUSE_RECV);
}
