/*
 * hcli: the classic libcurl multi-socket integration. curl tells us which
 * sockets to watch (sock_cb) and when to time out (timer_cb); libevent tells
 * curl when a socket is ready (ev_cb). Finished transfers are collected in
 * check_done() and their callbacks run there, outside any curl call that
 * could re-enter.
 */
#include "hcli.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct hcli {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    int running;
    struct xfer *xfers;          /* in flight, for hcli_free */
};

struct xfer {
    struct hcli *c;
    struct xfer *prev, *next;
    CURL *easy;
    struct curl_slist *hdrs;
    char *req_body;
    char *buf;
    size_t len, cap;
    hcli_done_fn cb;
    void *arg;
    char errbuf[CURL_ERROR_SIZE];
};

static void xfer_free(struct xfer *x)
{
    struct hcli *c = x->c;
    if (x->prev)
        x->prev->next = x->next;
    else
        c->xfers = x->next;
    if (x->next)
        x->next->prev = x->prev;
    curl_multi_remove_handle(c->multi, x->easy);
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdrs);
    free(x->req_body);
    free(x->buf);
    free(x);
}

struct sock {
    struct event *ev;
};

static void check_done(struct hcli *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct xfer *x;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        CURLcode res = m->data.result;
        long status = 0;
        if (res == CURLE_OK)
            curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        const char *err = res == CURLE_OK ? NULL
                          : x->errbuf[0]  ? x->errbuf
                                          : curl_easy_strerror(res);
        if (!x->buf)
            x->buf = xstrdup("");
        x->cb(x->arg, (int)status, x->buf, x->len, err);
        xfer_free(x);
    }
}

static void ev_cb(evutil_socket_t fd, short what, void *arg)
{
    struct hcli *c = arg;
    int action = ((what & EV_READ) ? CURL_CSELECT_IN : 0) |
                 ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    curl_multi_socket_action(c->multi, fd, action, &c->running);
    check_done(c);
    if (c->running <= 0 && evtimer_pending(c->timer, NULL))
        evtimer_del(c->timer);
}

static void timer_ev_cb(evutil_socket_t fd, short what, void *arg)
{
    struct hcli *c = arg;
    (void)fd;
    (void)what;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &c->running);
    check_done(c);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *arg)
{
    struct hcli *c = arg;
    (void)multi;
    if (timeout_ms < 0) {
        evtimer_del(c->timer);
        return 0;
    }
    /* A zero timeout still goes through the loop, so callbacks never run
     * from inside hcli_request(). */
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
    return 0;
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *arg, void *sockp)
{
    struct hcli *c = arg;
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

static size_t write_cb(char *p, size_t size, size_t n, void *arg)
{
    struct xfer *x = arg;
    size_t len = size * n;
    if (x->len + len + 1 > x->cap) {
        while (x->len + len + 1 > x->cap)
            x->cap = x->cap ? x->cap * 2 : 4096;
        x->buf = xrealloc(x->buf, x->cap);
    }
    memcpy(x->buf + x->len, p, len);
    x->len += len;
    x->buf[x->len] = '\0';
    return len;
}

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct hcli *hcli_new(struct event_base *base)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, global_init);
    struct hcli *c = xcalloc(1, sizeof(*c));
    c->base = base;
    c->multi = curl_multi_init();
    c->timer = evtimer_new(base, timer_ev_cb, c);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 16L);
    return c;
}

void hcli_free(struct hcli *c)
{
    if (!c)
        return;
    while (c->xfers)
        xfer_free(c->xfers);
    curl_multi_cleanup(c->multi);
    event_free(c->timer);
    free(c);
}

void hcli_request(struct hcli *c, const char *method, const char *url, const void *body,
                  size_t len, const char *extra_hdr, long timeout_ms, hcli_done_fn cb,
                  void *arg)
{
    struct xfer *x = xcalloc(1, sizeof(*x));
    x->c = c;
    x->cb = cb;
    x->arg = arg;
    x->easy = curl_easy_init();
    CURL *e = x->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 3000 ? timeout_ms : 3000L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET"))
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    x->hdrs = curl_slist_append(x->hdrs, "Expect:");
    if (body) {
        x->req_body = xmalloc(len + 1);
        memcpy(x->req_body, body, len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->req_body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        x->hdrs = curl_slist_append(x->hdrs, "Content-Type: application/json");
    }
    if (extra_hdr)
        x->hdrs = curl_slist_append(x->hdrs, extra_hdr);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
    x->next = c->xfers;
    if (c->xfers)
        c->xfers->prev = x;
    c->xfers = x;
    curl_multi_add_handle(c->multi, e);
}
