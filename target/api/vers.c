/*
 * vers: requests on the objects of a versioned bucket, as S3 answers them.
 *
 * The store keeps the versions (store.h: a commit with a version id keeps
 * the record it replaces); this module reads them and makes delete
 * markers:
 *
 *   GET/HEAD ?versionId=V     that version (405 for a delete marker,
 *                             404 NoSuchVersion when there is none)
 *   DELETE ?versionId=V       that version goes for good, as an ordinary
 *                             delete of its record (a tombstone, spread
 *                             to the copies); the name's latest version
 *                             is then the newest left
 *   GET/HEAD                  the latest: the name's record unless it is
 *                             a delete marker (404 saying so); without a
 *                             record, the newest version kept
 *   DELETE                    a delete marker becomes the latest version
 *                             (a commit of no bytes, spread as a PUT is)
 *
 * PUT, CopyObject and CompleteMultipartUpload give the new latest version
 * its id at the commit (store_x.vers). Versions live with their name on
 * one target and mountpath (objname_base_len), so every lookup here is
 * local.
 *
 * Thread: r's worker; lookups and commits on the I/O pool.
 */
#include "place.h"
#include "vers.h"
#include "reb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bmd.h"
#include "err.h"
#include "get.h"
#include "neighbour.h"
#include "http.h"
#include "iopool.h"
#include "log.h"
#include "mirror.h"
#include "s3.h"
#include "s3sub.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"
#include "xxh.h"

#define VID_ARG_MAX 64           /* a versionId longer than this is no id of ours */

struct vreq {
    struct target *t;
    struct http_req *r;
    char provider[16], bucket[64];
    char *name;
    char *mkey;                  /* the name's */
    size_t klen;
    char vid[VID_ARG_MAX];       /* "" for the latest */
    int state;                   /* vers_state */
    char *vkey;                  /* the version's record (found), or NULL */
    size_t vkl;
    struct objmeta *m;           /* its record; a new delete marker's */
    struct objmeta *pm;          /* the version made the latest again by a DELETE of the
                                  * latest (NULL: none) */
    struct store_mp *mp;
    char work[PATH_MAX];
    int fd;                      /* a read's version, opened; -1 */
    int rc;
};

int vers_state(const struct bmd_bucket *bk)
{
    const char *v = json_string_value(json_object_get(bk->props, "versioning"));
    return !v                       ? 0
           : !strcmp(v, "enabled")  ? STORE_VERS_ENABLED
           : !strcmp(v, "suspended") ? STORE_VERS_SUSPENDED
                                    : 0;
}

static void vreq_free(struct vreq *v)
{
    http_req_unref(v->r);
    free(v->name);
    free(v->mkey);
    free(v->vkey);
    free(v->m);
    free(v->pm);
    if (v->fd >= 0)
        close(v->fd);
    free(v);
}

/* The headers that say which version an answer is of. */
static void version_headers(struct http_req *r, const struct objmeta *m)
{
    http_resp_header_str(r, "x-amz-version-id", store_vid(m));
    if (store_is_marker(m))
        http_resp_header_str(r, "x-amz-delete-marker", "true");
}

/* 503 while the name's versions may be moving here or not yet on every
 * copy holder, else the error. */
static void vers_failed(struct vreq *v)
{
    if (v->rc == -EBUSY || v->rc == -EAGAIN) {
        http_resp_header_str(v->r, "Retry-After", "2");
        err_reply(v->r, S3E_SERVICE_UNAVAILABLE, "%s", v->rc == -EBUSY
                  ? "objects are moving between drives or targets: try again"
                  : "the change was made on the owner but not on every copy holder: try again");
    } else {
        http_reply_error(v->r, err_status(v->rc), "versions: %s", strerror(-v->rc));
    }
}

/* The bucket again (a request outlives the BMD snapshot it came with):
 * NULL and r answered when it went meanwhile. */
static const struct bmd_bucket *bucket_again(struct vreq *v, struct bmd **b)
{
    *b = bmd_current();
    const struct bmd_bucket *bk = *b ? bmd_find(*b, v->provider, v->bucket) : NULL;
    if (!bk) {
        bmd_unref(*b);
        *b = NULL;
        err_reply(v->r, S3E_NO_SUCH_BUCKET, "bucket '%s' not found", v->bucket);
    }
    return bk;
}

/* A read's version, opened on the I/O pool with the record found: its
 * file is that version's whatever commits come after (a version kept
 * keeps its file), so the bytes served are the version asked for. */
static int open_found(struct vreq *v, struct store_mp *mp)
{
    int fd = store_data_open_served(mp, v->vkey, v->vkl, v->m);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || (uint64_t)st.st_size != v->m->size)) {
        close(fd);
        return -EUCLEAN;
    }
    return fd;
}

/* A DELETE of a version: its record goes, unless the name's record was
 * written again since it was looked up (then it is looked up again). */
static int delete_found(struct vreq *v, struct store_mp *mp)
{
    struct store_x x = {.tomb = 1};
    return store_delete_x(&v->t->store, mp, v->vkey, v->vkl, v->m->uid, &x);
}

/* The latest version (the name's record) deleted, on every copy holder
 * too: the newest version kept becomes the name's record again, as S3
 * makes it current; and its id gets a tombstone here, which a rebalance
 * walk takes to any holder that kept it as a version all the same. A
 * delete that reached some holders only (503) makes none: the walk that
 * its failed send asked for brings them the delete, and reads take the
 * newest kept as the latest meanwhile. */
static void promote_work(void *arg)
{
    struct vreq *v = arg;
    struct store *st = &v->t->store;
    struct store_mp *mp = store_pick(st, v->mkey, v->klen);
    size_t kl;
    char *kk = store_version_key(v->mkey, v->klen, v->m, &kl);
    struct store_x tomb = {.tomb = 1};
    int rc = store_delete_x(st, mp, kk, kl, 0, &tomb);
    free(kk);
    if (rc && rc != -ENOENT)
        log_warn("versions of %s: the deleted version's tombstone: %s", v->name, strerror(-rc));
    v->pm = xmalloc(sizeof(*v->pm));
    rc = store_version_promote(st, mp, v->mkey, v->klen, v->pm);
    if (rc) {
        free(v->pm);
        v->pm = NULL;
    }
    if (rc && rc != -ENOENT && rc != -EEXIST)
        log_warn("versions of %s: the next newest not made the latest (read as the latest "
                 "all the same): %s", v->name, strerror(-rc));
}

static void find_work(void *arg)
{
    struct vreq *v = arg;
    struct store *st = &v->t->store;
    int moving = reb_write_placed(v->t, v->mkey, v->klen);
    if (!moving && (v->vid[0] || v->r->method == HTTP_M_DELETE) &&
        __atomic_load_n(&st->moving, __ATOMIC_ACQUIRE))
        moving = -EBUSY;         /* a resilver moves a name's versions one by one: one
                                  * not found may still be on another drive */
    if (moving && v->r->method == HTTP_M_DELETE) {
        v->rc = moving;          /* the version may be on its way here */
        return;
    }
    struct store_mp *mp = store_pick(st, v->mkey, v->klen);
    for (int tries = 0; tries < 3; tries++) {
        free(v->vkey);
        v->vkey = NULL;
        v->rc = store_version_find(st, mp, v->mkey, v->klen, v->vid[0] ? v->vid : NULL,
                                   &v->vkey, &v->vkl, v->m);
        if (v->rc)
            break;
        if (v->r->method == HTTP_M_DELETE) {
            v->rc = delete_found(v, mp);
        } else if (!store_is_marker(v->m)) {
            v->fd = open_found(v, mp);
            if (v->fd == -ENOENT && tries < 2)
                v->rc = -ESTALE; /* deleted or replaced meanwhile: look again */
            else if (v->fd == -ENOENT)
                v->fd = -EUCLEAN;   /* the same record found without its file */
            if (v->fd == -ENOENT)
                v->fd = -1;
            else
                v->rc = v->fd == -EUCLEAN || v->fd >= 0 ? 0 : v->fd;
        }
        if (v->rc != -ESTALE && v->rc != -ENOENT)
            break;
    }
    if (v->rc == -ENOENT && moving)
        v->rc = moving;          /* not here yet, maybe */
}

/* A GET or HEAD once the version is looked up. */
static void read_found(struct vreq *v, const struct bmd_bucket *bk)
{
    struct http_req *r = v->r;
    if (v->rc == -ENOENT && !v->vid[0]) {
        /* the name has no version here: the plain path (a neighbour may
         * hold the name while it moves) */
        char *mkey = v->mkey;
        v->mkey = NULL;
        neighbour_get(v->t, r, bk, 0, mkey, v->klen, v->name); /* takes mkey */
    } else if (v->rc == -ENOENT) {
        err_reply(r, S3E_NO_SUCH_VERSION, "The specified version does not exist.");
    } else if (v->rc) {
        vers_failed(v);
    } else if (store_is_marker(v->m)) {
        version_headers(r, v->m);
        if (v->vid[0]) {         /* the marker named: 405 with its Last-Modified, as S3 */
            char date[64];
            s3_http_date(v->m->mtime_ns, date, sizeof(date));
            http_resp_header_str(r, "Last-Modified", date);
            err_reply(r, S3E_METHOD_NOT_ALLOWED, "The specified method is not allowed against "
                                                 "this resource.");
        } else {
            err_reply(r, S3E_NO_SUCH_KEY, "The specified key does not exist.");
        }
    } else {
        if (!objmeta_umeta_get(v->m, OBJMETA_VID))
            http_resp_header_str(r, "x-amz-version-id", "null");
        int fd = v->fd;
        v->fd = -1;
        get_opened(v->t, r, v->vkey, v->vkl, NULL, get_verifies(bk), v->m, fd);
    }
}

/* A DELETE of one version, done: its tombstone goes to the copies, then
 * (the latest deleted) the next newest is made the latest here and sent
 * to them; in that order, since a spread sends what is here when it
 * runs, and a holder must not take the next newest while it still holds
 * the deleted one as its latest (it would keep that as a version). */
static void deleted_spread(void *arg, int failed);
static void promoted(void *arg);
static void promoted_spread(void *arg, int failed);

static void deleted(struct vreq *v)
{
    struct http_req *r = v->r;
    if (v->rc && v->rc != -ENOENT) {
        vers_failed(v);
        vreq_free(v);
        return;
    }
    http_resp_header_str(r, "x-amz-version-id", v->vid);
    if (v->rc) {                 /* none such: S3 deletes are idempotent */
        if (target_is_s3(r))
            http_reply(r, 204, NULL, NULL, 0);
        else
            http_reply_error(r, 404, "no version %s of this object", v->vid);
        vreq_free(v);
        return;
    }
    if (store_is_marker(v->m))
        http_resp_header_str(r, "x-amz-delete-marker", "true");
    if (place_spreads(v->vkey, v->vkl)) {
        struct xfer_loop lp = {r->w->base, r->w->q, target_hc(r)};
        mirror_spread(v->t, &lp, v->vkey, v->vkl, PLACE_ANY_SIZE, 1, deleted_spread, v);
        return;
    }
    deleted_spread(v, 0);
}

static void deleted_spread(void *arg, int failed)
{
    struct vreq *v = arg;
    if (failed) {                /* gone here, not yet on every holder: not acknowledged */
        v->rc = -EAGAIN;
        vers_failed(v);
    } else if (v->vkl == v->klen && v->state) {
        iopool_submit(v->t->io, v->r->w->q, promote_work, promoted, v);
        return;
    } else {
        http_reply(v->r, 204, NULL, NULL, 0);
    }
    vreq_free(v);
}

static void promoted(void *arg)
{
    struct vreq *v = arg;
    if (v->pm && place_spreads(v->mkey, v->klen)) {
        struct xfer_loop lp = {v->r->w->base, v->r->w->q, target_hc(v->r)};
        mirror_spread(v->t, &lp, v->mkey, v->klen, v->pm->size, 1, promoted_spread, v);
        return;
    }
    promoted_spread(v, 0);
}

/* The delete is on every holder; the next newest, made the latest, is
 * owed where it failed (a walk brings it), and reads find it meanwhile. */
static void promoted_spread(void *arg, int failed)
{
    struct vreq *v = arg;
    if (failed)
        log_warn("versions of %s: the version made the latest not yet on %d copy holders",
                 v->name, failed);
    http_reply(v->r, 204, NULL, NULL, 0);
    vreq_free(v);
}

static void find_done(void *arg)
{
    struct vreq *v = arg;
    if (v->r->method == HTTP_M_DELETE) {
        deleted(v);
        return;
    }
    struct bmd *b;
    const struct bmd_bucket *bk = bucket_again(v, &b);
    if (bk)
        read_found(v, bk);
    bmd_unref(b);
    vreq_free(v);
}

/* ---- DELETE without a version: a delete marker ----------------------------------- */

static void marker_work(void *arg)
{
    struct vreq *v = arg;
    struct store *st = &v->t->store;
    if ((v->rc = reb_write_placed(v->t, v->mkey, v->klen)))
        return;                  /* the latest may be on its way here: it must be kept */
    v->mp = store_place(st, v->mkey, v->klen);
    int fd = store_work_open(v->mp, &v->m->uid, v->work, sizeof(v->work));
    if (fd < 0) {
        v->rc = fd;
        return;
    }
    v->m->cksum = XXH3_64bits("", 0);
    v->m->nbs = 0;
    if ((v->rc = objmeta_umeta_add(v->m, OBJMETA_DELETE_MARKER, "true"))) {
        close(fd);
        unlink(v->work);
        return;
    }
    struct store_x x = {.vers = v->state};
    v->rc = store_commit_x(st, v->mp, v->mkey, v->klen, v->work, fd, v->m, &x);
}

static void marker_answer(struct vreq *v)
{
    struct http_req *r = v->r;
    if (v->rc) {
        vers_failed(v);
    } else {
        version_headers(r, v->m);
        http_reply(r, 204, NULL, NULL, 0);
    }
    vreq_free(v);
}

static void marker_spread(void *arg, int failed)
{
    struct vreq *v = arg;
    if (failed)                  /* written here, owed there: not acknowledged */
        v->rc = -EAGAIN;
    marker_answer(v);
}

static void marker_done(void *arg)
{
    struct vreq *v = arg;
    if (!v->rc && place_spreads(v->mkey, v->klen)) {
        struct xfer_loop lp = {v->r->w->base, v->r->w->q, target_hc(v->r)};
        mirror_spread(v->t, &lp, v->mkey, v->klen, 0, 1, marker_spread, v);
        return;
    }
    marker_answer(v);
}

/* ---- the gate -------------------------------------------------------------------- */

/* Is the latest version of a name that has a record its own? 1 when the
 * plain path may serve it (*null: it is the null version, written before
 * versioning, whose record names no id), 0 when versioning must (a delete
 * marker, or no record: a version kept may be the latest). */
static int latest_plain(struct target *t, const char *mkey, size_t klen, int *null)
{
    struct objmeta *m = xmalloc(sizeof(*m));
    int plain = store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen, m) == 0 &&
                !store_is_marker(m);
    *null = plain && !objmeta_umeta_get(m, OBJMETA_VID);
    free(m);
    return plain;
}

int vers_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                const char *name, char *mkey, size_t klen)
{
    char vid[VID_ARG_MAX], flag[4];
    int n = http_query_get(r, "versionId", vid, sizeof(vid));
    int state = vers_state(bk);
    int read = r->method == HTTP_M_GET || r->method == HTTP_M_HEAD;
    const struct s3sub *sub = s3sub_find(r);
    int null = 0;
    if (n == -1 && state && sub && (sub->id == S3SUB_TAGGING || sub->id == S3SUB_ACL) &&
        !latest_plain(t, mkey, klen, &null)) {
        free(mkey);              /* a deleted name's tags and ACL: none (not the marker's) */
        err_reply(r, S3E_NO_SUCH_KEY, "The specified key does not exist.");
        return 1;
    }
    if (n == -1 && (!state || sub || http_query_get(r, "evict", flag, sizeof(flag)) >= 0 ||
                    (!read && r->method != HTTP_M_DELETE)))
        return 0;
    if (n == -1 && read && latest_plain(t, mkey, klen, &null)) {
        if (null && target_is_s3(r))     /* S3 names the null version in a versioned bucket */
            http_resp_header_str(r, "x-amz-version-id", "null");
        return 0;
    }
    if (n != -1 && (n < 0 || !store_vid_valid(vid))) {
        free(mkey);
        err_reply(r, S3E_INVALID_ARGUMENT, "Invalid version id specified");
        return 1;
    }
    if (sub && (sub->id == S3SUB_ATTRIBUTES || sub->id == S3SUB_ACL ||
                sub->id == S3SUB_TAGGING))
        return 0;                /* attrs.c and subres.c read the version themselves */
    if (n != -1 && (sub || (!read && r->method != HTTP_M_DELETE))) {
        free(mkey);
        err_reply(r, S3E_NOT_IMPLEMENTED, "versionId with %s%s: not implemented",
                  r->method_name, sub ? " and a subresource" : "");
        return 1;
    }
    struct vreq *v = xcalloc(1, sizeof(*v));
    v->t = t;
    v->r = r;
    snprintf(v->provider, sizeof(v->provider), "%s", bk->provider);
    snprintf(v->bucket, sizeof(v->bucket), "%s", bk->name);
    v->name = xstrdup(name);
    v->mkey = mkey;
    v->klen = klen;
    v->state = state;
    v->m = xcalloc(1, sizeof(*v->m));
    v->fd = -1;
    if (n != -1)
        snprintf(v->vid, sizeof(v->vid), "%s", vid);
    http_req_ref(r);
    if (n == -1 && r->method == HTTP_M_DELETE)
        iopool_submit(t->io, r->w->q, marker_work, marker_done, v);
    else
        iopool_submit(t->io, r->w->q, find_work, find_done, v);
    return 1;
}
