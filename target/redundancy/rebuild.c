/*
 * rebuild: an erasure-coded object made whole again from its slices (see
 * ecode.h). Its own slices are read and checked here, the other holders
 * asked for theirs (slice_fetch), and of the newest version the slices of
 * one code decoded into a work file, checked against the object's
 * checksum and committed; a reader waiting on it is served from the
 * checked bytes while they are committed.
 *
 * Thread: the loop given; file work and decoding on the I/O pool.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bsum.h"
#include "cmap.h"
#include "ec.h"
#include "ecode.h"
#include "iopool.h"
#include "log.h"
#include "place.h"
#include "slice.h"
#include "store.h"
#include "target.h"
#include "targetmetrics.h"
#include "util.h"
#include "vmap.h"
#include "xfer.h"
#include "xxh.h"

#define CHUNK (1u << 20)         /* bytes of each slice read at a time */

struct part {
    int fd;                      /* -1: not here, or in mem */
    char *mem;                   /* a small fetched one's bytes (slice.h) */
    char path[4096];             /* a fetched one's work file ("" for one of ours) */
    struct objmeta m;
};

static int held(const struct part *pt)
{
    return pt->fd >= 0 || pt->mem;
}

struct build {
    struct target *t;
    struct xfer_loop lp;
    char *mkey;
    size_t klen;
    char *shown;                 /* for the log */
    struct part parts[SLICE_MAX];
    struct bmd_ec want;          /* the bucket's code now: preferred between equals */
    int asks;                    /* fetches out */
    int next_holder, holders;    /* the holders asked so far of those placement names */
    int by_index;                /* the last round: each missing slice asked by its index */
    int unreached;               /* targets that could not answer */
    int rc;
    ecode_serve_fn serve;        /* NULL: none, or served */
    /* the rebuilt bytes, between decoding and their commit */
    struct store_mp *omp;
    int ofd;
    char opath[4096];
    struct objmeta om;
    ecode_built_fn done;
    void *arg;
};

static void part_drop(struct part *pt)
{
    if (pt->fd >= 0)
        close(pt->fd);
    if (pt->path[0])
        unlink(pt->path);
    free(pt->mem);
    pt->mem = NULL;
    pt->fd = -1;
    pt->path[0] = '\0';
}

/* Keep a slice (fd, path "" when it is one of ours) unless one as new of
 * its index is kept already. */
static void part_take(struct build *b, int fd, const char *path, char *mem,
                      const struct objmeta *m)
{
    struct part *pt = &b->parts[m->ec.idx];
    struct part in = {.fd = fd, .mem = mem, .m = *m};
    snprintf(in.path, sizeof(in.path), "%s", path ? path : "");
    int wanted = m->ec.d == b->want.d && m->ec.p == b->want.p;
    if (held(pt) && (pt->m.version > m->version ||
                        (pt->m.version == m->version && !wanted))) {
        part_drop(&in);
        return;
    }
    part_drop(pt);
    *pt = in;
}

static int sum_is(int fd, uint64_t size, uint64_t sum, struct objmeta *sums);

static void ours_work(void *arg)
{
    struct build *b = arg;
    struct store *st = &b->t->store;
    for (int i = 0; i < SLICE_MAX; i++) {
        size_t sl;
        char *sk = slice_key(b->mkey, b->klen, i, &sl);
        struct store_mp *mp = store_pick(st, sk, sl);
        struct objmeta m;
        int fd = store_get(st, mp, sk, sl, &m) ? -1 : store_data_open(mp, sk, sl, &m);
        if (fd >= 0 && !sum_is(fd, m.size, m.cksum, NULL)) {   /* damaged: never decoded from */
            log_warn("object %s: slice %d here is damaged: not used", b->shown, i);
            close(fd);
            fd = -1;
        }
        if (fd >= 0)
            part_take(b, fd, NULL, NULL, &m);
        free(sk);
    }
}

static void decode_work(void *arg);
static void decoded(void *arg);

/* How many slices of the same version and code as pt's are kept. */
static int group_size(const struct build *b, const struct part *pt)
{
    int n = 0;
    for (int i = 0; i < SLICE_MAX; i++) {
        const struct part *o = &b->parts[i];
        n += held(o) && o->m.version == pt->m.version && o->m.ec.d == pt->m.ec.d &&
             o->m.ec.p == pt->m.ec.p && o->m.ec.len == pt->m.ec.len;
    }
    return n;
}

/* Every answer is in: of the newest version, the slices of a code with
 * enough of them to decode (the most, when two codes have). */
static void got(void *arg, int rc, int fd, const char *path, char *mem, const struct objmeta *m);

/* Too few slices came back asking every target for any one it holds: with
 * fewer targets than slices, a target holds several (the walk leaves a
 * slice that has no place of its own where it is). Ask every other target
 * for each missing slice by its index. */
static void ask_by_index(struct build *b, const struct objmeta *pick)
{
    int n = pick->ec.d + pick->ec.p;
    const struct cmap_node *h[CMAP_COPIES_MAX + SLICE_MAX];
    struct cmap *m = cmap_current();
    int k = place_holders(m, b->mkey, b->klen, 1 + n, h);
    b->by_index = 1;
    b->asks = 1;
    for (int i = 0; i < k; i++)
        for (int idx = 0; idx < n && strcmp(h[i]->id, b->t->node.id); idx++)
            if (!held(&b->parts[idx])) {
                b->asks++;
                slice_fetch(b->t, &b->lp, h[i]->url, b->mkey, b->klen, idx, got, b);
            }
    cmap_unref(m);
    got(b, -ENOENT, -1, NULL, NULL, NULL);
}

static void ask_holders(struct build *b, int want);

static void gathered(struct build *b)
{
    uint64_t newest = 0;
    for (int i = 0; i < SLICE_MAX; i++)
        if (held(&b->parts[i]) && b->parts[i].m.version > newest)
            newest = b->parts[i].m.version;
    const struct objmeta *any = NULL;
    int best = 0, best_ok = 0;
    for (int i = 0; i < SLICE_MAX; i++) {
        const struct part *pt = &b->parts[i];
        if (!held(pt) || pt->m.version != newest)
            continue;
        int n = group_size(b, pt), ok = n >= pt->m.ec.d;
        if (!any || ok > best_ok || (ok == best_ok && n > best)) {
            any = &pt->m;
            best = n;
            best_ok = ok;
        }
    }
    struct objmeta pick = any ? *any : (struct objmeta){0};
    int have = 0;
    for (int i = 0; i < SLICE_MAX; i++) {
        struct part *pt = &b->parts[i];
        if (held(pt) && (pt->m.version != newest || pt->m.ec.d != pick.ec.d ||
                            pt->m.ec.p != pick.ec.p || pt->m.ec.len != pick.ec.len))
            part_drop(pt);       /* an older version's, or of another code */
        have += held(pt);
    }
    if ((!any || have < pick.ec.d) && b->next_holder < b->holders && !b->by_index) {
        ask_holders(b, b->holders);   /* the others, now that the first were too few */
        return;
    }
    if (any && have < pick.ec.d && !b->by_index) {
        ask_by_index(b, &pick);  /* a target may hold more than one */
        return;
    }
    if (!any || have < pick.ec.d) {
        b->rc = b->unreached ? -EAGAIN : any ? -EIO : -ENOENT;
        if (any)
            log_error("object %s: %d of the %d slices it takes to rebuild it were found%s",
                      b->shown, have, pick.ec.d,
                      b->unreached ? " (a target that may hold more did not answer)" : "");
        decoded(b);
        return;
    }
    iopool_submit(b->t->io, b->lp.q, decode_work, decoded, b);
}

static void got(void *arg, int rc, int fd, const char *path, char *mem, const struct objmeta *m)
{
    struct build *b = arg;
    if (rc == 0)
        part_take(b, fd, path, mem, m);
    b->unreached += rc && rc != -ENOENT && rc != -EBADMSG;
    if (--b->asks == 0)
        gathered(b);
}

/* Ask the other targets among the object's holders, from the next not
 * asked yet, for any slice each holds, until want are asked or up to the
 * last; the answers come to got. */
static void ask_holders(struct build *b, int want)
{
    const struct cmap_node *h[CMAP_COPIES_MAX + SLICE_MAX];
    struct cmap *m = cmap_current();
    int k = place_holders(m, b->mkey, b->klen, b->holders, h), asked = 0;
    b->asks = 1;
    for (; b->next_holder < k && asked < want; b->next_holder++) {
        const struct cmap_node *o = h[b->next_holder];
        if (!strcmp(o->id, b->t->node.id))
            continue;
        b->asks++;
        asked++;
        slice_fetch(b->t, &b->lp, o->url, b->mkey, b->klen, -1, got, b);
    }
    if (b->next_holder >= k)
        b->next_holder = b->holders;
    cmap_unref(m);
    got(b, -ENOENT, -1, NULL, NULL, NULL);
}

/* Ours are in: ask as many other holders as it takes to have d slices
 * (the data slices' first: decoding is then a copy); the rest only if
 * those are too few. */
static void ours_in(void *arg)
{
    struct build *b = arg;
    struct bmd_ec ec = {0};
    int n = place_ec(b->mkey, b->klen, &ec) ? ec.d + ec.p : 0, have = 0, other = 0;
    for (int i = 0; i < SLICE_MAX; i++) {   /* slices made under other settings */
        const struct part *pt = &b->parts[i];
        if (held(pt) && pt->m.ec.d + pt->m.ec.p > n)
            n = pt->m.ec.d + pt->m.ec.p;
        if (held(pt) && pt->m.ec.d == ec.d && pt->m.ec.p == ec.p)
            have++;
        other |= held(pt) && (pt->m.ec.d != ec.d || pt->m.ec.p != ec.p);
    }
    b->holders = 1 + n;
    /* under the bucket's code now, with none of another code here */
    int need = ec.d && !other ? ec.d - have : n;
    ask_holders(b, need > 0 ? need : 0);
}

void ecode_rebuild(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                   ecode_built_fn done, void *arg)
{
    ecode_rebuild_serving(t, lp, mkey, klen, NULL, done, arg);
}

void ecode_rebuild_serving(struct target *t, const struct xfer_loop *lp, const char *mkey,
                           size_t klen, ecode_serve_fn serve, ecode_built_fn done, void *arg)
{
    struct build *b = xcalloc(1, sizeof(*b));
    b->serve = serve;
    b->ofd = -1;
    b->t = t;
    b->lp = *lp;
    b->mkey = xfer_key_dup(mkey, klen);
    b->klen = klen;
    b->shown = xfer_key_show(mkey, klen);
    b->done = done;
    b->arg = arg;
    place_ec(mkey, klen, &b->want);
    for (int i = 0; i < SLICE_MAX; i++)
        b->parts[i].fd = -1;
    iopool_submit(t->io, lp->q, ours_work, ours_in, b);
}

/* Every data slice is here: the object is their bytes in order, written
 * into ofd and hashed on the way (its checksum and, into sums, its block
 * sums), so that nothing is read back. 0 with *same (the checksum
 * matches), or -errno. */
static int in_order(struct build *b, const struct objmeta *r, int ofd, char *buf,
                    struct objmeta *sums, int *same)
{
    int d = r->ec.d, rc = 0;
    uint64_t size = r->ec.len, len = ec_slice_len(size, d);
    XXH3_state_t *xs = XXH3_createState();
    XXH3_64bits_reset(xs);
    struct bsum bs;
    bsum_init(&bs);
    for (int i = 0; i < d && rc == 0; i++) {
        struct part *pt = &b->parts[i];
        uint64_t have = ec_data_len(size, len, i);
        for (uint64_t off = 0; rc == 0 && off < have; off += CHUNK) {
            size_t nn = have - off < CHUNK ? (size_t)(have - off) : CHUNK;
            const char *p = pt->mem ? pt->mem + off : buf;
            if (!pt->mem)
                rc = pread_full(pt->fd, buf, nn, off);
            if (rc == 0) {
                XXH3_64bits_update(xs, p, nn);
                bsum_update(&bs, p, nn);
                rc = pwrite_full(ofd, p, nn, (uint64_t)i * len + off);
            }
        }
    }
    *same = rc == 0 && XXH3_64bits_digest(xs) == r->ec.cksum;
    if (*same)
        bsum_finish(&bs, sums);
    bsum_deinit(&bs);
    XXH3_freeState(xs);
    return rc;
}

/* The object's bytes from the slices into ofd (r: one of their records).
 * With every data slice here they are hashed on the way: *hashed 1, and
 * *same and sums as in_order says; else *hashed 0, for the caller to
 * check what was written. */
static int decode_into(struct build *b, const struct objmeta *r, int ofd, struct objmeta *sums,
                       int *hashed, int *same)
{
    int d = r->ec.d, p = r->ec.p, n = d + p, rc = 0, missing = 0;
    uint64_t size = r->ec.len, len = ec_slice_len(size, d);
    struct ec_code code;
    if (ec_code_init(&code, d, p))
        return -EINVAL;
    uint8_t *buf[SLICE_MAX] = {0};
    unsigned char present[SLICE_MAX];
    for (int i = 0; i < n; i++) {
        struct part *pt = &b->parts[i];
        present[i] = held(pt);
        missing |= !present[i] && i < d;
        uint64_t want = i < d ? ec_data_len(size, len, i) : len;
        if (present[i] && pt->m.size != want)
            rc = -EIO;           /* not a slice of this code: never decoded from */
    }
    *hashed = !missing && rc == 0;
    for (int i = 0; i < (*hashed ? 1 : n); i++)   /* in order: one buffer for reads */
        buf[i] = xmalloc(CHUNK);
    if (*hashed)
        rc = in_order(b, r, ofd, (char *)buf[0], sums, same);
    for (uint64_t off = 0; rc == 0 && !*hashed && off < len; off += CHUNK) {
        size_t nn = len - off < CHUNK ? (size_t)(len - off) : CHUNK;
        for (int i = 0; i < n && rc == 0; i++) {
            struct part *pt = &b->parts[i];
            size_t avail = !present[i] || off >= pt->m.size ? 0
                           : pt->m.size - off < nn          ? (size_t)(pt->m.size - off)
                                                            : nn;
            if (avail && pt->mem)
                memcpy(buf[i], pt->mem + off, avail);
            else
                rc = avail ? pread_full(pt->fd, (char *)buf[i], avail, off) : 0;
            memset(buf[i] + avail, 0, nn - avail);
        }
        if (rc == 0 && ec_decode(&code, nn, buf, present))   /* a data slice is missing */
            rc = -EIO;
        for (int i = 0; i < d && rc == 0; i++) {
            uint64_t have = ec_data_len(size, len, i);
            size_t w = off >= have ? 0 : have - off < nn ? (size_t)(have - off) : nn;
            rc = pwrite_full(ofd, (char *)buf[i], w, (uint64_t)i * len + off);
        }
    }
    for (int i = 0; i < n; i++)
        free(buf[i]);
    ec_code_free(&code);
    return rc;
}

/* Is fd's file, size bytes, what sum says? With sums, its block sums
 * (bsum.h) go there as it is read. */
static int sum_is(int fd, uint64_t size, uint64_t sum, struct objmeta *sums)
{
    char *buf = xmalloc(CHUNK);
    XXH3_state_t *xs = XXH3_createState();
    XXH3_64bits_reset(xs);
    struct bsum bs;
    bsum_init(&bs);
    int rc = 0;
    for (uint64_t off = 0; rc == 0 && off < size; off += CHUNK) {
        size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
        rc = pread_full(fd, buf, n, off);
        XXH3_64bits_update(xs, buf, n);
        bsum_update(&bs, buf, n);
    }
    int same = rc == 0 && XXH3_64bits_digest(xs) == sum;
    if (same && sums)
        bsum_finish(&bs, sums);
    bsum_deinit(&bs);
    XXH3_freeState(xs);
    free(buf);
    return same;
}

/* The rebuilt bytes into a work file, checked: b->ofd, opath, om and omp,
 * or b->rc and nothing kept. */
static void rebuild_bytes(struct build *b)
{
    struct store *st = &b->t->store;
    const struct objmeta *r = NULL;
    for (int i = 0; i < SLICE_MAX && !r; i++)
        if (held(&b->parts[i]))
            r = &b->parts[i].m;
    struct store_mp *mp = store_place(st, b->mkey, b->klen);
    uint64_t uid;
    int ofd = store_work_open(mp, &uid, b->opath, sizeof(b->opath));
    if (ofd < 0) {
        b->rc = ofd;
        return;
    }
    struct objmeta m = *r;
    m.nbs = 0;                   /* the slice's sums: the object's come from its bytes */
    m.flags &= ~OBJMETA_F_INLINE;   /* and a slice's inline bytes are not the object's */
    m.inl_loaded = 0;
    int hashed, same = 0;
    b->rc = decode_into(b, r, ofd, &m, &hashed, &same);
    if (b->rc == 0 && !(hashed ? same : sum_is(ofd, r->ec.len, r->ec.cksum, &m))) {
        log_error("object %s: rebuilt from its slices, it fails its checksum", b->shown);
        b->rc = -EIO;
    }
    if (b->rc) {
        close(ofd);
        unlink(b->opath);
        return;
    }
    m.size = r->ec.len;
    m.cksum = r->ec.cksum;
    m.ec.d = 0;
    m.uid = uid;
    b->om = m;
    b->omp = mp;
    b->ofd = ofd;
}

/* The rebuilt bytes become the object here (the commit takes ofd). Their
 * blocks were hashed from the very bytes written: those whose pages
 * stayed in memory since count as checked (vmap.h), so the next read
 * does not hash them again. */
static void commit(struct build *b)
{
    struct store_x x = {.keep_version = b->om.version};
    int fd = b->ofd, kept = bsum_kept(&b->om) ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    b->ofd = -1;
    b->rc = store_commit_x(&b->t->store, b->omp, b->mkey, b->klen, b->opath, fd, &b->om, &x);
    struct stat st;
    if (b->rc == 0 && kept >= 0 && fstat(kept, &st) == 0)   /* named now: its ctime too */
        vmap_mark(kept, &st, &b->om, 0, b->om.size);
    if (kept >= 0)
        close(kept);
    if (b->rc == -EALREADY)      /* as new or newer here meanwhile */
        b->rc = 0;
    if (b->rc == 0)
        log_info("object %s was rebuilt from its slices", b->shown);
}

static void decode_work(void *arg)
{
    struct build *b = arg;
    rebuild_bytes(b);
    if (b->rc == 0 && !b->serve)
        commit(b);               /* no reader waits: in the same turn */
}

static void commit_work(void *arg)
{
    commit(arg);
}

static void decoded(void *arg)
{
    struct build *b = arg;
    if (b->rc == 0 && b->ofd >= 0) {
        /* a reader waits: the bytes go to it while they are committed */
        ecode_serve_fn serve = b->serve;
        b->serve = NULL;
        int fd = fcntl(b->ofd, F_DUPFD_CLOEXEC, 0);
        if (fd >= 0) {
            struct objmeta m = b->om;
            serve(b->arg, fd, &m);
        }
        for (int i = 0; i < SLICE_MAX; i++)
            part_drop(&b->parts[i]);
        iopool_submit(b->t->io, b->lp.q, commit_work, decoded, b);
        return;
    }
    if (!b->rc || b->rc == -EIO)   /* not for nothing found, or a holder that did not answer */
        targetmetrics_add(b->rc ? TM_REBUILD_FAILED : TM_REBUILT, 1);
    for (int i = 0; i < SLICE_MAX; i++)
        part_drop(&b->parts[i]);
    b->done(b->arg, b->rc);
    free(b->mkey);
    free(b->shown);
    free(b);
}
