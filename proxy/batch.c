/*
 * batch: GetBatch's door on a proxy (see batch.h).
 *
 * The assembler is the target that owns the most entries: its own it
 * reads from its drives, so the fewest bytes cross the network. Ties go
 * to the first such target in the entries' order.
 *
 * Thread: the request's worker.
 */
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "batch.h"
#include "batchreq.h"
#include "buckets.h"
#include "cmap.h"
#include "http.h"
#include "httpbody.h"
#include "node.h"
#include "nodeauth.h"
#include "nodesig.h"
#include "objects.h"
#include "proxy.h"
#include "util.h"

struct ask {
    struct http_req *r;
    struct authz_who who;
};

/* Every bucket exists and lets the caller read it: 1, else 0 answered. */
static int allowed(struct http_req *r, const struct authz_who *who, const struct batch_req *q)
{
    for (size_t i = 0; i < q->n; i++) {
        const struct batch_entry *e = &q->e[i];
        if (i && !strcmp(e->bucket, q->e[i - 1].bucket) &&
            !strcmp(e->provider, q->e[i - 1].provider))
            continue;
        if (!buckets_exist(e->provider, e->bucket)) {
            http_reply_error(r, 404, "bucket '%s' (provider %s) not found", e->bucket,
                             e->provider);
            return 0;
        }
        if (authz_decide_named(e->provider, e->bucket, who, AUTHZ_READ) != AUTHZ_ALLOW) {
            http_reply_error(r, 403, "access denied: %s may not read objects of bucket '%s'",
                             who->access ? who->access : "an unsigned request", e->bucket);
            return 0;
        }
    }
    return 1;
}

/* The target that owns the most of q's entries, or NULL. */
static const struct cmap_node *assembler(const struct cmap *m, const struct batch_req *q)
{
    int *count = xcalloc((size_t)m->n + 1, sizeof(*count));
    const struct cmap_node *best = NULL;
    int most = 0;
    for (size_t i = 0; i < q->n; i++) {
        const struct cmap_node *o =
            objects_owner(m, q->e[i].provider, q->e[i].bucket, q->e[i].name);
        if (!o)
            continue;
        int k = (int)(o - m->nodes);
        if (++count[k] > most) {
            most = count[k];
            best = o;
        }
    }
    free(count);
    return best;
}

static void got_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct ask *a = arg;
    struct proxy *p = r->w->ctx;
    struct batch_req q;
    char err[300];
    if (batchreq_parse(&q, body, len, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        goto out;
    }
    if (!allowed(r, &a->who, &q)) {
        batchreq_free(&q);
        goto out;
    }
    struct cmap *m = cmap_current();
    const struct cmap_node *owner = m ? assembler(m, &q) : NULL;
    batchreq_free(&q);
    if (!owner) {
        cmap_unref(m);
        http_reply_error(r, 503, "no storage target is in the cluster");
        goto out;
    }
    char query[16 + BATCHREQ_DIGEST_LEN];
    strcpy(query, "digest=");
    batchreq_digest(body, len, query + 7);
    char *url = node_signed_url(&p->node, r->method_name, owner->url, "/v1/batch", query);
    http_resp_header_str(r, "Location", url);
    char *msg = xasprintf("{\"target\":\"%s\",\"location\":\"%s\"}\n", owner->id, url);
    http_reply(r, 307, "application/json", msg, strlen(msg));
    free(msg);
    free(url);
    cmap_unref(m);
out:
    batchreq_release();
    http_req_unref(r);
    free(a);
}

static void body_gone(void *arg)
{
    struct ask *a = arg;
    batchreq_release();
    http_req_unref(a->r);
    free(a);
}

void batch_route(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    (void)rest;
    if (!batchreq_door(r, rlen))
        return;
    struct ask *a = xcalloc(1, sizeof(*a));
    a->r = r;
    if (!node_identify(&p->node, r, &a->who)) {
        free(a);
        return;
    }
    if (!batchreq_admit(r)) {
        free(a);
        return;
    }
    http_req_ref(r);
    node_read_body(r, BATCHREQ_BODY_MAX, got_body, body_gone, a);
}
