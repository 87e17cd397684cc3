/*
 * shoal-proxy internals shared by its files: the daemon context, the
 * primary's membership (cluster.c) and the bucket API (buckets.c).
 */
#ifndef SHOAL_PROXY_H
#define SHOAL_PROXY_H

#include <pthread.h>
#include <stdint.h>

#include "config.h"
#include "node.h"

struct http_req;
struct hcli;

struct seen {
    char *id;
    uint64_t at_ms;              /* last join or keepalive */
};

struct proxy {
    struct node node;            /* first: see struct node */
    struct conf conf;
    pthread_mutex_t mu;          /* guards map/BMD changes and seen[] on the primary */
    struct seen *seen;
    int n_seen;
};

/* The calling worker's intra-cluster client. */
struct hcli *proxy_cli(struct http_req *r);

/* cluster.c */
void cluster_init_primary(struct proxy *p);
void cluster_join(struct proxy *p, struct http_req *r);
void cluster_keepalive(struct proxy *p, struct http_req *r);
void cluster_tick(struct node *n);
/* Push {"cmap"} and/or {"bmd"} to every other node; done(arg, failures)
 * runs on cli's loop once all answered (done may be NULL). Takes j. */
void cluster_broadcast(struct proxy *p, struct hcli *cli, json_t *j,
                       void (*done)(void *arg, int failures), void *arg);

/* Make sure a remote bucket (provider s3) is in the BMD, adding it on the
 * primary (directly or through it), then call cont(r); errors answer r. */
void buckets_ensure(struct proxy *p, struct http_req *r, const char *provider,
                    const char *name, void (*cont)(struct http_req *r));

/* buckets.c: returns 1 if it handled r. */
int buckets_handle(struct proxy *p, struct http_req *r);

#endif
