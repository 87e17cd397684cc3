/*
 * worker: a proxy worker thread's own state, made and dropped on that
 * thread by the HTTP server's worker hooks: the intra-cluster client every
 * handler reaches other nodes with, and the idle keep-alive connections to
 * targets that the S3 GET relay (s3relay.c) reuses.
 *
 * Thread: each worker's own; nothing here is shared between workers.
 */
#ifndef SHOAL_PROXY_WORKER_H
#define SHOAL_PROXY_WORKER_H

struct hc;
struct http_req;
struct http_worker;

/* A connection to a target (host:port), idle in the pool or in use by
 * one relay. */
struct tconn {
    struct tconn *next;          /* in the pool */
    int fd;
    char host[256];
    int port;
};

struct proxy_worker {
    struct hc *hc;               /* intra-cluster requests */
    struct tconn *idle;          /* pooled target connections, newest first */
};

/* The server's worker_init and worker_fini hooks (w->local). */
void worker_init(struct http_worker *w);
void worker_fini(struct http_worker *w);

/* The calling worker's client for other nodes (common/hc.h). */
struct hc *worker_hc(struct http_req *r);

/* An idle connection to host:port, now the caller's; NULL when none. */
struct tconn *worker_conn_take(struct proxy_worker *pw, const char *host, int port);
/* Pool c (idle after a whole keep-alive response): the pool owns it now
 * and closes it when it holds enough already. */
void worker_conn_put(struct proxy_worker *pw, struct tconn *c);
/* Close c's socket and free it. */
void worker_conn_close(struct tconn *c);

#endif
