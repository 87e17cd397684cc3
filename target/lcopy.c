/*
 * lcopy: copies on the owner's other mountpaths (see lcopy.h).
 */
#include "lcopy.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "cmap.h"
#include "iopool.h"
#include "log.h"
#include "mirror.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

#define CHUNK (1u << 20)

int lcopy_want(const struct target *t, const struct cmap *m, const char *mkey, size_t klen,
               uint64_t size)
{
    int copies = mirror_copies(mkey, klen, size == MIRROR_ANY_SIZE ? 0 : size);
    const struct cmap_node *h[CMAP_COPIES_MAX];
    int n = copies > 1 ? mirror_holders(m, mkey, klen, copies, h) : 0;
    if (size == MIRROR_ANY_SIZE || n == 0 || n >= copies || strcmp(h[0]->id, t->node.id))
        return 0;
    int others = __atomic_load_n(&t->store.n, __ATOMIC_ACQUIRE) - 1;
    return copies - n < others ? copies - n : others;
}

/* Is mountpath mp one that holds objects (not failed, not gone)? */
static int usable(struct store_mp *mp)
{
    return !__atomic_load_n(&mp->gone, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&mp->failed, __ATOMIC_RELAXED);
}

/* Is copy c of ck on mp whole (its file there, of its size)? */
static int whole(struct store_mp *mp, const char *ck, size_t kl, const struct ometa *c)
{
    int fd = store_data_open(mp, ck, kl, c->uid);
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
                    const struct ometa *m)
{
    char work[PATH_MAX];
    struct ometa c = *m;
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
    int rc;                      /* a restore's */
    void (*done)(void *arg, int n);
    void *arg;
};

static void op_start(struct target *t, const struct xfer_loop *lp, const char *mkey,
                     size_t klen, int want, void (*work)(void *), void (*in)(void *),
                     void (*done)(void *arg, int n), void *arg)
{
    struct op *y = xcalloc(1, sizeof(*y));
    y->t = t;
    y->mkey = xfer_key_dup(mkey, klen);
    y->klen = klen;
    y->want = want;
    y->done = done;
    y->arg = arg;
    iopool_submit_first(t->io, lp->q, work, in, y);
}

static void op_end(struct op *y, int n)
{
    y->done(y->arg, n);
    free(y->mkey);
    free(y);
}

static void sync_work(void *arg)
{
    struct op *y = arg;
    struct store *st = &y->t->store;
    char *ck = store_side_key('c', y->mkey, y->klen);
    struct store_mp *src = store_pick(st, y->mkey, y->klen);
    struct ometa m, c;
    int have = store_get(st, src, y->mkey, y->klen, &m) == 0, n = __atomic_load_n(&st->n,
                                                                                 __ATOMIC_ACQUIRE);
    int si = (int)(src - st->mp), made = 0;
    for (int i = 1; i < n; i++) {
        struct store_mp *mp = &st->mp[(si + i) % n];
        int held = usable(mp) && store_get(st, mp, ck, y->klen, &c) == 0;
        if (have && made < y->want && usable(mp)) {   /* one of the copies */
            made++;
            if (held && c.version > m.version)
                continue;
            if (held && c.version == m.version && whole(mp, ck, y->klen, &c))
                continue;
            if (held)            /* the same version with its file gone: made again */
                store_delete_if(st, mp, ck, y->klen, c.uid);
            int in = store_data_open(src, y->mkey, y->klen, m.uid);
            int rc = in < 0 ? in : put_copy(st, mp, ck, y->klen, in, &m);
            if (in >= 0)
                close(in);
            y->failed += rc && rc != -EALREADY;
        } else if (held) {       /* not wanted (any more) */
            store_delete_if(st, mp, ck, y->klen, c.uid);
        }
    }
    free(ck);
}

static void synced(void *arg)
{
    struct op *y = arg;
    if (y->failed)
        log_warn("%d copies on other mountpaths could not be made", y->failed);
    op_end(y, y->failed);
}

void lcopy_sync(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                int want, void (*done)(void *arg, int failed), void *arg)
{
    op_start(t, lp, mkey, klen, want, sync_work, synced, done, arg);
}

static void restore_work(void *arg)
{
    struct op *r = arg;
    struct store *st = &r->t->store;
    char *ck = store_side_key('c', r->mkey, r->klen);
    int n = __atomic_load_n(&st->n, __ATOMIC_ACQUIRE);
    r->rc = -ENOENT;
    for (int tries = 0; tries < n && r->rc; tries++) {   /* the newest first, then the next */
        struct store_mp *best = NULL;
        struct ometa c, bc;
        for (int i = 0; i < n; i++)
            if (usable(&st->mp[i]) && store_get(st, &st->mp[i], ck, r->klen, &c) == 0 &&
                (!best || c.version > bc.version))
                best = &st->mp[i], bc = c;
        if (!best)
            break;
        int in = store_data_open(best, ck, r->klen, bc.uid);
        r->rc = in < 0 ? in : put_copy(st, store_place(st, r->mkey, r->klen), r->mkey, r->klen,
                                       in, &bc);
        if (in >= 0)
            close(in);
        if (r->rc == -EALREADY)
            r->rc = 0;           /* as new here meanwhile */
        if (r->rc) {             /* a bad copy goes: the next is tried */
            log_warn("a copy on %s could not be restored: %s", best->dir, strerror(-r->rc));
            store_delete_if(st, best, ck, r->klen, bc.uid);
        }
    }
    free(ck);
}

static void restored(void *arg)
{
    struct op *r = arg;
    op_end(r, r->rc);
}

void lcopy_restore(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                   void (*done)(void *arg, int rc), void *arg)
{
    op_start(t, lp, mkey, klen, 0, restore_work, restored, done, arg);
}

void lcopy_drop(struct store *st, const char *mkey, size_t klen)
{
    char *ck = store_side_key('c', mkey, klen);
    int n = __atomic_load_n(&st->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        struct ometa c;
        if (usable(&st->mp[i]) && store_get(st, &st->mp[i], ck, klen, &c) == 0)
            store_delete_if(st, &st->mp[i], ck, klen, c.uid);
    }
    free(ck);
}
