/*
 * gfn: get-from-neighbor (see gfn.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "cmap.h"
#include "cold.h"
#include "err.h"
#include "get.h"
#include "gfn.h"
#include "hc.h"
#include "http.h"
#include "node.h"
#include "reb.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

#define RANKED 8                 /* targets looked at, best first */
#define ASK_MAX 3                /* neighbours asked, at most */
#define ASK_TIMEOUT_MS (10L * 60 * 1000)   /* an answer waits for the object's send */

/* Where the name may be besides here, by the map of the moment. */
struct around {
    const struct cmap_node *ask[ASK_MAX];
    int n_ask;
    int down_above;              /* a target ranked above this one is down */
    int maint_above;             /* one is in maintenance or leaving */
};

static void look_around(struct target *t, const struct cmap *m, const char *mkey, size_t klen,
                        struct around *a)
{
    memset(a, 0, sizeof(*a));
    size_t pl;
    char *pkey = m ? xfer_place_key(mkey, klen, &pl) : NULL;
    if (!pkey)
        return;
    const struct cmap_node *rk[RANKED];
    int n = cmap_ranked(m, pkey, pl, rk, RANKED);
    free(pkey);
    int above = 1;
    for (int i = 0; i < n; i++) {
        if (!strcmp(rk[i]->id, t->node.id)) {
            above = 0;
            continue;
        }
        if (rk[i]->flags & CMAP_FLAG_DOWN) {
            a->down_above |= above;
            continue;
        }
        if (above) {
            a->maint_above |= rk[i]->flags != 0;
        } else if (rk[i]->flags) {
            continue;            /* below and leaving: never owned it after us */
        }
        if (a->n_ask < ASK_MAX)
            a->ask[a->n_ask++] = rk[i];
        if (!above)
            break;               /* the first one below is the last asked */
    }
}

struct gfn {
    struct target *t;
    struct http_req *r;
    char provider[16];
    char bucket[64];
    char *name;
    char *mkey;
    size_t klen;
    int backed;
    int pending;
    int failed;                  /* a neighbour could not answer */
    int down_above;
    gfn_next_fn next;
};

/* On to next, with the bucket as the BMD has it now. */
static void go_on(struct gfn *g)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, g->provider, g->bucket) : NULL;
    if (bk) {
        g->next(g->t, g->r, bk, g->backed, g->mkey, g->klen, g->name,
                g->down_above || g->failed);   /* takes mkey */
    } else {
        free(g->mkey);
        err_reply(g->r, S3E_NO_SUCH_BUCKET, "bucket '%s' not found", g->bucket);
    }
    bmd_unref(b);
    free(g->name);
    free(g);
}

static void asked(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct gfn *g = arg;
    (void)body;
    (void)len;
    (void)err;
    if (status != 200)
        g->failed = 1;
    if (--g->pending)
        return;
    struct http_req *r = g->r;
    go_on(g);
    http_req_unref(r);
}

/* GET, HEAD: served from here (or the backend), or 503 when the name may
 * be only where nobody could be asked. */
static void serve(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
                  char *mkey, size_t klen, const char *name, int unsure)
{
    struct ometa m;
    if (backed) {
        cold_get(t, r, bk, mkey, klen, name);   /* takes mkey */
        return;
    }
    if (unsure && store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen, &m)) {
        node_count(&t->node, r->method == HTTP_M_HEAD ? ST_HEAD : ST_GET, 503);
        http_resp_header(r, "Retry-After", "5");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the target that holds this object is down "
                                              "or did not answer");
    } else {
        get_local(t, r, mkey, klen, NULL);
    }
    free(mkey);
}

void gfn_get(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
             char *mkey, size_t klen, const char *name)
{
    gfn_first(t, r, bk, backed, mkey, klen, name, serve);
}

void gfn_first(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
               char *mkey, size_t klen, const char *name, gfn_next_fn next)
{
    struct gfn *g = xcalloc(1, sizeof(*g));
    g->next = next;
    g->t = t;
    g->r = r;
    snprintf(g->provider, sizeof(g->provider), "%s", bk->provider);
    snprintf(g->bucket, sizeof(g->bucket), "%s", bk->name);
    g->name = xstrdup(name);
    g->mkey = mkey;
    g->klen = klen;
    g->backed = backed;
    int window = reb_window();
    struct ometa m;
    struct store_mp *mp = store_pick(&t->store, mkey, klen);
    struct cmap *cm = cmap_current();
    struct around a;
    /* Outside a window: a bucket with a backend asks only a target in
     * maintenance (what is not here, the backend has), one without only
     * when the name is not here. */
    int ask = window || (backed ? cm && cm->n_members != cm->n_targets
                                : store_get(&t->store, mp, mkey, klen, &m) != 0);
    if (!ask) {
        cmap_unref(cm);
        go_on(g);
        return;
    }
    look_around(t, cm, mkey, klen, &a);
    if (!window && backed && !a.maint_above) {
        cmap_unref(cm);
        go_on(g);
        return;
    }
    /* what is here, object or tombstone, is what theirs must beat */
    uint64_t have = 0, tv = 0;
    if (store_get(&t->store, mp, mkey, klen, &m) == 0)
        have = m.version;
    if (store_tomb_get(&t->store, mp, mkey, klen, &tv) == 0 && tv > have)
        have = tv;
    g->down_above = a.down_above;
    if (a.n_ask == 0) {
        cmap_unref(cm);
        g->pending = 1;
        http_req_ref(r);
        asked(g, 200, NULL, 0, NULL);
        return;
    }
    const char *prov, *bucket, *nm;
    size_t nl;
    xfer_key_parts(mkey, klen, &prov, &bucket, &nm, &nl);
    char *en = http_pct_encode(nm, nl, 1);
    g->pending = a.n_ask;
    http_req_ref(r);
    for (int i = 0; i < a.n_ask; i++) {
        char *url = node_signed_urlf(&t->node, "POST", a.ask[i]->url,
                                     "/v1/internal/xfer/%s/%s?provider=%s&newer=%llu&to=%s",
                                     bucket, en, prov, (unsigned long long)have, t->node.id);
        hc_request(target_hc(r), "POST", url, NULL, 0, NULL, ASK_TIMEOUT_MS, asked, g);
        free(url);
    }
    free(en);
    cmap_unref(cm);
}
