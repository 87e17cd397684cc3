/*
 * del: DELETE of an object. In a bucket with a backend the backend's copy
 * goes first (write-through, like PUT): a failure there (other than 404)
 * is the answer, and our copy stays. Then ours goes on the I/O pool
 * (store_delete unlinks the data file and drops the record under the
 * mountpath's lock). The answer is 404 only when neither had the object
 * (204 in S3 mode, where deletes are idempotent), or when it may live on
 * a target that is away (neighbour.h). A delete leaves a tombstone (store.h), so that
 * an older copy elsewhere never comes back. An evict (?evict) drops only
 * our copy. In a write-back bucket our copy goes first with a record
 * that the backend's must go too (writeback.h); the answer does not wait for
 * the backend.
 *
 * Threads: the request's worker; store_delete on the I/O pool.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "del.h"
#include "err.h"
#include "http.h"
#include "iopool.h"
#include "localcopy.h"
#include "mirror.h"
#include "place.h"
#include "target.h"
#include "util.h"
#include "writeback.h"
#include "xfer.h"

struct del {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    int rc;
    int remote_found;            /* the backend had it (or cannot tell) */
    int evict;                   /* only our copy, no tombstone */
    int elsewhere;               /* it may be on another target (neighbour.h) */
    struct backend b;
    char *name;
};

static void del_free(struct del *d)
{
    http_req_unref(d->r);
    backend_free(&d->b);
    free(d->name);
    free(d->mkey);
    free(d);
}

static void del_work(void *arg)
{
    struct del *d = arg;
    struct store_mp *mp = store_pick(&d->t->store, d->mkey, d->klen);
    d->rc = d->evict ? store_delete(&d->t->store, mp, d->mkey, d->klen)
                     : store_delete_tomb(&d->t->store, mp, d->mkey, d->klen);
    if (d->evict && !d->rc)      /* an eviction takes the copies on other drives too */
        localcopy_drop(&d->t->store, d->mkey, d->klen);
    if (d->rc == -ENOENT && (d->remote_found || d->elsewhere))
        d->rc = 0; /* gone from the backend, or from where it was: we had no copy */
}

static void del_answer(struct del *d);

static void del_spread(void *arg, int failed)
{
    struct del *d = arg;
    if (failed)                  /* gone here, not yet on every holder: not acknowledged */
        d->rc = -EAGAIN;
    del_answer(d);
}

static void del_done(void *arg)
{
    struct del *d = arg;
    if (!d->rc && !d->evict && place_spreads(d->mkey, d->klen)) {
        /* the tombstone goes to the copies and slices: none comes back */
        struct xfer_loop lp = {d->r->w->base, d->r->w->q, target_hc(d->r)};
        mirror_spread(d->t, &lp, d->mkey, d->klen, PLACE_ANY_SIZE, 1, del_spread, d);
        return;
    }
    del_answer(d);
}

static void reply_unavailable(struct del *d)
{
    http_resp_header_str(d->r, "Retry-After", "2");
    err_reply(d->r, S3E_SERVICE_UNAVAILABLE, "the object was deleted on its owner but not on "
                                             "every copy holder: try again");
}

static void del_answer(struct del *d)
{
    if (d->rc == -ENOENT && target_is_s3(d->r))
        d->rc = 0; /* S3 deletes are idempotent: 204 for a missing key */
    int st = d->rc ? err_status(d->rc) : 204;
    if (d->rc == -ENOENT)
        http_reply_error(d->r, 404, "object not found");
    else if (d->rc == -EAGAIN)
        reply_unavailable(d);
    else if (d->rc == -EEXIST)
        http_reply_error(d->r, 409, "the object is not yet written back to its backend: "
                                    "only a DELETE drops it");
    else if (d->rc)
        http_reply_error(d->r, st, "cannot delete object: %s", strerror(-d->rc));
    else
        http_reply(d->r, 204, NULL, NULL, 0);
    del_free(d);
}

/* The backend's copy is gone (or never was): now ours. */
static void del_backend_done(void *arg, const struct backend_obj *o)
{
    struct del *d = arg;
    if (o->status != 404 && (o->status < 200 || o->status > 299)) {
        char msg[300];
        int st = backend_status(&d->b, o, msg, sizeof(msg));
        http_reply_error(d->r, st, "%s", msg);
        del_free(d);
        return;
    }
    d->remote_found = o->status != 404;
    iopool_submit(d->t->io, d->r->w->q, del_work, del_done, d);
}

/* Write-back: ours goes with a record that the backend's must go too. */
static void del_wb_work(void *arg)
{
    struct del *d = arg;
    struct store_x x;
    char val[WRITEBACK_VAL_MAX];
    writeback_record(d->t, &x, d->mkey, d->klen, 1, val);
    x.tomb = 1;
    d->rc = store_delete_x(&d->t->store, store_pick(&d->t->store, d->mkey, d->klen), d->mkey,
                           d->klen, 0, &x);
    free((char *)x.key);
}

static void del_wb_done(void *arg)
{
    struct del *d = arg;
    if (d->rc == -ENOENT) {      /* not here: the backend's copy, now */
        d->rc = 0;
        backend_delete(target_cli(d->r), &d->b, d->name, del_backend_done, d);
        return;
    }
    if (!d->rc)
        writeback_kick(d->t);
    del_done(d);
}

void del_object(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                const char *name, char *mkey, size_t klen, int through, int evict,
                int elsewhere)
{
    struct del *d = xcalloc(1, sizeof(*d));
    d->t = t;
    d->r = r;
    d->mkey = mkey;
    d->klen = klen;
    d->name = xstrdup(name);
    d->evict = evict;
    d->elsewhere = !evict && elsewhere;
    http_req_ref(r);
    if (through)
        backend_resolve(t, bk, &d->b);
    if (through && d->b.write_back)
        iopool_submit(t->io, r->w->q, del_wb_work, del_wb_done, d);
    else if (through)
        backend_delete(target_cli(r), &d->b, name, del_backend_done, d);
    else
        iopool_submit(t->io, r->w->q, del_work, del_done, d);
}
