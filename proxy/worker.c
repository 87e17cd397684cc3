/*
 * worker: each worker thread's intra-cluster client and its pool of idle
 * keep-alive connections to targets (see worker.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc.h"
#include "http.h"
#include "util.h"
#include "worker.h"

#define IDLE_MAX 64              /* pooled connections per worker */

void worker_init(struct http_worker *w)
{
    struct proxy_worker *pw = xcalloc(1, sizeof(*pw));
    pw->hc = hc_new(w->base);
    w->local = pw;
}

void worker_fini(struct http_worker *w)
{
    struct proxy_worker *pw = w->local;
    hc_free(pw->hc);
    while (pw->idle) {
        struct tconn *c = pw->idle;
        pw->idle = c->next;
        worker_conn_close(c);
    }
    free(pw);
}

struct hc *worker_hc(struct http_req *r)
{
    return ((struct proxy_worker *)r->w->local)->hc;
}

struct tconn *worker_conn_take(struct proxy_worker *pw, const char *host, int port)
{
    for (struct tconn **pp = &pw->idle; *pp; pp = &(*pp)->next) {
        if ((*pp)->port == port && !strcmp((*pp)->host, host)) {
            struct tconn *c = *pp;
            *pp = c->next;
            return c;
        }
    }
    return NULL;
}

void worker_conn_put(struct proxy_worker *pw, struct tconn *c)
{
    int n = 0;
    for (struct tconn *i = pw->idle; i; i = i->next)
        n++;
    if (n >= IDLE_MAX) {
        worker_conn_close(c);
        return;
    }
    c->next = pw->idle;
    pw->idle = c;
}

void worker_conn_close(struct tconn *c)
{
    close(c->fd);
    free(c);
}
