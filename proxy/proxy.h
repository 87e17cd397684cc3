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
#include "s3auth.h"

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

/* A worker's own state: its intra-cluster client, and idle keep-alive
 * connections to targets for the S3 relay (s3relay.c). */
struct tconn;
struct proxy_worker {
    struct hcli *cli;
    struct tconn *idle;
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

/* s3.c: the S3 API under /s3/ (returns 1 if r was one), and at the root
 * of the dedicated S3 port (s3_api_port). */
int s3_handle(struct proxy *p, struct http_req *r);
void s3_handle_root(struct proxy *p, struct http_req *r);

/* s3fwd.c: the target that owns bucket/key, with the map it is in (*m,
 * which the caller releases); NULL when the cluster has no target, with r
 * answered 503 when r is given. */
struct cmap;
struct cmap_node;
const struct cmap_node *s3_owner(struct http_req *r, const char *bucket, const char *key,
                                 struct cmap **m);
/* s3relay.c: an S3 GET or HEAD relayed over a raw keep-alive connection
 * to the owning target, the body spliced socket to socket. url: the
 * target's signed URL (taken). */
void s3_relay_get(struct http_req *r, char *url, const char *const *hdrs, int n);
void s3relay_worker_fini(struct proxy_worker *pw);
/* Is a target's response header one the client should see? */
int s3_relay_header(const char *name);
/* Stream an object request (method, with the client's query and
 * an optional extra header line) to the owning target in S3 mode and
 * relay the answer. */
void s3_forward(struct http_req *r, const char *bucket, const char *key,
                const struct s3auth_result *auth, const char *method, const char *query,
                const char *extra_hdr);

#endif
