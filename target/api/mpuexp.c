/*
 * mpuexp: the uploads in progress, read from their records (see mpu.h):
 * listed for the proxy, and dropped once they are older than mpu_expire_h.
 * A timer on one worker's loop hands a sweep to the I/O pool, one at a
 * time: each mountpath's upload records are read, and the ones too old
 * are dropped with their parts.
 */
#include <event2/event.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "iopool.h"
#include "log.h"
#include "mpu.h"
#include "store.h"
#include "target.h"
#include "util.h"

#define DONE_KEEP_NS (24ull * 3600 * 1000000000) /* a completed upload's record, at most */
#define SWEEP_MAX_S 600          /* a sweep at least this often */

/* The expiry's state, made at start-up and handed to its callbacks. */
struct expiry {
    struct target *t;
    struct http_worker *w;
    struct event *timer;
    int running;                 /* a sweep is on the I/O pool */
    int dropped;                 /* by the last one */
};

/* The ids to drop, gathered while a mountpath's records are read. */
struct old {
    uint64_t now, keep;
    char **ids;
    int n;
};

static int old_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct old *o = arg;
    json_t *j = json_loadb(v, vl, 0, NULL);
    uint64_t at = (uint64_t)json_integer_value(json_object_get(j, "initiated"));
    if (j && o->keep && at + o->keep < o->now) {
        o->ids = xrealloc(o->ids, sizeof(char *) * (size_t)(o->n + 1));
        o->ids[o->n++] = xstrndup(k, kl);
    }
    json_decref(j);
    return 0;
}

/* The records of kind ("u", "d") older than keep on mp: their keys. */
static void old_records(struct store *st, struct store_mp *mp, const char *kind, uint64_t keep,
                        struct old *o)
{
    o->keep = keep;
    o->n = 0;
    store_kv_scan(st, mp, kind, 1, old_one, o);
}

static void sweep_work(void *arg)
{
    struct expiry *ex = arg;
    uint64_t keep = (uint64_t)(ex->t->conf.mpu_expire_h * 3600e9);
    uint64_t done_keep = keep && keep < DONE_KEEP_NS ? keep : DONE_KEEP_NS;
    struct old o = {.now = wall_ns()};
    ex->dropped = 0;
    for (int i = 0; i < ex->t->store.n; i++) {
        struct store_mp *mp = &ex->t->store.mp[i];
        old_records(&ex->t->store, mp, "u", keep, &o);          /* uploads: with their parts */
        for (int k = 0; k < o.n; k++) {
            mpu_drop(ex->t, mp, o.ids[k] + 1);
            free(o.ids[k]);
        }
        ex->dropped += o.n;
        old_records(&ex->t->store, mp, "d", done_keep, &o);     /* completed ones: the record */
        for (int k = 0; k < o.n; k++) {
            store_kv_del(&ex->t->store, mp, o.ids[k], strlen(o.ids[k]));
            free(o.ids[k]);
        }
    }
    free(o.ids);
}

static void sweep_done(void *arg)
{
    struct expiry *ex = arg;
    ex->running = 0;
    if (ex->dropped)
        log_info("multipart uploads: %d past mpu_expire_h dropped with their parts",
                 ex->dropped);
}

/* How often to look: a quarter of the expiry, between 1 s and SWEEP_MAX_S
 * (that without an expiry: for the completed uploads' records). */
static struct timeval period(const struct expiry *ex)
{
    double s = ex->t->conf.mpu_expire_h > 0 ? ex->t->conf.mpu_expire_h * 3600 / 4 : SWEEP_MAX_S;
    struct timeval tv = {s < 1 ? 1 : s > SWEEP_MAX_S ? SWEEP_MAX_S : (time_t)s, 0};
    return tv;
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct expiry *ex = arg;
    if (!ex->running) {
        ex->running = 1;
        iopool_submit(ex->t->io, ex->w->q, sweep_work, sweep_done, ex);
    }
    struct timeval tv = period(ex);
    evtimer_add(ex->timer, &tv);
}

void mpu_expire_start(struct target *t, struct http_worker *w)
{
    struct expiry *ex = xcalloc(1, sizeof(*ex));   /* lives as long as the target */
    ex->t = t;
    ex->w = w;
    ex->timer = evtimer_new(w->base, tick, ex);
    struct timeval tv = period(ex);
    evtimer_add(ex->timer, &tv);
}

/* ---- uploads in progress ------------------------------------------------------- */

struct ulist {
    const char *bucket, *prefix;
    json_t *arr;
};

static int ulist_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct ulist *l = arg;
    json_t *j = json_loadb(v, vl, 0, NULL);
    const char *b = json_string_value(json_object_get(j, "bucket"));
    const char *n = json_string_value(json_object_get(j, "name"));
    if (b && n && !strcmp(b, l->bucket) && !strncmp(n, l->prefix, strlen(l->prefix))) {
        json_t *u = json_pack("{s:s, s:s%, s:O}", "name", n, "upload", k + 1, kl - 1,
                              "initiated", json_object_get(j, "initiated"));
        json_t *who = json_object_get(j, "initiator");   /* none: the bucket's owner */
        if (json_is_string(who))
            json_object_set(u, "initiator", who);
        json_array_append_new(l->arr, u);
    }
    json_decref(j);
    return 0;
}

void mpu_list_handle(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    (void)rest;
    (void)rlen;
    char bucket[64], prefix[1100] = "";
    if (http_query_get(r, "bucket", bucket, sizeof(bucket)) <= 0 ||
        http_query_get(r, "prefix", prefix, sizeof(prefix)) == -2) {
        http_reply_error(r, 400, "uploads needs bucket (and an optional prefix)");
        return;
    }
    struct ulist l = {bucket, prefix, json_array()};
    for (int i = 0; i < t->store.n; i++)
        store_kv_scan(&t->store, &t->store.mp[i], "u", 1, ulist_one, &l);
    http_reply_json(r, 200, json_pack("{s:o}", "uploads", l.arr));
}
