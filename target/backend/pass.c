/*
 * pass: backend -> client, nothing kept (see pass.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "curlclient.h"
#include "http.h"
#include "metrics.h"
#include "pass.h"
#include "target.h"
#include "targetmetrics.h"
#include "util.h"

#define PASS_HIGH (8u << 20)     /* the client's unsent bytes that pause the backend */

struct pass {
    struct http_req *r;          /* NULL once the client left */
    struct curlclient_xfer *x;
    struct backend b;
    int begun;                   /* the client's answer has begun */
    int paused;
    uint64_t sent;               /* bytes passed to the client */
};

static struct metric_series *passed(void)
{
    static struct metric_series *s;
    if (!__atomic_load_n(&s, __ATOMIC_ACQUIRE))
        __atomic_store_n(&s, metrics_series(metrics_family(METRIC_COUNTER,
                                                           "shoal_cold_passthrough_total",
                                                           "cold GETs answered from the backend "
                                                           "without keeping a copy (no space)",
                                                           "", NULL, 0), ""),
                         __ATOMIC_RELEASE);
    return s;
}

void pass_count(void)
{
    metrics_add(passed(), 1);
}

static void client_gone(struct http_req *r)
{
    struct pass *p = r->data;
    r->data = NULL;
    r->on_drain = NULL;
    http_req_unref(p->r);
    p->r = NULL;
    if (p->paused) {             /* let the transfer see it and stop */
        p->paused = 0;
        curlclient_resume(p->x);
    }
}

static void drained(struct http_req *r)
{
    struct pass *p = r->data;
    if (p->paused && http_resp_pending(r) < PASS_HIGH / 2) {
        p->paused = 0;
        curlclient_resume(p->x);
    }
}

static int on_headers(void *arg, struct curlclient_xfer *x, int status)
{
    struct pass *p = arg;
    if (!p->r)
        return -1;
    if (status != 200 && status != 206)
        return 0;                /* on_done answers with the backend's word */
    const char *len = curlclient_header(x, "Content-Length");
    static const char *const keep[] = {"ETag", "Last-Modified", "Content-Range",
                                       "Content-Type"};
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        const char *v = curlclient_header(x, keep[i]);
        if (v)
            http_resp_header_str(p->r, keep[i], v);
    }
    http_resp_header_str(p->r, "X-Shoal-Cache", "pass");
    http_resp_begin(p->r, status, len ? strtoll(len, NULL, 10) : -1);
    p->begun = 1;
    return 0;
}

static int on_data(void *arg, struct curlclient_xfer *x, const char *d, size_t n)
{
    struct pass *p = arg;
    if (!p->r)
        return -1;
    if (!p->begun)
        return 0;                /* an error's body */
    http_resp_write(p->r, d, n);
    p->sent += n;
    if (http_resp_pending(p->r) > PASS_HIGH) {
        p->paused = 1;
        curlclient_pause(x);
    }
    return 0;
}

static void on_done(void *arg, struct curlclient_xfer *x, int status, const char *err)
{
    struct pass *p = arg;
    struct http_req *r = p->r;
    if (r && p->begun) {
        if ((status == 200 || status == 206) && !err) {
            http_resp_end(r);
            targetmetrics_get(1, p->sent);
        } else
            http_resp_abort(r);  /* never a body that looks whole */
    } else if (r) {
        struct backend_obj o;
        char msg[300];
        backend_obj_from(&o, x, status, err);
        int st = backend_status(&p->b, &o, msg, sizeof(msg));
        if (status == 416)       /* the client's range, not the backend's failure */
            http_reply_error(r, 416, "range not satisfiable");
        else
            http_reply_error(r, st, "%s", msg);
    }
    if (r) {
        r->data = NULL;
        r->on_abort = NULL;
        r->on_drain = NULL;
        http_req_unref(r);
    }
    backend_free(&p->b);
    free(p);
}

static const struct curlclient_ops ops = {on_headers, on_data, NULL, on_done, NULL};

void pass_get(struct http_req *r, const struct backend *b, const char *name)
{
    struct pass *p = xcalloc(1, sizeof(*p));
    p->r = r;
    backend_copy(&p->b, b);
    http_req_ref(r);
    r->data = p;
    r->on_abort = client_gone;
    r->on_drain = drained;
    metrics_add(passed(), 1);
    p->x = backend_get_start(target_cli(r), &p->b, name, http_req_header(r, "Range"), &ops, p);
}
