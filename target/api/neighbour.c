/*
 * neighbour: get-from-neighbor (see neighbour.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "bmd.h"
#include "cmap.h"
#include "cold.h"
#include "err.h"
#include "get.h"
#include "neighbour.h"
#include "nodeclient.h"
#include "http.h"
#include "log.h"
#include "mirror.h"
#include "node.h"
#include "ocache.h"
#include "place.h"
#include "reb.h"
#include "repair.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"
#include "xfget.h"
#include "xxh.h"

#define RANKED 8                 /* targets looked at, best first */
#define ASK_MAX 6                /* neighbours asked, at most */
#define ASK_TIMEOUT_MS (10L * 60 * 1000)   /* an answer waits for the object's send */

/* Where the name may be besides here, by the map of the moment. */
struct around {
    const struct cmap_node *ask[ASK_MAX];
    int n_ask;
    int down_above;              /* a target ranked above this one is down */
    int maint_above;             /* one is in maintenance or leaving */
};

/* copies: the bucket's mirror copies. Asked below this one: the active
 * targets that hold copies (else the one that owned names while this
 * target was away). A target down above this one leaves a name missing
 * here unsure, unless this one was among the name's copy holders even
 * with it: every acknowledged write (and delete) came here too. */
static void look_around(struct target *t, const struct cmap *m, const char *mkey, size_t klen,
                        int copies, struct around *a)
{
    int below = copies > 1 ? copies - 1 : 1;
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
            if (i < copies)
                a->down_above = 0;   /* a holder with them all: nothing owed elsewhere */
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
        if (!above && --below <= 0)
            break;               /* the last one below that is asked */
    }
}

struct neighbour {
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
    neighbour_next_fn next;
    /* the neighbours to ask, and what theirs must beat */
    char *ask[ASK_MAX];
    int n_ask;
    uint64_t have;
    /* relaying a neighbour's copy straight to the client */
    int relay_i;                 /* the neighbour asked now */
    struct nodeclient_xfer *x;
    char *meta;
    size_t meta_len, meta_got;
    struct objmeta m;
    int begun, paused;
    XXH3_state_t *xs;            /* the relayed bytes' checksum, checked before the last */
    uint64_t relayed;
    char last;                   /* the last byte, held until the checksum is right */
};

static void neighbour_free(struct neighbour *g)
{
    XXH3_freeState(g->xs);
    for (int i = 0; i < g->n_ask; i++)
        free(g->ask[i]);
    free(g->meta);
    free(g->name);
    free(g);
}

/* On to next, with the bucket as the BMD has it now. */
static void go_on(struct neighbour *g)
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
    g->mkey = NULL;
    neighbour_free(g);
}

static void asked(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct neighbour *g = arg;
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

/* Ask every neighbour to send what it has newer (r is held). */
static void ask_all(struct neighbour *g)
{
    struct http_req *r = g->r;
    if (g->n_ask == 0) {
        g->pending = 1;
        asked(g, 200, NULL, 0, NULL);
        return;
    }
    char q[128];
    snprintf(q, sizeof(q), "newer=%llu&to=%s", (unsigned long long)g->have, g->t->node.id);
    g->pending = g->n_ask;
    for (int i = 0; i < g->n_ask; i++) {
        char *url = xfer_url(g->t, "POST", g->ask[i], g->mkey, g->klen, q);
        nodeclient_request(target_hc(r), "POST", url, NULL, 0, NULL, ASK_TIMEOUT_MS, asked, g);
        free(url);
    }
}

/* ---- a neighbour's copy relayed ------------------------------------------------------ */

#define RELAY_HIGH (8u << 20)    /* the client's unsent bytes that pause the neighbour */

/* A plain GET (no range, no conditions, the native API): what a relay
 * answers as get_local would. */
static int relayable(struct http_req *r)
{
    static const char *const no[] = {"Range", "If-Match", "If-None-Match",
                                     "If-Modified-Since", "If-Unmodified-Since"};
    if (r->method != HTTP_M_GET || target_is_s3(r) || xfget_asked(r))
        return 0;
    for (size_t i = 0; i < ARRAY_LEN(no); i++)
        if (http_req_header(r, no[i]))
            return 0;
    return 1;
}

static void relay_next(struct neighbour *g);

/* The client left: the transfer stops at its next piece (on_done frees g). */
static void relay_gone(struct http_req *r)
{
    struct neighbour *g = r->data;
    r->data = NULL;
    r->on_drain = NULL;
    if (g->paused) {
        g->paused = 0;
        nodeclient_resume(g->x);
    }
}

static void relay_drained(struct http_req *r)
{
    struct neighbour *g = r->data;
    if (g->paused && http_resp_pending(r) < RELAY_HIGH / 2) {
        g->paused = 0;
        nodeclient_resume(g->x);
    }
}

static int relay_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct neighbour *g = arg;
    size_t n = xfer_record_len(x, status);
    if (!n)
        return 0;                /* nothing newer there (204), or a failure: on_done */
    g->meta_len = n;
    g->meta = xmalloc(n);
    return 0;
}

static int relay_data(void *arg, struct nodeclient_xfer *x, const char *d, size_t n)
{
    struct neighbour *g = arg;
    struct http_req *r = g->r;
    if (r->data != g)
        return -1;               /* the client left */
    if (!g->meta)
        return 0;
    if (g->meta_got < g->meta_len) {
        if (!xfer_meta_take(g->meta, g->meta_len, &g->meta_got, &d, &n))
            return 0;
        if (objmeta_decode(g->meta, g->meta_len, &g->m))
            return -1;
        target_meta_headers(r, &g->m);
        http_resp_header_str(r, "Content-Type",
                         g->m.ctype[0] ? g->m.ctype : "application/octet-stream");
        http_resp_begin(r, 200, (int64_t)g->m.size);
        g->begun = 1;
        if (!g->xs)
            g->xs = XXH3_createState();
        XXH3_64bits_reset(g->xs);
        g->relayed = 0;
    }
    if (!n)
        return 0;
    if (g->relayed + n > g->m.size)
        return -1;               /* more than its record says */
    XXH3_64bits_update(g->xs, d, n);
    g->relayed += n;
    if (g->relayed == g->m.size) {   /* the last byte waits for the checksum */
        g->last = d[n - 1];
        n--;
    }
    if (n)
        http_resp_write(r, d, n);
    if (http_resp_pending(r) > RELAY_HIGH) {
        g->paused = 1;
        nodeclient_pause(x);
    }
    return 0;
}

static void relay_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct neighbour *g = arg;
    struct http_req *r = g->r;
    (void)x;
    (void)err;
    g->x = NULL;
    if (g->begun) {
        int whole = status == 200 && g->relayed == g->m.size && g->m.size > 0 &&
                    XXH3_64bits_digest(g->xs) == g->m.cksum;
        if (status == 200 && g->m.size == 0 && r->data == g) {
            http_resp_end(r);
        } else if (whole && r->data == g) {
            http_resp_write(r, &g->last, 1);
            http_resp_end(r);
        } else if (r->data == g) {
            if (status == 200)
                log_error("a neighbour's copy of %s/%s came damaged: not served whole",
                          g->bucket, g->name);
            http_resp_abort(r);  /* never a body that looks whole, nor wrong bytes */
        }
        r->data = NULL;
        r->on_abort = NULL;
        r->on_drain = NULL;
        http_req_unref(r);
        free(g->mkey);
        neighbour_free(g);
        return;
    }
    r->on_abort = NULL;
    r->on_drain = NULL;
    if (r->data != g) {          /* the client left */
        http_req_unref(r);
        free(g->mkey);
        neighbour_free(g);
        return;
    }
    r->data = NULL;
    free(g->meta);
    g->meta = NULL;
    g->meta_len = g->meta_got = 0;
    g->relay_i++;
    relay_next(g);
}

static const struct nodeclient_ops relay_ops = {
    .on_headers = relay_headers,
    .on_data = relay_data,
    .on_done = relay_done,
};

/* The next neighbour's copy, or, when none had one, the usual asking
 * (which also brings tombstones and tells "unsure" apart). */
static void relay_next(struct neighbour *g)
{
    struct http_req *r = g->r;
    if (g->relay_i >= g->n_ask) {
        ask_all(g);
        return;
    }
    char *url = xfer_url(g->t, "GET", g->ask[g->relay_i], g->mkey, g->klen, "newer=0");
    r->data = g;
    r->on_abort = relay_gone;
    r->on_drain = relay_drained;
    g->x = nodeclient_start(target_hc(r), "GET", url, NULL, 0, -1, ASK_TIMEOUT_MS, &relay_ops, g);
    free(url);
}

/* GET, HEAD: served from here (or the backend), or 503 when the name may
 * be only where nobody could be asked. */
static void serve(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
                  char *mkey, size_t klen, const char *name, int unsure)
{
    struct objmeta m;
    const char *wp = json_string_value(json_object_get(bk->props, "write_policy"));
    int backlog_elsewhere = unsure && wp && !strcmp(wp, "write-back");
    if (backed && !backlog_elsewhere) {
        cold_get(t, r, bk, mkey, klen, name);   /* takes mkey */
        return;
    }
    struct bmd_ec ec;            /* an erasure-coded object not here whole: its slices */
    if (bmd_ec(bk, &ec) && !store_version(&t->store, store_pick(&t->store, mkey, klen), mkey,
                                          klen) && arch_asked(r)) {
        http_resp_header_str(r, "Retry-After", "5");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the archive is not whole on this target yet; "
                                              "a read inside it needs it whole");
        free(mkey);
        return;
    }
    if (bmd_ec(bk, &ec) && !store_version(&t->store, store_pick(&t->store, mkey, klen), mkey,
                                          klen)) {
        repair_rebuild_get(t, r, mkey, klen, get_verifies(bk), unsure);   /* takes mkey */
        return;
    }
    /* a write-back bucket's newest copy may be owed to its backend on the
     * target that is down: the backend's could be older */
    if (unsure && store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen, &m)) {
        http_resp_header_str(r, "Retry-After", "5");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the target that holds this object is down "
                                              "or did not answer");
    } else {
        get_local(t, r, mkey, klen, NULL, get_verifies(bk));
    }
    free(mkey);
}

void neighbour_get(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
                   char *mkey, size_t klen, const char *name)
{
    neighbour_first(t, r, bk, backed, mkey, klen, name, serve);
}

/* Is mkey's record here, and not marked damaged? This worker's cache
 * answers without a read when it vouches for the record. */
static int here_undamaged(struct target *t, struct store_mp *mp, const char *mkey, size_t klen)
{
    uint32_t flags;
    if (!ocache_flags(&t->store, mkey, klen, &flags)) {
        struct objmeta m;
        if (store_get(&t->store, mp, mkey, klen, &m))
            return 0;
        flags = m.flags;
    }
    return !(flags & OBJMETA_F_DAMAGED);
}

void neighbour_first(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
                     char *mkey, size_t klen, const char *name, neighbour_next_fn next)
{
    int window = reb_window(t);
    struct store_mp *mp = store_pick(&t->store, mkey, klen);
    struct cmap *cm = cmap_current();
    struct around a;
    /* Outside a window: a bucket with a backend asks only a target in
     * maintenance (what is not here, the backend has), one without only
     * when the name is not here, or only as a copy marked damaged
     * (repair.h); so does a write-back bucket, whose newest copy may be
     * owed to its backend on a target that is down. */
    const char *wp = json_string_value(json_object_get(bk->props, "write_policy"));
    int wb = backed && wp && !strcmp(wp, "write-back");
    int ask = window || (backed && !wb ? cm && cm->n_members != cm->n_targets
                                       : !here_undamaged(t, mp, mkey, klen));
    if (ask) {
        look_around(t, cm, mkey, klen, place_bucket_copies(bk), &a);
        ask = window || !backed || wb || a.maint_above;
    }
    if (!ask) {                  /* the common case: on to next at once */
        cmap_unref(cm);
        next(t, r, bk, backed, mkey, klen, name, 0);   /* takes mkey */
        return;
    }
    struct neighbour *g = xcalloc(1, sizeof(*g));
    g->next = next;
    g->t = t;
    g->r = r;
    snprintf(g->provider, sizeof(g->provider), "%s", bk->provider);
    snprintf(g->bucket, sizeof(g->bucket), "%s", bk->name);
    g->name = xstrdup(name);
    g->mkey = mkey;
    g->klen = klen;
    g->backed = backed;
    /* what is here, object or tombstone, is what theirs must beat */
    uint64_t have = store_version(&t->store, mp, mkey, klen);
    g->down_above = a.down_above;
    g->have = have;
    for (int i = 0; i < a.n_ask; i++)
        g->ask[g->n_ask++] = xstrdup(a.ask[i]->url);
    cmap_unref(cm);
    http_req_ref(r);
    /* nothing here while the walk may still bring it, and only one place
     * it can be: its bytes go straight from the neighbour to the client,
     * and the walk keeps it (with more, the newest is found by asking) */
    if (window && !have && next == serve && g->n_ask == 1 && relayable(r) && !arch_asked(r) &&
        !get_verifies(bk))       /* a relay sends bytes before its checksum is known */
        relay_next(g);
    else
        ask_all(g);
}
