/*
 * nodemetrics: the node's series in the process's metrics registry
 * (common/metrics.c) and the /metrics endpoint (see nodemetrics.h).
 * Counters are added to on whichever thread answers a request; the
 * redirect count and the map version are read when /metrics renders.
 */
#include "nodemetrics.h"

#include <stdio.h>
#include <string.h>

#include "http.h"
#include "metrics.h"
#include "node.h"
#include "s3.h"
#include "util.h"

static int64_t map_version(void *arg)
{
    (void)arg;
    struct cmap *m = cmap_current();
    int64_t v = m ? (int64_t)m->snap.version : 0;
    cmap_unref(m);
    return v;
}

static int64_t redirects(void *arg)
{
    struct node *n = arg;
    return (int64_t)__atomic_load_n(&n->st.redirects, __ATOMIC_RELAXED);
}

void node_metrics_init(struct node *n)
{
    static const double lat_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                        0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                        1,      2.5,     5,      10};
    n->met.req = metrics_family(METRIC_COUNTER, "shoal_requests_total",
                                "Requests answered, by API (native, s3, internal) and operation.",
                                "api,op", NULL, 0);
    n->met.err = metrics_family(
        METRIC_COUNTER, "shoal_errors_total",
        "Requests answered with an error, by API and class (4xx: the client's, 5xx: Shoal's or "
        "a backend's).",
        "api,class", NULL, 0);
    static const char *const zero[] = {"native,4xx", "native,5xx", "s3,4xx",
                                       "s3,5xx",     "internal,4xx", "internal,5xx"};
    for (size_t i = 0; i < ARRAY_LEN(zero); i++)   /* there from 0, for rates and alerts */
        metrics_series(n->met.err, zero[i]);
    n->met.in = metrics_series(metrics_family(METRIC_COUNTER, "shoal_bytes_in_total",
                                              "Object bytes received from clients.", "", NULL,
                                              0),
                               "");
    n->met.out = metrics_series(metrics_family(METRIC_COUNTER, "shoal_bytes_out_total",
                                               "Object bytes sent to clients.", "", NULL, 0),
                                "");
    n->met.lat = metrics_family(METRIC_HISTOGRAM, "shoal_request_duration_seconds",
                                "Time from a request's head to its whole response queued, by "
                                "API and operation.",
                                "api,op", lat_bounds, (int)ARRAY_LEN(lat_bounds));
    metrics_fn(METRIC_COUNTER, "shoal_redirects_total",
               "Requests answered with a redirect to the owning target.", redirects, n);
    metrics_fn(METRIC_GAUGE, "shoal_cluster_map_version", "Version of the installed cluster map.",
               map_version, NULL);
}

void node_count_bytes(struct node *n, uint64_t in, uint64_t out)
{
    metrics_add(n->met.in, in);
    metrics_add(n->met.out, out);
}

/* An object request's operation: its method. */
static const char *method_op(int m)
{
    switch (m) {
    case HTTP_M_GET: return "get";
    case HTTP_M_HEAD: return "head";
    case HTTP_M_PUT: return "put";
    case HTTP_M_DELETE: return "delete";
    default: return "other";
    }
}

void node_on_done(struct http_req *r)
{
    struct node *n = r->w->ctx;
    const char *op = r->op ? r->op : "other", *api = "native";
    if (!strncmp(op, "s3.", 3)) {
        api = "s3";
        op += 3;
    } else if (r->path_len >= 13 && !memcmp(r->path, "/v1/internal/", 13)) {
        api = "internal";
    } else if (r->on_error == s3_error_reply) {
        api = "s3";
    }
    if (!strcmp(op, "object") || !strcmp(op, "s3"))
        op = method_op(r->method);
    if (strcmp(api, "internal"))
        __atomic_add_fetch(&n->st.client_requests, 1, __ATOMIC_RELAXED);
    char l[96];
    snprintf(l, sizeof(l), "%s,%s", api, op);
    metrics_add(metrics_series(n->met.req, l), 1);
    metrics_observe(metrics_series(n->met.lat, l), (double)(mono_ns() - r->t_start_ns) / 1e9);
    if (r->status >= 400) {
        snprintf(l, sizeof(l), "%s,%s", api, r->status >= 500 ? "5xx" : "4xx");
        metrics_add(metrics_series(n->met.err, l), 1);
    }
}

static struct http_server *servers[4];
static int n_servers;

static int64_t open_conns(void *arg)
{
    (void)arg;
    int64_t n = 0;
    for (int i = 0; i < __atomic_load_n(&n_servers, __ATOMIC_ACQUIRE); i++)
        n += http_server_conns(servers[i]);
    return n;
}

void node_metrics_server(struct http_server *s)
{
    if (n_servers == (int)ARRAY_LEN(servers))
        return;
    servers[n_servers] = s;
    __atomic_store_n(&n_servers, n_servers + 1, __ATOMIC_RELEASE);
    metrics_fn(METRIC_GAUGE, "shoal_open_connections", "Open client connections.", open_conns,
               NULL);
}

void node_metrics_reply(struct node *n, struct http_req *r)
{
    char labels[256];
    snprintf(labels, sizeof(labels), "node=\"%s\",role=\"%s\"", n->id,
             n->role == NODE_PROXY ? "proxy" : "target");
    struct gbuf b = {0};
    metrics_render(&b, labels);
    http_reply(r, 200, "text/plain; version=0.0.4", b.p, b.n);
    gbuf_free(&b);
}
