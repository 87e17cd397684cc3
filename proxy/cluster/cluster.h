/*
 * cluster: membership on the primary proxy (joins, keepalives, silent
 * nodes dropped on the control thread's tick) and the push of a new map
 * or BMD to every node.
 */
#ifndef SHOAL_PROXY_CLUSTER_H
#define SHOAL_PROXY_CLUSTER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct cmap;
struct nodeclient;
struct loopq;
struct http_req;
struct node;
struct proxy;

/* Shutdown: forget the nodes seen. */
void cluster_fini(struct proxy *p);
/* Routes: POST /v1/cluster/join and /v1/cluster/keepalive, each signed
 * with the cluster secret by its sender (403 otherwise; 503 when this
 * proxy is not the primary). */
void cluster_join(struct http_req *r, const char *rest, size_t rlen);
void cluster_keepalive(struct http_req *r, const char *rest, size_t rlen);
/* node's on_tick (control thread): drop nodes silent too long. */
void cluster_tick(struct node *n);
/* done of a map change of node id: the committed version (0: nothing
 * changed), or status (503: not the primary, or no majority) with err. */
typedef void (*cluster_done_fn)(void *arg, const char *id, int64_t version, int status,
                                const char *err);

/* Change the map through the proxies' consensus: fn edits a copy (1 if it
 * changed anything); once committed the map is pushed to every node with
 * cli, then done(arg, ...) runs on loop q (NULL done: nothing to tell). */
void cluster_change_map(struct proxy *p, struct loopq *q, struct nodeclient *cli, const char *id,
                        int (*fn)(struct cmap *m, const char *id), cluster_done_fn done,
                        void *arg);
/* Push {"cmap"} and/or {"bmd"} to every other node; done(arg, failures)
 * runs on cli's loop once all answered (done may be NULL). Takes j. */
void cluster_broadcast(struct proxy *p, struct nodeclient *cli, json_t *j,
                       void (*done)(void *arg, int failures), void *arg);

#endif
