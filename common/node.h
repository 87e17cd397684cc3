/*
 * node: what every Shoal daemon is as a cluster member: its persisted id,
 * its view of the cluster map and bucket metadata (persisted in state_dir),
 * the control thread that joins the primary and sends keepalives, and the
 * endpoints every node serves (/v1/health, /v1/cluster, map and BMD
 * pushes, /metrics, /v1/tokens). Including node.h brings in the modules a
 * node is made of: nodesig.h (cluster signatures), nodeauth.h (the request
 * gate, bearer tokens), nodemetrics.h (counters, /metrics) and httpbody.h
 * (request bodies read whole).
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
#include "httpbody.h"
#include "nodeauth.h"
#include "nodemetrics.h"
#include "nodesig.h"

struct http_req;
struct nodeclient;
struct loopq;

/* Each daemon's context (the server's ctx) starts with its struct node, so
 * common handlers can reach it as (struct node *)w->ctx. */
struct node {
    struct conf *conf;
    enum node_role role;
    char *id;
    int is_primary;              /* set by the proxies' consensus (node_primary) */
    int founder;                 /* a proxy without primary_url: it founds the cluster */
    char *raft_addr;             /* a proxy's consensus address, sent when it joins */
    struct ssl_ctx_st *tls;      /* HTTPS on port (tls_cert_file): the server context */

    /* control thread */
    struct event_base *ctl_base;
    struct nodeclient *ctl_cli;
    struct loopq *ctl_q;
    struct event *ctl_timer;
    pthread_t ctl_thread;
    int joined;
    int join_inflight;
    uint64_t last_ka_ok;
    int ka_fails;                /* keepalives unanswered in a row */
    unsigned contact;            /* which proxy to try next once the primary is silent */

    /* role hooks, called on the thread that installed the new version */
    void (*on_bmd)(struct node *n, struct bmd *old_bmd, struct bmd *new_bmd);
    /* a new cluster map (old may be NULL); rebalance starts here */
    void (*on_cmap)(struct node *n, struct cmap *old_map, struct cmap *new_map);
    void (*on_tick)(struct node *n);           /* control thread, every period */
    /* any thread: is the node ready to serve (a proxy: a primary is
     * known)? NULL: once in the map */
    int (*ready)(struct node *n);
    void *owner;                                /* the daemon's context */

    struct node_stats st;
    struct node_met met;
    struct auth auth;            /* client credentials (auth_keys, tokens) */

    /* nodesig.c: SHA-256 states with the cluster secret's inner and outer HMAC pads
     * absorbed, so a signature costs two copies and two short hashes */
    struct evp_md_ctx_st *mac_in, *mac_out;
};

/* Identity, state directory, persisted map and BMD; the TLS contexts
 * (tls.h) when TLS is configured. 0 or -1 with err. */
int node_init(struct node *n, struct conf *c, enum node_role role, char *err, size_t errlen);

/* With TLS on and plain_port set: start the extra plain-HTTP server (the
 * main one's options o, on plain_port, without TLS) into *out. 0 (*out
 * NULL when there is none), or -1 with err. */
struct http_server;
struct http_server_opts;
int node_plain_server(struct node *n, const struct http_server_opts *o, struct http_server **out,
                      char *err, size_t errlen);
/* Start the control thread (join + keepalives, or on_tick on the primary). */
void node_start(struct node *n);
void node_stop(struct node *n);

/* Is this node the primary proxy now (any thread)? */
static inline int node_primary(const struct node *n)
{
    return __atomic_load_n(&n->is_primary, __ATOMIC_ACQUIRE);
}

/* The URL of the primary proxy as the current map names it (not this
 * node), else primary_url; NULL when neither. Free it. */
char *node_primary_url(struct node *n);

/* 503 with Retry-After to a request only the primary serves: the answer
 * names the primary and carries this node's map, so a member that asked
 * the wrong proxy learns where to go. */
void node_not_primary(struct node *n, struct http_req *r);

/* Install a newer map / BMD and persist it (from any thread). Take the
 * caller's reference. Return 1 if installed. */
int node_set_cmap(struct node *n, struct cmap *m);
int node_set_bmd(struct node *n, struct bmd *b);

/* Accept {"cmap": ..., "bmd": ...} (either optional): install what is
 * newer. 0, or -1 with err. */
int node_accept_json(struct node *n, const json_t *j, char *err, size_t errlen);

/* Serve the endpoints every node has. Returns 1 if it handled r. */
int node_handle(struct node *n, struct http_req *r);

/* Block SIGINT/SIGTERM (and ignore SIGPIPE) in this and every thread
 * created after it; call first thing in main. */
void node_block_signals(void);
/* Keep freed memory for reuse: buffers of up to 4 MiB come from the heap
 * (not a fresh mmap each), and up to 64 MiB of free heap stays mapped.
 * Streams that allocate and free their chains all the time otherwise pay
 * a page fault per 4 KiB they move (a batch's entries: 3.5x the CPU).
 * Call once, first thing. */
void node_tune_malloc(void);
/* Wait for SIGINT or SIGTERM; returns the signal. */
int node_wait_signal(void);

/* The placement key of an object: "<provider>/<bucket>/<name>". */
char *node_obj_key(const char *provider, const char *bucket, const char *name, size_t *len);

#endif
