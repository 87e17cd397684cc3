/*
 * repair: a damaged copy replaced from redundancy, then served (see
 * repair.h).
 */
#include "place.h"
#include "repair.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bmd.h"
#include "cold.h"
#include "ecode.h"
#include "err.h"
#include "get.h"
#include "neighbour.h"
#include "http.h"
#include "localcopy.h"
#include "iopool.h"
#include "log.h"
#include "mirror.h"
#include "node.h"
#include "objmeta.h"
#include "store.h"
#include "target.h"
#include "targetmetrics.h"
#include "util.h"
#include "xfer.h"

struct repair {
    struct target *t;
    struct http_req *r;          /* referenced until handed on */
    char *mkey;
    size_t klen;
    uint64_t uid, version, size;   /* of the damaged copy */
    int flags;
    int elsewhere;               /* a backend or slices have the object's bytes */
    int rc;
};

/* The damaged copy, while its bytes are here and neither a backend nor
 * slices have them, is kept and marked damaged: the last bytes of an
 * object are never dropped, and a good copy of its version, from another
 * drive or a copy holder, replaces it (store_held_version). With its data
 * file gone, or a backend to fetch it from again or slices to rebuild it
 * from, it is dropped. */
static void drop_work(void *arg)
{
    struct repair *p = arg;
    struct store *st = &p->t->store;
    struct store_mp *mp = store_pick(st, p->mkey, p->klen);
    struct objmeta *m = xmalloc(sizeof(*m));
    int fd = p->elsewhere || store_get(st, mp, p->mkey, p->klen, m) || m->uid != p->uid
                 ? -1
                 : store_data_open(mp, p->mkey, p->klen, m);
    free(m);
    if (fd >= 0) {
        close(fd);
        p->rc = store_mark_damaged(st, p->mkey, p->klen, p->uid);
    } else {
        p->rc = store_delete_if(st, mp, p->mkey, p->klen, p->uid);
    }
}

struct rebuild {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    int flags, unsure;
};

/* The rebuilt bytes, checked a moment ago as they were written (so not
 * checked again), go to the reader while they are committed. */
static void rebuilt_serve(void *arg, int fd, struct objmeta *m)
{
    struct rebuild *b = arg;
    targetmetrics_add(TM_REPAIRED, 1);
    get_opened(b->t, b->r, b->mkey, b->klen, NULL, (b->flags & ~GET_VERIFY) | GET_NO_REPAIR,
               m, fd);
    http_req_unref(b->r);
    b->r = NULL;
}

static void rebuilt(void *arg, int rc)
{
    struct rebuild *b = arg;
    if (!b->r) {
        ;                        /* served; a failed commit is logged */
    } else if (rc == 0) {
        targetmetrics_add(TM_REPAIRED, 1);
        get_local(b->t, b->r, b->mkey, b->klen, NULL, b->flags | GET_NO_REPAIR);
    } else if (rc == -ENOENT && !b->unsure) {
        err_reply(b->r, S3E_NO_SUCH_KEY, "object not found");
    } else if (rc == -ENOENT || rc == -EAGAIN) {
        http_resp_header_str(b->r, "Retry-After", "5");
        err_reply(b->r, S3E_SERVICE_UNAVAILABLE, "the target that holds this object is down "
                                                 "or did not answer");
    } else {
        get_corrupted(b->r, b->mkey, b->klen, "it is not here whole and too few of its "
                                                    "slices could be read to rebuild it");
    }
    if (b->r)
        http_req_unref(b->r);
    free(b->mkey);
    free(b);
}

void repair_rebuild_get(struct target *t, struct http_req *r, char *mkey, size_t klen,
                        int flags, int unsure)
{
    struct rebuild *b = xcalloc(1, sizeof(*b));
    b->t = t;
    b->r = r;
    b->mkey = mkey;
    b->klen = klen;
    b->flags = flags;
    b->unsure = unsure;
    http_req_ref(r);
    struct xfer_loop lp = {r->w->base, r->w->q, target_hc(r)};
    ecode_rebuild_serving(t, &lp, mkey, klen, rebuilt_serve, rebuilt, b);
}

/* Once the copy holders sent what they had (or the backend is next). */
static void brought(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                    int backed, char *mkey, size_t klen, const char *name, int unsure)
{
    struct objmeta m;
    struct bmd_ec ec;
    if (backed) {
        /* takes mkey: fetched again, and not repaired again if damaged again */
        cold_get_flags(t, r, bk, mkey, klen, name, GET_NO_REPAIR);
        return;
    }
    int here = store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen, &m) == 0;
    if (!here && bmd_ec(bk, &ec)) {
        repair_rebuild_get(t, r, mkey, klen, get_verifies(bk), unsure);   /* takes mkey */
        return;
    }
    if (here && (m.flags & OBJMETA_F_DAMAGED) && unsure) { /* kept; a holder may have it */
        http_resp_header_str(r, "Retry-After", "5");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the copy here is damaged and a copy holder "
                                              "could not be asked: try again");
    } else if (here && (m.flags & OBJMETA_F_DAMAGED)) {
        get_corrupted(r, mkey, klen, "its data is damaged and no copy holder had a good copy: "
                                     "every damaged copy is kept for an operator");
    } else if (here) {
        log_info("a damaged copy of %s/%s was replaced from a copy holder", bk->name, name);
        targetmetrics_add(TM_REPAIRED, 1);
        get_local(t, r, mkey, klen, NULL, get_verifies(bk) | GET_NO_REPAIR);
    } else if (unsure) {         /* a holder could not be asked: it may have it */
        http_resp_header_str(r, "Retry-After", "5");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the copy here was damaged and a copy holder "
                                              "could not be asked: try again");
    } else {
        get_corrupted(r, mkey, klen, "its data was damaged and no copy holder had a good "
                                        "copy: the object is lost");
    }
    free(mkey);
}

static void after_drop(struct repair *p);

/* A copy on another drive of this target became the object again, or none
 * could (localcopy.h): then the copy holders, slices or backend. */
static void local_restored(void *arg, int rc)
{
    struct repair *p = arg;
    if (rc) {
        after_drop(p);
        return;
    }
    char *shown = xfer_key_show(p->mkey, p->klen);
    log_info("a damaged copy of %s was replaced from a copy on another drive", shown);
    targetmetrics_add(TM_REPAIRED, 1);
    free(shown);
    get_local(p->t, p->r, p->mkey, p->klen, NULL, p->flags | GET_NO_REPAIR);
    http_req_unref(p->r);
    free(p->mkey);
    free(p);
}

static void dropped(void *arg)
{
    struct repair *p = arg;
    struct bmd *b;
    const struct bmd_bucket *bk = xfer_key_bucket(p->mkey, p->klen, &b);
    int local = bk && (!p->rc || p->rc == -ENOENT) &&
                place_copies(p->mkey, p->klen, p->size) > 1;
    bmd_unref(b);
    if (local) {                 /* no older copy than the damaged one comes back */
        struct xfer_loop lp = {p->r->w->base, p->r->w->q, target_hc(p->r)};
        localcopy_restore(p->t, &lp, p->mkey, p->klen, p->version, local_restored, p);
        return;
    }
    after_drop(p);
}

static void after_drop(struct repair *p)
{
    struct http_req *r = p->r;
    const char *prov, *bucket, *name;
    size_t nl;
    struct bmd *b;
    const struct bmd_bucket *bk = xfer_key_bucket(p->mkey, p->klen, &b);
    xfer_key_parts(p->mkey, p->klen, &prov, &bucket, &name, &nl);
    if (p->rc == -ESTALE) {      /* written again meanwhile: the new version */
        get_local(p->t, r, p->mkey, p->klen, NULL, p->flags | GET_NO_REPAIR);
    } else if (p->rc && p->rc != -ENOENT) {
        get_corrupted(r, p->mkey, p->klen,
                      p->rc == -EEXIST ? "its data is damaged and it is still owed to its "
                                         "write-back backend: kept for an operator"
                                       : "its data is damaged and cannot be dropped");
    } else if (!bk) {
        err_reply(r, S3E_NO_SUCH_BUCKET, "bucket not found");
    } else {
        char *nm = xstrndup(name, nl);
        char *mkey = xmalloc(p->klen + 1);
        memcpy(mkey, p->mkey, p->klen + 1);
        neighbour_first(p->t, r, bk, bmd_has_backend(bk), mkey, p->klen, nm,
                        brought); /* takes mkey */
        free(nm);
    }
    bmd_unref(b);
    http_req_unref(r);
    free(p->mkey);
    free(p);
}

int repair_read(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const struct objmeta *m, int flags)
{
    struct bmd *b;
    const struct bmd_bucket *bk = xfer_key_bucket(mkey, klen, &b);
    struct bmd_ec ec;
    int can = bk && (bmd_copies(bk) > 1 || bmd_has_backend(bk) || bmd_ec(bk, &ec));
    int elsewhere = bk && (bmd_has_backend(bk) || bmd_ec(bk, &ec));
    bmd_unref(b);
    if (!can)
        return 0;
    char *shown = xfer_key_show(mkey, klen);
    log_warn("object %s: its copy here is damaged: repairing", shown);
    free(shown);
    struct repair *p = xcalloc(1, sizeof(*p));
    p->t = t;
    p->r = r;
    p->mkey = xmalloc(klen + 1);   /* NUL-separated parts: copied whole */
    memcpy(p->mkey, mkey, klen + 1);
    p->klen = klen;
    p->uid = m->uid;
    p->version = m->version;
    p->size = m->size;
    p->flags = flags;
    p->elsewhere = elsewhere;
    http_req_ref(r);
    iopool_submit_first(t->io, r->w->q, drop_work, dropped, p);
    return 1;
}
