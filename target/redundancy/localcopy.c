/*
 * localcopy: copies on the owner's other mountpaths (see localcopy.h).
 */
#include "localcopy.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmap.h"
#include "iopool.h"
#include "log.h"
#include "mirror.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"
#include "xxh.h"

#define CHUNK (1u << 20)

/* A copy's key: 'c' and the object's whole key, so that its side keys
 * (store_side_key: tombstone, write-back, last read) are not the object's.
 * A new string of *cl bytes. */
static char *ckey_of(const char *mkey, size_t klen, size_t *cl)
{
    char *k = xmalloc(klen + 2);
    k[0] = 'c';
    memcpy(k + 1, mkey, klen);
    k[klen + 1] = '\0';
    *cl = klen + 1;
    return k;
}

/* Can what mp holds be read (not failed, not gone)? */
static int usable(struct store_mp *mp)
{
    return !__atomic_load_n(&mp->gone, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&mp->failed, __ATOMIC_RELAXED);
}

/* May a new copy go to mp (readable, and not being emptied)? */
static int placeable(struct store_mp *mp)
{
    return usable(mp) && __atomic_load_n(&mp->enabled, __ATOMIC_RELAXED);
}

/* Is copy c of ck on mp whole (its file there, of its size)? */
static int whole(struct store_mp *mp, const char *ck, size_t kl, const struct objmeta *c)
{
    int fd = store_data_open(mp, ck, kl, c);
    struct stat sb;
    int ok = fd >= 0 && !fstat(fd, &sb) && (uint64_t)sb.st_size == c->size;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Copy n bytes of in into out, checking them against sum: 0 or -errno
 * (-EBADMSG: they do not match). */
static int copy_checked(int in, int out, uint64_t n, uint64_t sum)
{
    char *buf = xmalloc(CHUNK);
    XXH3_state_t *xs = XXH3_createState();
    XXH3_64bits_reset(xs);
    int rc = 0;
    uint64_t got = 0;
    while (rc == 0 && got < n) {
        ssize_t r = read(in, buf, CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : -EBADMSG;
            break;
        }
        XXH3_64bits_update(xs, buf, (size_t)r);
        got += (uint64_t)r;
        for (ssize_t w = 0, k; rc == 0 && w < r; w += k)
            if ((k = write(out, buf + w, (size_t)(r - w))) < 0)
                rc = errno == EINTR ? (k = 0) : -errno;
    }
    if (rc == 0 && XXH3_64bits_digest(xs) != sum)
        rc = -EBADMSG;
    XXH3_freeState(xs);
    free(buf);
    return rc;
}

/* The record m of key from file in (at src) committed as key on dst with
 * m's version: 0 or -errno (-EALREADY: as new there already). */
static int put_copy(struct store *st, struct store_mp *dst, const char *key, size_t kl, int in,
                    const struct objmeta *m)
{
    char work[PATH_MAX];
    struct objmeta c = *m;
    int out = store_work_open(dst, &c.uid, work, sizeof(work));
    if (out < 0)
        return out;
    int rc = copy_checked(in, out, m->size, m->cksum);
    if (rc) {
        close(out);
        unlink(work);
        return rc;
    }
    struct store_x x = {.keep_version = m->version};
    return store_commit_x(st, dst, key, kl, work, out, &c, &x);
}

/* A sync or a restore of one object's local copies. */
struct op {
    struct target *t;
    char *mkey;
    size_t klen;
    int want, failed;            /* a sync's */
    int rc;                      /* a restore's, */
    uint64_t since;              /* and the oldest version it may bring back */
    void (*done)(void *arg, int n);
    void *arg;
};

static struct op *op_start(struct target *t, const struct xfer_loop *lp, const char *mkey,
                           size_t klen, int want, void (*done)(void *arg, int n), void *arg)
{
    (void)lp;
    struct op *y = xcalloc(1, sizeof(*y));
    y->t = t;
    y->mkey = xfer_key_dup(mkey, klen);
    y->klen = klen;
    y->want = want;
    y->done = done;
    y->arg = arg;
    return y;
}

static void op_end(struct op *y, int n)
{
    y->done(y->arg, n);
    free(y->mkey);
    free(y);
}

/* One of the copies on mp: made from the object (m, at src) unless one as
 * new is there whole. 0, or -errno (-EBADMSG: the object's own bytes are
 * wrong: nothing is replaced by them). */
static int make_copy(struct store *st, struct store_mp *src, struct store_mp *mp,
                     const char *mkey, size_t klen, const char *ck, size_t cl,
                     const struct objmeta *m)
{
    struct objmeta c;
    if (store_get(st, mp, ck, cl, &c) == 0) {
        if (c.version > m->version || (c.version == m->version && whole(mp, ck, cl, &c)))
            return 0;
        if (c.version == m->version)   /* that version with its file gone: made again */
            store_delete_if(st, mp, ck, cl, c.uid);
    }
    int in = store_data_open(src, mkey, klen, m);
    if (in == -ENOENT)
        return 0;                /* replaced meanwhile: the next spread makes that one */
    int rc = in < 0 ? in : put_copy(st, mp, ck, cl, in, m);   /* older ones replaced */
    if (in >= 0)
        close(in);
    return rc == -EALREADY ? 0 : rc;
}

static void sync_work(void *arg)
{
    struct op *y = arg;
    struct store *st = &y->t->store;
    size_t cl;
    char *ck = ckey_of(y->mkey, y->klen, &cl);
    struct store_mp *src = store_pick(st, y->mkey, y->klen);
    struct objmeta m, c;
    uint64_t gone = 0;           /* deleted here: copies as old as its tombstone go */
    int grc = store_get(st, src, y->mkey, y->klen, &m);
    if (grc == -ENOENT)
        store_tomb_get(st, src, y->mkey, y->klen, &gone);
    int n = __atomic_load_n(&st->n, __ATOMIC_ACQUIRE), si = (int)(src - st->mp), made = 0;
    int room = 0, bad = 0;       /* drives a copy may go to; the object's bytes are wrong */
    for (int i = 1; i < n; i++)
        room += placeable(&st->mp[(si + i) % n]);
    for (int i = 0; i < n && (grc == 0 || grc == -ENOENT); i++) {   /* else: cannot tell */
        struct store_mp *mp = &st->mp[(si + i) % n];
        if (grc == 0 && i > 0 && made < y->want && !bad && placeable(mp)) {   /* a copy */
            int rc = make_copy(st, src, mp, y->mkey, y->klen, ck, cl, &m);
            made += rc == 0;     /* (a drive that failed: the next one) */
            bad = rc == -EBADMSG;   /* its repair comes first */
            continue;
        }
        if (!usable(mp) || store_get(st, mp, ck, cl, &c))
            continue;
        /* not wanted (any more): only what is as old as what this sync is about */
        if ((grc == 0 && y->want >= 0 && c.version <= m.version) ||
            (grc == -ENOENT && gone && c.version <= gone))
            store_delete_if(st, mp, ck, cl, c.uid);
    }
    int could = y->want < room ? y->want : room;
    y->failed = grc && grc != -ENOENT ? 1 : grc == 0 && made < could ? could - made : 0;
    free(ck);
}

static void synced(void *arg)
{
    struct op *y = arg;
    if (y->failed)
        log_warn("%d copies on other mountpaths could not be made", y->failed);
    op_end(y, y->failed);
}

void localcopy_sync(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                    int want, void (*done)(void *arg, int failed), void *arg)
{
    struct op *y = op_start(t, lp, mkey, klen, want, done, arg);
    iopool_submit_first(t->io, lp->q, sync_work, synced, y);
}

static void restore_work(void *arg)
{
    struct op *r = arg;
    struct store *st = &r->t->store;
    size_t cl;
    char *ck = ckey_of(r->mkey, r->klen, &cl);
    int n = __atomic_load_n(&st->n, __ATOMIC_ACQUIRE);
    r->rc = -ENOENT;
    for (int tries = 0; tries < n && r->rc == -ENOENT; tries++) {   /* the newest, then on */
        struct store_mp *best = NULL;
        struct objmeta c, bc;
        for (int i = 0; i < n; i++)
            if (usable(&st->mp[i]) && store_get(st, &st->mp[i], ck, cl, &c) == 0 &&
                c.version >= r->since && (!best || c.version > bc.version))
                best = &st->mp[i], bc = c;
        if (!best)
            break;
        int in = store_data_open(best, ck, cl, &bc);
        r->rc = in < 0 ? in : put_copy(st, store_place(st, r->mkey, r->klen), r->mkey, r->klen,
                                       in, &bc);
        if (in >= 0)
            close(in);
        if (r->rc == -EALREADY)
            r->rc = 0;           /* as new here meanwhile */
        if (r->rc == -EBADMSG || (in < 0 && r->rc == -ENOENT)) {   /* that copy is bad */
            log_warn("a copy on %s is damaged: dropped", best->dir);
            store_delete_if(st, best, ck, cl, bc.uid);
            r->rc = -ENOENT;     /* the next one */
        }
    }
    free(ck);
}

static void restored(void *arg)
{
    struct op *r = arg;
    op_end(r, r->rc);
}

void localcopy_restore(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                       uint64_t since, void (*done)(void *arg, int rc), void *arg)
{
    struct op *r = op_start(t, lp, mkey, klen, 0, done, arg);
    r->since = since;
    iopool_submit_first(t->io, lp->q, restore_work, restored, r);
}

void localcopy_drop(struct store *st, const char *mkey, size_t klen)
{
    size_t cl;
    char *ck = ckey_of(mkey, klen, &cl);
    int n = __atomic_load_n(&st->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        struct objmeta c;
        if (usable(&st->mp[i]) && store_get(st, &st->mp[i], ck, cl, &c) == 0)
            store_delete_if(st, &st->mp[i], ck, cl, c.uid);
    }
    free(ck);
}
