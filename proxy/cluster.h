/*
 * cluster: membership on the primary proxy (joins, keepalives, silent
 * nodes dropped on the control thread's tick) and the push of a new map
 * or BMD to every node.
 */
#ifndef SHOAL_PROXY_CLUSTER_H
#define SHOAL_PROXY_CLUSTER_H

#include <jansson.h>
#include <stddef.h>

struct hc;
struct http_req;
struct node;
struct proxy;

/* Start-up, on the primary: this proxy in the map (a new one, or the
 * persisted one taken over), every known node given a full timeout. */
void cluster_init_primary(struct proxy *p);
/* Shutdown: forget the nodes seen. */
void cluster_fini(struct proxy *p);
/* Routes: POST /v1/cluster/join and /v1/cluster/keepalive, each signed
 * with the cluster secret by its sender (403 otherwise; 503 when this
 * proxy is not the primary). */
void cluster_join(struct http_req *r, const char *rest, size_t rlen);
void cluster_keepalive(struct http_req *r, const char *rest, size_t rlen);
/* node's on_tick (control thread): drop nodes silent too long. */
void cluster_tick(struct node *n);
/* Push {"cmap"} and/or {"bmd"} to every other node; done(arg, failures)
 * runs on cli's loop once all answered (done may be NULL). Takes j. */
void cluster_broadcast(struct proxy *p, struct hc *cli, json_t *j,
                       void (*done)(void *arg, int failures), void *arg);

#endif
