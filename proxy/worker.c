/*
 * worker: each worker thread's intra-cluster client (see worker.h).
 */
#include <stdlib.h>

#include "nodeclient.h"
#include "http.h"
#include "util.h"
#include "worker.h"

void worker_init(struct http_worker *w)
{
    struct proxy_worker *pw = xcalloc(1, sizeof(*pw));
    pw->hc = nodeclient_new(w->base);
    w->local = pw;
}

void worker_fini(struct http_worker *w)
{
    struct proxy_worker *pw = w->local;
    nodeclient_free(pw->hc);
    free(pw);
}

struct nodeclient *worker_hc(struct http_req *r)
{
    return ((struct proxy_worker *)r->w->local)->hc;
}
