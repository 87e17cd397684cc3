/*
 * worker: a proxy worker thread's own state, made and dropped on that
 * thread by the HTTP server's worker hooks: the intra-cluster client
 * (common/nodeclient.h, with its pool of keep-alive connections) every handler
 * reaches other nodes with.
 *
 * Thread: each worker's own; nothing here is shared between workers.
 */
#ifndef SHOAL_PROXY_WORKER_H
#define SHOAL_PROXY_WORKER_H

struct nodeclient;
struct http_req;
struct http_worker;

struct proxy_worker {
    struct nodeclient *hc;       /* intra-cluster requests */
};

/* The server's worker_init and worker_fini hooks (w->local). */
void worker_init(struct http_worker *w);
void worker_fini(struct http_worker *w);

/* The calling worker's client for other nodes (common/nodeclient.h). */
struct nodeclient *worker_hc(struct http_req *r);

#endif
