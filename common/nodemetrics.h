/*
 * nodemetrics: the series every node keeps in the metrics registry
 * (common/metrics.h): requests, errors and latency by API and operation,
 * object bytes in and out, redirects and the cluster map's version; and
 * GET /metrics, which renders the registry. Counting is lock-free
 * (relaxed atomics): any thread.
 *
 * Every answered request is counted once, when its answer is queued whole
 * (the servers' on_done hook), under its API: s3 (a proxy's S3 routes, r->op
 * "s3.<op>"; a target serving S3, r in S3 mode), internal (a path under
 * /v1/internal/: nodes talking to nodes) or native; and its operation: an
 * object request's method (get, head, put, delete, other), else its
 * route's name (list, bucket, job, xfer, slice...).
 */
#ifndef SHOAL_NODEMETRICS_H
#define SHOAL_NODEMETRICS_H

#include <stdint.h>

struct http_req;
struct http_server;
struct node;

/* Counted outside the metrics registry (relaxed atomics, any thread). */
struct node_stats {
    uint64_t redirects;
    uint64_t client_requests;    /* answered, but for nodes' own (internal) */
};

/* The node's series in the metrics registry (common/metrics.h). */
struct metric_series;
struct metric_family;
struct node_met {
    struct metric_family *req;         /* shoal_requests_total{api,op} */
    struct metric_family *err;         /* shoal_errors_total{api,class} */
    struct metric_series *in, *out;    /* shoal_bytes_{in,out}_total */
    struct metric_family *lat;         /* shoal_request_duration_seconds{api,op} */
};

/* Register the node's families and series (node_init, once). */
void node_metrics_init(struct node *n);
/* Count s's open connections in shoal_open_connections (every server of
 * the node, at most 4). */
void node_metrics_server(struct http_server *s);
/* GET /metrics: the registry, every series labelled with the node. */
void node_metrics_reply(struct node *n, struct http_req *r);

void node_count_bytes(struct node *n, uint64_t in, uint64_t out);
/* The servers' on_done hook: a request counted, with its latency and, for
 * an error, its class. */
void node_on_done(struct http_req *r);

#endif
