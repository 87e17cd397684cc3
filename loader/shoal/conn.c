/*
 * conn: blocking requests over nodeclient, signed, redirects followed, bodies
 * streamed (see conn.h).
 *
 * Each request runs the client's loop until its on_done breaks it. A body
 * written to the sink is written with blocking writes from the loop's
 * callbacks: the loop is the client's own and carries this one request,
 * so the write's wait is the backpressure a full disk or a slow reader of
 * stdout should put on the download.
 */
#include "conn.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "nodeclient.h"
#include "progress.h"
#include "sigv4.h"
#include "url.h"
#include "xxh.h"

#define HOPS_MAX 5               /* redirects followed, at most */
#define HOLD_MS 1000             /* an upload waits this long for an early answer */
#define DEFAULT_TIMEOUT_MS 60000
#define HDRS_MAX 8

static struct {
    const struct args *a;
    struct event_base *base;
    struct nodeclient *hc;
} g;

/* One request of a conn_do (the first, or one after a redirect). */
struct hop {
    const struct conn_req *q;
    struct conn_ans *a;
    struct nodeclient_xfer *x;
    int done;                    /* on_done came */
    int sinking;                 /* this answer's body goes to the sink */
    int holding;                 /* the upload waits for the answer's head (or HOLD_MS) */
    struct event *hold_ev;
    int64_t up_off;              /* next upload byte to read */
    XXH3_state_t *xs;
    char location[CONN_URL_MAX];
};

void conn_init(const struct args *a)
{
    g.a = a;
    g.base = event_base_new();
    g.hc = nodeclient_new(g.base);
}

void conn_deinit(void)
{
    nodeclient_free(g.hc);
    event_base_free(g.base);
    memset(&g, 0, sizeof(g));
}

/*
 * The Authorization lines (new strings in lines) for method on url whose
 * body hashes to payload_hash: SigV4 as the S3 API takes it (the native
 * API takes the same signatures), or a bearer token. The count.
 */
static int auth_lines(const char *method, const char *url, const char *payload_hash,
                      char *lines[3])
{
    const struct args *a = g.a;
    if (a->token) {
        lines[0] = xasprintf("Authorization: Bearer %s", a->token);
        return 1;
    }
    char host[NODECLIENT_HOST_MAX], hostport[NODECLIENT_HOST_MAX + 16];
    int port;
    const char *path;
    if (!a->access_key || url_split(url, host, sizeof(host), &port, &path))
        return 0;
    /* the Host line nodeclient writes: always with the port, IPv6 in brackets */
    int v6 = strchr(host, ':') != NULL;
    snprintf(hostport, sizeof(hostport), "%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
    sigv4_header_lines(method, hostport, path, payload_hash, a->region, a->access_key,
                       a->secret_key, time(NULL), lines);
    return 3;
}

/* ---- the answer -------------------------------------------------------------------- */

/* A header of the answer into out ("" when absent). */
static void header_copy(const struct nodeclient_xfer *x, const char *name, char *out, size_t n)
{
    const char *v = nodeclient_header(x, name);
    snprintf(out, n, "%s", v ? v : "");
}

static int on_head(void *arg, struct nodeclient_xfer *x, int status)
{
    struct hop *h = arg;
    struct conn_ans *a = h->a;
    if (h->holding) {            /* answered before the body: it is never sent */
        h->holding = 0;
        evtimer_del(h->hold_ev);
    }
    a->status = a->head = status;
    uint64_t n;
    const char *clen = nodeclient_header(x, "Content-Length");
    a->clen = clen && !parse_u64(clen, strlen(clen), &n) ? (int64_t)n : -1;
    header_copy(x, "Location", h->location, sizeof(h->location));
    header_copy(x, "X-Shoal-Checksum", a->cksum, sizeof(a->cksum));
    h->sinking = h->q->sink && status >= 200 && status < 300;
    if (h->sinking) {
        XXH3_64bits_reset(h->xs);
        progress_bytes_total(h->q->prog, a->clen);
    }
    return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int on_body(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct hop *h = arg;
    struct conn_ans *a = h->a;
    (void)x;
    a->got += n;
    if (!h->sinking) {
        if (a->body.n + n > NODECLIENT_BODY_MAX)
            return -1;
        gbuf_add(&a->body, p, n);
        return 0;
    }
    XXH3_64bits_update(h->xs, p, n);
    int rc = write_all(h->q->sink_fd, p, n);
    if (rc) {
        a->sink_errno = -rc;
        return -1;
    }
    progress_bytes_add(h->q->prog, n);
    return 0;
}

static ssize_t on_upload(void *arg, char *buf, size_t n)
{
    struct hop *h = arg;
    if (h->holding)
        return NODECLIENT_READ_PAUSE;
    ssize_t r;
    do
        r = pread(h->q->up_fd, buf, n, (off_t)h->up_off);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        snprintf(h->a->err, sizeof(h->a->err), "cannot read the upload: %s", strerror(errno));
        return -1;
    }
    h->up_off += r;
    progress_bytes_add(h->q->prog, (uint64_t)r);
    return r;
}

static void on_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct hop *h = arg;
    (void)x;
    h->a->status = status;
    if (!status && !h->a->err[0])
        snprintf(h->a->err, sizeof(h->a->err), "%s", err ? err : "no answer");
    h->x = NULL;
    h->done = 1;
    event_base_loopbreak(g.base);
}

static const struct nodeclient_ops ops = {
    .on_headers = on_head,
    .on_data = on_body,
    .on_read = on_upload,
    .on_done = on_done,
};

/* No answer within HOLD_MS: the peer wants the body (its 100 Continue,
 * which nodeclient does not pass on, came or is not coming). */
static void on_hold(evutil_socket_t fd, short what, void *arg)
{
    struct hop *h = arg;
    (void)fd;
    (void)what;
    h->holding = 0;
    if (h->x)
        nodeclient_resume_upload(h->x);
}

/* ---- requests ------------------------------------------------------------------------ */

static void hop_start(struct hop *h, const char *url, int first)
{
    const struct conn_req *q = h->q;
    const char *hdrs[HDRS_MAX];
    char *owned[3] = {NULL, NULL, NULL};
    char sha[65];
    int n = 0;
    const char *ph = SIGV4_EMPTY_SHA256;
    if (q->upload) {
        ph = SIGV4_UNSIGNED;
    } else if (q->body) {
        sigv4_sha256_hex(q->body, q->len, sha);
        ph = sha;
    }
    hdrs[n++] = "User-Agent: shoal-cli";
    if (q->body)
        hdrs[n++] = "Content-Type: application/json";
    int na = auth_lines(q->method, url, ph, owned);
    for (int i = 0; i < na; i++)
        hdrs[n++] = owned[i];
    /* a proxy redirects before it reads a body: the first request holds its own */
    h->holding = first && q->upload && q->up_len > 0;
    if (h->holding) {
        hdrs[n++] = "Expect: 100-continue";
        struct timeval tv = {HOLD_MS / 1000, (HOLD_MS % 1000) * 1000};
        evtimer_add(h->hold_ev, &tv);
    }
    long t = q->timeout_ms ? q->timeout_ms : DEFAULT_TIMEOUT_MS;
    if (q->upload)
        h->x = nodeclient_start(g.hc, q->method, url, hdrs, n, q->up_len, t, &ops, h);
    else if (q->body)
        h->x = nodeclient_start_mem(g.hc, q->method, url, hdrs, n, q->body, q->len, t, &ops, h);
    else
        h->x = nodeclient_start(g.hc, q->method, url, hdrs, n, -1, t, &ops, h);
    for (int i = 0; i < na; i++)
        free(owned[i]);
}

/* Where a Location leads from url (absolute, or a path on url's host);
 * 0, or -1 when it is not somewhere the client can go. */
static int resolve(const char *url, const char *loc, char *out, size_t outlen)
{
    if (!strncmp(loc, "http://", 7) || url_is_https(loc)) {
        if (strlen(loc) >= outlen)
            return -1;
        memcpy(out, loc, strlen(loc) + 1);
        return 0;
    }
    char host[NODECLIENT_HOST_MAX];
    int port;
    const char *path;
    if (loc[0] != '/' || url_split(url, host, sizeof(host), &port, &path))
        return -1;
    size_t base = (size_t)(path - url), ll = strlen(loc);
    if (base + ll >= outlen)     /* too long to follow */
        return -1;
    memcpy(out, url, base);
    memcpy(out + base, loc, ll + 1);
    return 0;
}

static int is_redirect(int status)
{
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

int conn_do(const struct conn_req *q, struct conn_ans *a)
{
    char url[CONN_URL_MAX];
    memset(a, 0, sizeof(*a));
    if (!strncmp(q->path, "http://", 7) || url_is_https(q->path))
        snprintf(url, sizeof(url), "%s", q->path);
    else
        snprintf(url, sizeof(url), "%s%s", g.a->endpoint, q->path);
    struct hop h = {.q = q, .a = a, .xs = XXH3_createState()};
    h.hold_ev = evtimer_new(g.base, on_hold, &h);
    for (int hop = 0;; hop++) {
        a->status = a->head = 0;
        a->err[0] = a->cksum[0] = '\0';
        a->body.n = 0;
        if (a->body.p)
            a->body.p[0] = '\0';
        a->got = 0;
        a->clen = -1;
        snprintf(a->url, sizeof(a->url), "%s", url);
        h.up_off = 0;
        h.done = h.sinking = 0;
        h.location[0] = '\0';
        if (q->upload)
            progress_bytes_set(q->prog, 0);   /* sent again from the start */
        hop_start(&h, url, hop == 0);
        while (!h.done)          /* 0: broken by on_done; else nothing left to wait for */
            if (event_base_dispatch(g.base) != 0)
                break;
        if (!h.done) {
            nodeclient_cancel(h.x);
            snprintf(a->err, sizeof(a->err), "the event loop failed");
            break;
        }
        if (!is_redirect(a->status) || !h.location[0] || hop == HOPS_MAX)
            break;
        char next[CONN_URL_MAX];
        if (resolve(url, h.location, next, sizeof(next)))
            break;
        snprintf(url, sizeof(url), "%s", next);
    }
    if (h.sinking)
        a->xxh3 = XXH3_64bits_digest(h.xs);
    evtimer_del(h.hold_ev);
    event_free(h.hold_ev);
    XXH3_freeState(h.xs);
    return a->status;
}

int conn_call(const char *method, const char *path, const char *json_body,
              struct conn_ans *a)
{
    struct conn_req q = {.method = method, .path = path, .body = json_body,
                         .len = json_body ? strlen(json_body) : 0};
    return conn_do(&q, a);
}

void conn_ans_free(struct conn_ans *a)
{
    gbuf_free(&a->body);
}

void conn_path_add(struct gbuf *u, const char *s, int keep_slash)
{
    char *e = sigv4_uri_encode(s, strlen(s), keep_slash);
    gbuf_str(u, e);
    free(e);
}

void conn_query(struct gbuf *u, const char *key, const char *value)
{
    if (!value)
        return;
    gbuf_str(u, u->p && memchr(u->p, '?', u->n) ? "&" : "?");
    gbuf_str(u, key);
    gbuf_add(u, "=", 1);
    conn_path_add(u, value, 0);
}
