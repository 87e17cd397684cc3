/*
 * nodemetrics: the series every node keeps in the metrics registry
 * (common/metrics.h): requests and errors by operation, object bytes in
 * and out, request latency by operation, redirects and the cluster map's
 * version; and GET /metrics, which renders the registry. Counting is
 * lock-free (relaxed atomics): any thread.
 */
#ifndef SHOAL_NODEMETRICS_H
#define SHOAL_NODEMETRICS_H

#include <stdint.h>

struct http_req;
struct node;

enum stat_op { ST_GET, ST_HEAD, ST_PUT, ST_DELETE, ST_LIST, ST_OTHER, ST_N };

/* Counted outside the metrics registry (relaxed atomics, any thread). */
struct node_stats {
    uint64_t redirects;
};

/* The node's series in the metrics registry (common/metrics.h). */
struct metric_series;
struct metric_family;
struct node_met {
    struct metric_series *req[ST_N];   /* shoal_requests_total{op} */
    struct metric_series *err4, *err5; /* shoal_errors_total{class} */
    struct metric_series *in, *out;    /* shoal_bytes_{in,out}_total */
    struct metric_family *lat;         /* shoal_request_duration_seconds{op} */
};

/* Register the node's families and series (node_init, once). */
void node_metrics_init(struct node *n);
/* GET /metrics: the registry, every series labelled with the node. */
void node_metrics_reply(struct node *n, struct http_req *r);

void node_count(struct node *n, enum stat_op op, int status);
void node_count_bytes(struct node *n, uint64_t in, uint64_t out);
/* The servers' on_done hook: a request's latency, by r->op. */
void node_on_done(struct http_req *r);

#endif
