/*
 * ecode: slicing objects of erasure-coded buckets, and rebuilding them
 * from their slices (see ecode.h).
 */
#include "ecode.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bmd.h"
#include "cmap.h"
#include "ec.h"
#include "ecstream.h"
#include "nodeclient.h"
#include "iopool.h"
#include "log.h"
#include "mirror.h"
#include "place.h"
#include "reb.h"
#include "slice.h"
#include "store.h"
#include "target.h"
#include "targetmetrics.h"
#include "util.h"
#include "xfer.h"
#include "xxh.h"

#define CHUNK (1u << 20)         /* bytes of each slice coded at a time */


/* ---- slicing ------------------------------------------------------------------------- */

struct spread {
    struct target *t;
    struct xfer_loop lp;
    char *mkey;
    size_t klen;
    char *shown;                 /* for the log */
    struct bmd_ec ec;
    struct objmeta m;            /* the object's, as sliced */
    struct ecstream_out coded;   /* parity coded as the PUT arrived, d 0: none */
    uint64_t len;                /* of a slice */
    int fds[SLICE_MAX];          /* each slice's bytes, from offs */
    uint64_t offs[SLICE_MAX], sums[SLICE_MAX];
    int rc;
    int pending, failed;
    ecode_done_fn done;
    void *arg;
};

/* The parity into p work files, reopened for reading (and unlinked: they
 * go with their last descriptor); the checksums of every slice. */
static int encode(struct spread *s, int fd)
{
    int d = s->ec.d, p = s->ec.p, rc = 0;
    struct ec_code code;
    if (ec_code_init(&code, d, p))
        return -EINVAL;
    struct store_mp *mp = store_place(&s->t->store, s->mkey, s->klen);
    int pfd[EC_PARITY_MAX];
    char path[EC_PARITY_MAX][4096];
    uint8_t *buf[SLICE_MAX];
    XXH3_state_t *xs[SLICE_MAX];
    for (int i = 0; i < d + p; i++) {
        buf[i] = xmalloc(CHUNK);
        xs[i] = XXH3_createState();
        XXH3_64bits_reset(xs[i]);
    }
    int made = 0;
    while (made < p) {
        uint64_t uid;
        int f = store_work_open(mp, &uid, path[made], sizeof(path[made]));
        if (f < 0) {
            rc = f;
            break;
        }
        pfd[made++] = f;
    }
    for (uint64_t off = 0; rc == 0 && off < s->len; off += CHUNK) {
        size_t n = s->len - off < CHUNK ? (size_t)(s->len - off) : CHUNK;
        for (int i = 0; i < d && rc == 0; i++) {
            uint64_t have = ec_data_len(s->m.size, s->len, i);
            size_t avail = off >= have ? 0 : have - off < n ? (size_t)(have - off) : n;
            rc = pread_full(fd, (char *)buf[i], avail, (uint64_t)i * s->len + off);
            memset(buf[i] + avail, 0, n - avail);
            XXH3_64bits_update(xs[i], buf[i], avail);
        }
        if (rc == 0 && ec_encode(&code, n, (const uint8_t *const *)buf, buf + d))
            rc = -EINVAL;
        for (int j = 0; j < p && rc == 0; j++) {
            rc = pwrite_full(pfd[j], (char *)buf[d + j], n, off);
            XXH3_64bits_update(xs[d + j], buf[d + j], n);
        }
    }
    for (int i = 0; i < d + p; i++) {
        s->sums[i] = XXH3_64bits_digest(xs[i]);
        XXH3_freeState(xs[i]);
        free(buf[i]);
    }
    for (int j = 0; j < made; j++) {
        if (rc == 0) {
            s->fds[d + j] = open(path[j], O_RDONLY | O_CLOEXEC);
            rc = s->fds[d + j] < 0 ? -errno : 0;
        }
        close(pfd[j]);
        unlink(path[j]);
    }
    ec_code_free(&code);
    return rc;
}

static void encode_work(void *arg)
{
    struct spread *s = arg;
    struct store *st = &s->t->store;
    struct store_mp *mp = store_pick(st, s->mkey, s->klen);
    for (int i = 0; i < SLICE_MAX; i++)
        s->fds[i] = -1;
    if (s->rc || (s->rc = store_get(st, mp, s->mkey, s->klen, &s->m)))
        return;                  /* gone, or replaced: its own PUT slices it */
    if (s->m.flags & OBJMETA_F_DAMAGED) {
        s->rc = -EBADMSG;        /* never coded from a copy marked damaged */
        return;
    }
    int fd = store_data_open(mp, s->mkey, s->klen, &s->m);
    if (fd < 0) {
        s->rc = fd;
        return;
    }
    struct ecstream_out *c = &s->coded;
    int on_arrival = c->d && c->uid == s->m.uid && c->d == s->ec.d && c->p == s->ec.p;
    targetmetrics_add(on_arrival ? TM_SLICED_ARRIVAL : TM_SLICED_FILE, 1);
    if (on_arrival) {
        s->len = c->len;         /* coded as it arrived */
        memcpy(s->sums, c->sums, sizeof(c->sums));
        for (int j = 0; j < c->p; j++)
            s->fds[c->d + j] = c->pfd[j];
        c->d = 0;                /* handed to fds */
    } else {
        ecstream_out_close(c);   /* of another version or code, if any */
        s->len = ec_slice_len(s->m.size, s->ec.d);
        s->rc = encode(s, fd);
    }
    for (int i = 0; i < s->ec.d && s->rc == 0; i++) {   /* data slices: the object's bytes */
        s->fds[i] = store_data_open(mp, s->mkey, s->klen, &s->m);
        s->offs[i] = (uint64_t)i * s->len;
        if (s->fds[i] < 0)
            s->rc = s->fds[i];
    }
    close(fd);
    if (s->rc)
        for (int i = 0; i < SLICE_MAX; i++)
            if (s->fds[i] >= 0)
                close(s->fds[i]);
}

static void spread_sent(void *arg, int rc)
{
    struct spread *s = arg;
    s->failed += rc != 0;
    if (--s->pending)
        return;
    if (s->failed)
        reb_stray(s->t);         /* owed: the walk sends them again */
    s->done(s->arg, s->failed);
    ecstream_out_close(&s->coded);
    free(s->mkey);
    free(s->shown);
    free(s);
}

static void encoded(void *arg)
{
    struct spread *s = arg;
    int n = s->ec.d + s->ec.p;
    s->pending = 1;
    if (s->rc) {
        if (s->rc != -ENOENT)
            log_warn("cannot slice %s: %s", s->shown, strerror(-s->rc));
        s->failed = s->rc == -ENOENT ? 0 : n;
        spread_sent(s, 0);
        return;
    }
    const struct cmap_node *h[CMAP_COPIES_MAX + SLICE_MAX];
    struct cmap *m = cmap_current();
    int k = place_holders(m, s->mkey, s->klen, 1 + n, h);
    for (int i = 0; i < n; i++) {
        if (1 + i >= k) {        /* fewer targets than slices: made once there are */
            close(s->fds[i]);
            continue;
        }
        struct objmeta rec = s->m;
        rec.ec.d = (uint8_t)s->ec.d;
        rec.ec.p = (uint8_t)s->ec.p;
        rec.ec.idx = (uint8_t)i;
        rec.ec.len = s->m.size;
        rec.ec.cksum = s->m.cksum;
        rec.size = i < s->ec.d ? ec_data_len(s->m.size, s->len, i) : s->len;
        rec.cksum = s->sums[i];
        rec.nbs = 0;             /* the object's sums are not the slice's */
        s->pending++;
        slice_send(s->t, &s->lp, h[1 + i]->url, s->mkey, s->klen, &rec, s->fds[i], s->offs[i],
                   spread_sent, s);
    }
    cmap_unref(m);
    spread_sent(s, 0);
}

struct ecstream *ecode_stream(struct store_mp *mp, int fd, uint64_t uid, const char *mkey,
                              size_t klen, uint64_t size)
{
    struct bmd_ec ec;
    if (!place_ec(mkey, klen, &ec) || size < ec.limit)
        return NULL;
    int pfd[EC_PARITY_MAX], made = 0;
    while (made < ec.p) {
        uint64_t puid;
        char path[4096];
        int f = store_work_open(mp, &puid, path, sizeof(path));
        if (f < 0)
            break;
        unlink(path);            /* goes with its last descriptor */
        pfd[made++] = f;
    }
    struct ecstream *e = made == ec.p ? ecstream_new(fd, uid, ec.d, ec.p, size, pfd) : NULL;
    if (!e)
        while (made > 0)
            close(pfd[--made]);
    return e;
}

void ecode_spread(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                  struct ecstream_out *coded, ecode_done_fn done, void *arg)
{
    struct spread *s = xcalloc(1, sizeof(*s));
    if (coded) {
        s->coded = *coded;
        coded->d = 0;            /* taken */
    }
    s->t = t;
    s->lp = *lp;
    s->mkey = xfer_key_dup(mkey, klen);
    s->klen = klen;
    s->shown = xfer_key_show(mkey, klen);
    s->done = done;
    s->arg = arg;
    if (!place_ec(mkey, klen, &s->ec))
        s->rc = -ENOENT;         /* no longer erasure coded: nothing to slice */
    iopool_submit(t->io, lp->q, encode_work, encoded, s);   /* never done before this returns */
}

/* ---- making sure the slices are there --------------------------------------------------- */

struct ensure {
    struct target *t;
    struct xfer_loop lp;
    char *mkey;
    size_t klen;
    struct bmd_ec ec;
    struct objmeta m;
    int rc, pending, missing;
    ecode_done_fn done;
    void *arg;
};

static void ensure_end(struct ensure *e)
{
    if (e->missing)              /* sliced again: every holder gets its slice */
        ecode_spread(e->t, &e->lp, e->mkey, e->klen, NULL, e->done, e->arg);
    else
        e->done(e->arg, 0);
    free(e->mkey);
    free(e);
}

static void held_in(void *arg, int held)
{
    struct ensure *e = arg;
    e->missing += !held;
    if (--e->pending == 0)
        ensure_end(e);
}

static void record_work(void *arg)
{
    struct ensure *e = arg;
    struct store *st = &e->t->store;
    e->rc = !e->ec.d ? -ENOENT
                     : store_get(st, store_pick(st, e->mkey, e->klen), e->mkey, e->klen, &e->m);
}

static void record_in(void *arg)
{
    struct ensure *e = arg;
    int n = e->ec.d + e->ec.p;
    e->pending = 1;
    if (e->rc == 0) {
        const struct cmap_node *h[CMAP_COPIES_MAX];
        struct cmap *m = cmap_current();
        int k = place_holders(m, e->mkey, e->klen, 1 + n, h);
        for (int i = 0; i + 1 < k && i < n; i++) {
            e->pending++;
            slice_ask_held(e->t, &e->lp, h[1 + i]->url, e->mkey, e->klen, i, e->m.version,
                           e->ec.d, e->ec.p, held_in, e);
        }
        cmap_unref(m);
    }
    if (--e->pending == 0)
        ensure_end(e);
}

void ecode_ensure(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                  ecode_done_fn done, void *arg)
{
    struct ensure *e = xcalloc(1, sizeof(*e));
    e->t = t;
    e->lp = *lp;
    e->mkey = xfer_key_dup(mkey, klen);
    e->klen = klen;
    e->done = done;
    e->arg = arg;
    place_ec(mkey, klen, &e->ec);   /* d 0: no longer erasure coded, nothing to make */
    iopool_submit(t->io, lp->q, record_work, record_in, e);
}

/* ---- the walk ------------------------------------------------------------------------ */

struct walk {
    struct target *t;
    struct xfer_loop lp;
    char *skey, *mkey;
    size_t sklen, klen;
    int idx;
    struct objmeta m;            /* the slice's */
    int have_slice, have_whole, fd;
    int rc;
    ecode_built_fn done;
    void *arg;
};

static void walk_end(struct walk *w, int rc)
{
    if (w->fd >= 0)
        close(w->fd);
    w->done(w->arg, rc);
    free(w->skey);
    free(w->mkey);
    free(w);
}

static void look_work(void *arg)
{
    struct walk *w = arg;
    struct store *st = &w->t->store;
    struct store_mp *mp = store_pick(st, w->skey, w->sklen);
    struct objmeta whole;
    if (!w->klen)
        return;                  /* not a slice's key */
    w->have_slice = store_get(st, mp, w->skey, w->sklen, &w->m) == 0;
    w->have_whole = store_get(st, store_pick(st, w->mkey, w->klen), w->mkey, w->klen,
                              &whole) == 0 && whole.version >= w->m.version;
    w->fd = w->have_slice ? store_data_open(mp, w->skey, w->sklen, &w->m) : -1;
}

static void drop_work(void *arg)
{
    struct walk *w = arg;
    struct store *st = &w->t->store;
    w->rc = store_delete_if(st, store_pick(st, w->skey, w->sklen), w->skey, w->sklen,
                            w->m.uid);
    if (w->rc == -ESTALE || w->rc == -ENOENT)
        w->rc = 0;               /* a newer one came meanwhile, or it went */
}

static void dropped(void *arg)
{
    struct walk *w = arg;
    walk_end(w, w->rc);
}

static void moved(void *arg, int rc)
{
    struct walk *w = arg;
    w->fd = -1;                  /* the send closed it */
    if (rc)
        walk_end(w, rc);
    else
        iopool_submit(w->t->io, w->lp.q, drop_work, dropped, w);
}

static void respread(void *arg, int failed)
{
    struct walk *w = arg;
    if (failed) {
        walk_end(w, -EIO);
        return;
    }
    iopool_submit(w->t->io, w->lp.q, drop_work, dropped, w);   /* its slices are placed anew */
}

static void rebuilt(void *arg, int rc)
{
    struct walk *w = arg;
    if (rc) {
        walk_end(w, rc);
        return;
    }
    ecode_spread(w->t, &w->lp, w->mkey, w->klen, NULL, respread, w);
}

/* Where the slice goes under the current map (its owner: owner_url NULL
 * when that is this target). */
static void place(struct walk *w)
{
    const struct cmap_node *h[CMAP_COPIES_MAX + SLICE_MAX];
    struct cmap *m = cmap_current();
    int k = place_holders(m, w->mkey, w->klen, 1 + w->m.ec.d + w->m.ec.p, h);
    const struct cmap_node *to = 1 + w->idx < k ? h[1 + w->idx] : NULL;
    int owner = k > 0 && !strcmp(h[0]->id, w->t->node.id);
    char *url = to && strcmp(to->id, w->t->node.id) ? xstrdup(to->url) : NULL;
    cmap_unref(m);
    if (owner && !w->have_whole) {   /* the owner was lost: whole here again, sliced anew */
        free(url);
        ecode_rebuild(w->t, &w->lp, w->mkey, w->klen, rebuilt, w);
    } else if (url) {            /* its holder is another target now */
        int fd = w->fd;
        w->fd = -1;
        slice_send(w->t, &w->lp, url, w->mkey, w->klen, &w->m, fd, 0, moved, w);
        free(url);
    } else {
        walk_end(w, 0);          /* in place, or nowhere to go yet */
    }
}

/* The owner's answer: does it hold a newer version (or delete) of the name? */
static void superseded(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct walk *w = arg;
    (void)err;
    json_t *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    int newer = json_is_true(json_object_get(j, "held"));
    json_decref(j);
    if (newer)                   /* a slice of an old version: an orphan */
        iopool_submit(w->t->io, w->lp.q, drop_work, dropped, w);
    else if (status != 200)
        walk_end(w, -EIO);       /* the owner could not say: kept, tried again */
    else
        place(w);
}

static void looked(void *arg)
{
    struct walk *w = arg;
    if (!w->have_slice || w->fd < 0) {
        walk_end(w, 0);
        return;
    }
    const struct cmap_node *h[1];
    struct cmap *m = cmap_current();
    int k = place_holders(m, w->mkey, w->klen, 1, h);
    char *owner = k && strcmp(h[0]->id, w->t->node.id) ? xstrdup(h[0]->url) : NULL;
    cmap_unref(m);
    if (!owner) {
        place(w);
        return;
    }
    /* is a newer version, or a delete, on the owner? (for a slice of a code
     * the bucket no longer uses, past the slices of the new one: is this
     * version there, then sliced anew by its owner's walk?) */
    struct bmd_ec now;
    int gone_code = place_ec(w->mkey, w->klen, &now) &&
                    (now.d != w->m.ec.d || now.p != w->m.ec.p) && w->idx >= now.d + now.p;
    char q[48];
    snprintf(q, sizeof(q), "held=%llu", (unsigned long long)(w->m.version + !gone_code));
    char *url = xfer_url(w->t, "GET", owner, w->mkey, w->klen, q);
    nodeclient_request(w->lp.hc, "GET", url, NULL, 0, NULL, 30000, superseded, w);
    free(url);
    free(owner);
}

void ecode_walk_slice(struct target *t, const struct xfer_loop *lp, const char *skey,
                      size_t sklen, ecode_built_fn done, void *arg)
{
    struct walk *w = xcalloc(1, sizeof(*w));
    w->t = t;
    w->lp = *lp;
    w->done = done;
    w->arg = arg;
    w->fd = -1;
    w->mkey = slice_obj_key(skey, sklen, &w->klen, &w->idx);
    if (!w->mkey)                /* not a slice key: look_work finds nothing */
        w->mkey = xstrdup("");
    w->skey = xmalloc(sklen + 1);
    memcpy(w->skey, skey, sklen);
    w->skey[sklen] = '\0';
    w->sklen = sklen;
    iopool_submit(t->io, lp->q, look_work, looked, w);
}
