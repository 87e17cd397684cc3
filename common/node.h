/*
 * node: what every Shoal daemon is as a cluster member: its persisted id,
 * its view of the cluster map and bucket metadata (persisted in state_dir),
 * the control thread that joins the primary and sends keepalives, the
 * endpoints every node serves (/v1/health, /v1/cluster, map and BMD
 * pushes, /metrics), and the signatures on proxy redirects.
 */
#ifndef SHOAL_NODE_H
#define SHOAL_NODE_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "auth.h"
#include "bmd.h"
#include "cmap.h"
#include "config.h"

struct http_req;
struct hcli;
struct loopq;

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

/* Each daemon's context (the server's ctx) starts with its struct node, so
 * common handlers can reach it as (struct node *)w->ctx. */
struct node {
    struct conf *conf;
    enum node_role role;
    char *id;
    int is_primary;

    /* control thread */
    struct event_base *ctl_base;
    struct hcli *ctl_cli;
    struct loopq *ctl_q;
    struct event *ctl_timer;
    pthread_t ctl_thread;
    int joined;
    int join_inflight;
    uint64_t last_ka_ok;

    /* role hooks, called on the thread that installed the new version */
    void (*on_bmd)(struct node *n, struct bmd *old_bmd, struct bmd *new_bmd);
    /* a new cluster map (old may be NULL); rebalance starts here */
    void (*on_cmap)(struct node *n, struct cmap *old_map, struct cmap *new_map);
    void (*on_tick)(struct node *n);           /* control thread, every period */
    void *owner;                                /* the daemon's context */

    struct node_stats st;
    struct node_met met;
    struct auth auth;            /* client credentials (auth_keys, tokens) */

    /* SHA-256 states with the cluster secret's inner and outer HMAC pads
     * absorbed, so a signature costs two copies and two short hashes */
    struct evp_md_ctx_st *mac_in, *mac_out;
};

/* Identity, state directory, persisted map and BMD. 0 or -1 with err. */
int node_init(struct node *n, struct conf *c, enum node_role role, char *err, size_t errlen);
/* Start the control thread (join + keepalives, or on_tick on the primary). */
void node_start(struct node *n);
void node_stop(struct node *n);

/* Install a newer map / BMD and persist it (from any thread). Take the
 * caller's reference. Return 1 if installed. */
int node_set_cmap(struct node *n, struct cmap *m);
int node_set_bmd(struct node *n, struct bmd *b);
/* Accept {"cmap": ..., "bmd": ...} (either optional) from the primary. */
int node_accept_json(struct node *n, const json_t *j, char *err, size_t errlen);

/* Serve the endpoints every node has. Returns 1 if it handled r. */
int node_handle(struct node *n, struct http_req *r);

/* Cluster signatures (proxy redirects, requests between nodes): hex
 * HMAC-SHA256 with the cluster secret over "METHOD\n" and len bytes of a
 * request target (path and query up to and including shoal_exp), into out
 * (65 bytes). */
void node_sign(const struct node *n, const char *method, const char *target, size_t len,
               char *out);
/* base + path + "?" + query (raw; NULL or "" for none) +
 * "shoal_exp=..&shoal_sig=..": a new string. HEAD is signed as GET. */
char *node_signed_url(const struct node *n, const char *method, const char *base,
                      const char *path, const char *query);
/* The same for a path and query formatted from fmt ("/v1/x?a=%s"). */
char *node_signed_urlf(const struct node *n, const char *method, const char *base,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* 1 valid, 0 missing, -1 bad or expired. */
int node_check_sig(const struct node *n, struct http_req *r);
/* May r read or change data: a valid cluster signature, a verified client
 * credential (kept in r->auth), or no auth_keys configured. Returns 1, or
 * 0 with r answered (403 and the reason). */
int node_authenticate(struct node *n, struct http_req *r);

/* Read r's whole body (at most max bytes, else 413), then call done with
 * arg and the body (NUL-terminated; freed after done returns). When the
 * body never completes (the client left, or it was too large and got its
 * answer), gone(arg) runs instead (gone may be NULL). */
void node_read_body(struct http_req *r, size_t max,
                    void (*done)(struct http_req *r, void *arg, char *body, size_t len),
                    void (*gone)(void *arg), void *arg);
/* Collect a small JSON request body (at most 16 MiB), then call done with
 * it (a new reference done owns); malformed JSON gets 400 without done. */
void node_read_json(struct http_req *r, void (*done)(struct http_req *r, json_t *j));

void node_count(struct node *n, enum stat_op op, int status);
void node_count_bytes(struct node *n, uint64_t in, uint64_t out);
/* The servers' on_done hook: a request's latency, by r->op. */
void node_on_done(struct http_req *r);

/* Block SIGINT/SIGTERM (and ignore SIGPIPE) in this and every thread
 * created after it; call first thing in main. */
void node_block_signals(void);
/* Wait for SIGINT or SIGTERM; returns the signal. */
int node_wait_signal(void);

/* The placement key of an object: "<provider>/<bucket>/<name>". */
char *node_obj_key(const char *provider, const char *bucket, const char *name, size_t *len);

#endif
