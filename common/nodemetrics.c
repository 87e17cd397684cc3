/*
 * nodemetrics: the node's series in the process's metrics registry
 * (common/metrics.c) and the /metrics endpoint (see nodemetrics.h).
 * Counters are added to on whichever thread answers a request; the
 * redirect count and the map version are read when /metrics renders.
 */
#include "nodemetrics.h"

#include <stdio.h>

#include "http.h"
#include "metrics.h"
#include "node.h"
#include "util.h"

/* The op label of each enum stat_op. */
static const char *const op_names[ST_N] = {"get", "head", "put", "delete", "list", "other"};

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
    struct metric_family *req = metrics_family(
        METRIC_COUNTER, "shoal_requests_total", "Requests answered, by operation.", "op",
        NULL, 0);
    for (int i = 0; i < ST_N; i++)
        n->met.req[i] = metrics_series(req, op_names[i]);
    struct metric_family *err = metrics_family(
        METRIC_COUNTER, "shoal_errors_total",
        "Requests answered with an error, by class (4xx: the client's, 5xx: Shoal's or a backend's).",
        "class", NULL, 0);
    n->met.err4 = metrics_series(err, "4xx");
    n->met.err5 = metrics_series(err, "5xx");
    n->met.in = metrics_series(metrics_family(METRIC_COUNTER, "shoal_bytes_in_total",
                                              "Object bytes received from clients.", "", NULL,
                                              0),
                               "");
    n->met.out = metrics_series(metrics_family(METRIC_COUNTER, "shoal_bytes_out_total",
                                               "Object bytes sent to clients.", "", NULL, 0),
                                "");
    n->met.lat = metrics_family(METRIC_HISTOGRAM, "shoal_request_duration_seconds",
                                "Time from a request's head to its whole response queued, by "
                                "operation.",
                                "op", lat_bounds, (int)ARRAY_LEN(lat_bounds));
    metrics_fn(METRIC_COUNTER, "shoal_redirects_total",
               "Requests answered with a redirect to the owning target.", redirects, n);
    metrics_fn(METRIC_GAUGE, "shoal_cluster_map_version", "Version of the installed cluster map.",
               map_version, NULL);
}

void node_count(struct node *n, enum stat_op op, int status)
{
    metrics_add(n->met.req[op], 1);
    if (status >= 500)
        metrics_add(n->met.err5, 1);
    else if (status >= 400)
        metrics_add(n->met.err4, 1);
}

void node_count_bytes(struct node *n, uint64_t in, uint64_t out)
{
    metrics_add(n->met.in, in);
    metrics_add(n->met.out, out);
}

void node_on_done(struct http_req *r)
{
    struct node *n = r->w->ctx;
    struct metric_series *s = metrics_series(n->met.lat, r->op ? r->op : "other");
    metrics_observe(s, (double)(mono_ns() - r->t_start_ns) / 1e9);
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
