/*
 * arch: reading inside archive objects (see arch.h).
 *
 * An index is looked for in memory (the last ARCH_CACHE_MAX bytes of
 * them, most recently used first), then beside the record, then built;
 * all but the first on the I/O pool. A member the index points at is a
 * plain read of part of the file (get_member: sendfile, checked, Range).
 * Anything else is a stream made on the I/O pool in turns of ARCH_TURN
 * bytes out: the worker sends a turn's bytes and asks for the next once
 * the client's buffer is below ARCH_HIGH. A stream that fails after its
 * head went (a damaged block, a malformed member further in) cuts the
 * connection, so a client never takes a short answer for a whole one.
 *
 * Reads of the file go through vread, which checks the blocks they touch
 * against the object's sums before handing any byte to libarchive.
 *
 * Thread: the request's worker, but for the *_work functions (the pool).
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "archidx.h"
#include "bsum.h"
#include "err.h"
#include "get.h"
#include "hdrparse.h"
#include "http.h"
#include "iopool.h"
#include "log.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "vmap.h"
#include "xfer.h"
#include "xxh.h"

#define ARCH_CACHE_MAX (256u << 20)
#define ARCH_TURN (1u << 20)
#define ARCH_TURN_IN (16u << 20)  /* archive bytes one turn reads at most */
#define ARCH_HIGH (4u << 20)
#define VBUF (1u << 20)
#define DBUF (64u << 10)

enum { OP_PATH, OP_LIST, OP_MATCH };
enum { MODE_REGEXP, MODE_PREFIX, MODE_SUFFIX, MODE_WDSKEY };

/* ---- the indexes in memory ---------------------------------------------------------- */

struct aidx {
    struct aidx *hnext;          /* in its hash chain */
    struct aidx *prev, *next;    /* in the LRU order, newest first */
    uint64_t h, uid;
    struct archidx x;
    size_t bytes;
    int refs;                    /* the cache's one, while in it, and each reader's */
};

#define HBUCKETS 1024
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct aidx *hash[HBUCKETS];
static struct aidx *newest, *oldest;
static size_t cache_bytes;

static void aidx_unref(struct aidx *a)
{
    pthread_mutex_lock(&cache_mu);
    int last = --a->refs == 0;
    pthread_mutex_unlock(&cache_mu);
    if (last) {
        archidx_free(&a->x);
        free(a);
    }
}

static void lru_unlink(struct aidx *a)
{
    if (a->prev)
        a->prev->next = a->next;
    else
        newest = a->next;
    if (a->next)
        a->next->prev = a->prev;
    else
        oldest = a->prev;
    a->prev = a->next = NULL;
}

static void lru_front(struct aidx *a)
{
    a->next = newest;
    a->prev = NULL;
    if (newest)
        newest->prev = a;
    newest = a;
    if (!oldest)
        oldest = a;
}

/* Out of the cache (its reference dropped); under cache_mu. */
static void cache_drop(struct aidx *a)
{
    struct aidx **p = &hash[a->h % HBUCKETS];
    while (*p && *p != a)
        p = &(*p)->hnext;
    if (*p)
        *p = a->hnext;
    lru_unlink(a);
    cache_bytes -= a->bytes;
    if (--a->refs == 0) {
        archidx_free(&a->x);
        free(a);
    }
}

static uint64_t key_hash(const char *mkey, size_t klen)
{
    return XXH3_64bits(mkey, klen);
}

/* The index of mkey's version uid, referenced, or NULL. */
static struct aidx *cache_get(const char *mkey, size_t klen, uint64_t uid)
{
    uint64_t h = key_hash(mkey, klen);
    pthread_mutex_lock(&cache_mu);
    struct aidx *a = hash[h % HBUCKETS];
    while (a && !(a->h == h && a->uid == uid))
        a = a->hnext;
    if (a) {
        a->refs++;
        lru_unlink(a);
        lru_front(a);
    }
    pthread_mutex_unlock(&cache_mu);
    return a;
}

/* Keep a (the caller's reference stays the caller's), dropping the
 * oldest past ARCH_CACHE_MAX and an older version of the same object. */
static void cache_put(struct aidx *a, const char *mkey, size_t klen)
{
    a->h = key_hash(mkey, klen);
    a->bytes = sizeof(*a) + a->x.n * sizeof(*a->x.m) + a->x.names_len;
    pthread_mutex_lock(&cache_mu);
    for (struct aidx *o = hash[a->h % HBUCKETS], *nx; o; o = nx) {
        nx = o->hnext;
        if (o->h == a->h)
            cache_drop(o);       /* another version's, or the same built twice */
    }
    a->refs++;
    a->hnext = hash[a->h % HBUCKETS];
    hash[a->h % HBUCKETS] = a;
    lru_front(a);
    cache_bytes += a->bytes;
    while (cache_bytes > ARCH_CACHE_MAX && oldest && oldest != a)
        cache_drop(oldest);
    pthread_mutex_unlock(&cache_mu);
}

/* ---- checked reads of the file ------------------------------------------------------ */

struct vread {
    int fd;
    const struct objmeta *m;
    int verify;
    uint64_t clo, chi;           /* blocks checked, contiguous */
    int whole_ok;                /* an object without block sums: checked whole */
    int bad;                     /* a check's error: nothing more is read */
    char *buf;
};

static ssize_t vread_pread(void *arg, void *buf, size_t n, uint64_t off)
{
    struct vread *v = arg;
    uint64_t size = v->m->size;
    if (off >= size)
        return 0;
    if (n > size - off)
        n = (size_t)(size - off);
    if (v->verify && !v->bad && bsum_kept(v->m)) {
        uint64_t bsz = bsum_block_size(v->m), lo = off - off % bsz;
        uint64_t hi = (off + n + bsz - 1) / bsz * bsz;
        hi = hi > size ? size : hi;
        if (lo < v->clo || hi > v->chi) {
            if (!v->buf)
                v->buf = xmalloc(VBUF);
            if ((v->bad = vmap_check(v->fd, v->m, lo, hi, v->buf, VBUF)) == 0) {
                int joins = v->chi && lo <= v->chi && hi >= v->clo;
                v->clo = joins && v->clo < lo ? v->clo : lo;
                v->chi = joins && v->chi > hi ? v->chi : hi;
            }
        }
    } else if (v->verify && !v->bad && !v->whole_ok) {
        if (!v->buf)
            v->buf = xmalloc(VBUF);
        void *st = NULL;
        v->bad = vmap_check_whole(v->fd, v->m, 0, size, v->buf, VBUF, &st);
        v->whole_ok = !v->bad;
    }
    if (v->bad)
        return -EIO;
    ssize_t k = pread(v->fd, buf, n, (off_t)off);
    return k < 0 ? -errno : k;
}

/* ---- a request ---------------------------------------------------------------------- */

struct areq {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    char *shown;                 /* bucket/name, for messages */
    const char *cache;           /* a literal */
    struct objmeta m;
    int fd, flags, kind, op;
    char *path;                  /* OP_PATH's member */
    int mode;                    /* OP_MATCH's */
    char *pat;
    regex_t re;
    int have_re;
    struct aidx *ix;
    struct vread v;
    int rc;                      /* a step's error: -EINVAL (err: 400), -ENOENT, or damage */
    char err[320];
    int gone;                    /* the client left */
    int in_pool;                 /* a turn is on the pool */
    /* a stream */
    struct archidx_rd *rd;
    struct archidx_w *w;
    struct gbuf out;
    char *dbuf;
    int in_member;
    uint64_t skip, left;         /* OP_PATH: member bytes before the range, then to send */
    uint64_t size, roff, rlen;   /* OP_PATH: the member's size; the range's */
    int rg;                      /* OP_PATH: a Range (206) */
    int done;                    /* the stream's last bytes are in out */
    int started;
};

static void areq_free(struct areq *a)
{
    if (a->fd >= 0)
        close(a->fd);
    if (a->ix)
        aidx_unref(a->ix);
    if (a->have_re)
        regfree(&a->re);
    archidx_rd_close(a->rd);
    archidx_w_free(a->w);
    gbuf_free(&a->out);
    if (a->r && a->r->data == a) {
        a->r->data = NULL;
        a->r->on_abort = NULL;
        a->r->on_drain = NULL;
    }
    if (a->r)
        http_req_unref(a->r);
    free(a->v.buf);
    free(a->dbuf);
    free(a->path);
    free(a->pat);
    free(a->shown);
    free(a->mkey);
    free(a);
}

static void a_gone(struct http_req *r)
{
    struct areq *a = r->data;
    a->gone = 1;
    if (!a->in_pool)
        areq_free(a);            /* waiting for a drain that will not come */
}

/* The answer to a failed step, before anything was sent. */
static void reply_failed(struct areq *a)
{
    struct http_req *r = a->r;
    if (a->rc == -EINVAL) {
        err_reply(r, S3E_INVALID_REQUEST, "%s: %s", a->shown, a->err);
    } else if (a->rc == -ENOENT) {
        err_reply(r, S3E_NO_SUCH_KEY, "%s", a->err);
    } else if (a->rc == -EUCLEAN || a->rc == -ENODATA || a->v.bad) {
        get_corrupted(r, a->mkey, a->klen, "its data does not match its checksum");
    } else {
        http_reply_error(r, 500, "cannot read archive %s: %s", a->shown, strerror(-a->rc));
    }
}

static int a_failed(struct areq *a, int rc)
{
    a->rc = a->v.bad ? a->v.bad : rc;
    return a->rc;
}

/* ---- matching ----------------------------------------------------------------------- */

static int matches(const struct areq *a, const char *name, size_t len)
{
    if (a->op == OP_PATH)
        return len == strlen(a->path) && !memcmp(name, a->path, len);
    size_t pl = strlen(a->pat);
    switch (a->mode) {
    case MODE_PREFIX: return len >= pl && !memcmp(name, a->pat, pl);
    case MODE_SUFFIX: return len >= pl && !memcmp(name + len - pl, a->pat, pl);
    case MODE_WDSKEY: {          /* WebDataset: the name less its extensions */
        const char *base = memrchr(name, '/', len);
        base = base ? base + 1 : name;
        const char *dot = memchr(base, '.', len - (size_t)(base - name));
        size_t kl = dot ? (size_t)(dot - name) : len;
        return kl == pl && !memcmp(name, a->pat, pl);
    }
    default: return regexec(&a->re, name, 0, NULL, 0) == 0;
    }
}

/* ---- streams ------------------------------------------------------------------------ */

static void to_gbuf(void *arg, const void *p, size_t n)
{
    gbuf_add(arg, p, n);
}

/* One turn of a stream: up to ARCH_TURN bytes into a->out. */
static void stream_work(void *arg)
{
    struct areq *a = arg;
    char *err = a->err;
    size_t el = sizeof(a->err);
    if (!a->rd) {
        a->rd = archidx_rd_open(a->kind, vread_pread, &a->v, a->m.size, err, el);
        if (!a->rd) {
            a_failed(a, -EINVAL);
            return;
        }
        if (a->op == OP_MATCH)
            a->w = archidx_w_open(ARCHIDX_TAR, to_gbuf, &a->out);
        a->dbuf = xmalloc(DBUF);
    }
    uint64_t in = 0;
    while (a->out.n < ARCH_TURN && in < ARCH_TURN_IN && !a->done) {
        if (!a->in_member) {
            const char *name;
            size_t len;
            uint64_t size;
            int rc = archidx_rd_next(a->rd, &name, &len, &size, err, el);
            if (rc < 0) {
                a_failed(a, rc);
                return;
            }
            if (rc == 0 && a->op == OP_PATH) {
                snprintf(err, el, "the archive ended before member %s", a->path);
                a_failed(a, -EINVAL);
                return;
            }
            if (rc == 0) {
                if (archidx_w_close(a->w, err, el))
                    a_failed(a, -EIO);
                a->done = 1;
                return;
            }
            if (!matches(a, name, len))
                continue;
            char *nm = xstrndup(name, len);
            rc = a->op == OP_MATCH ? archidx_w_member(a->w, nm, size,
                                                      a->m.mtime_ns / 1000000000u, err, el)
                                   : 0;
            free(nm);
            if (rc) {
                a_failed(a, rc);
                return;
            }
            a->in_member = 1;
            continue;
        }
        ssize_t k = archidx_rd_data(a->rd, a->dbuf, DBUF, err, el);
        if (k < 0) {
            a_failed(a, (int)k);
            return;
        }
        in += (uint64_t)k;
        if (k == 0) {
            a->in_member = 0;
            if (a->op == OP_PATH) {
                a->done = 1;
                if (a->left) {
                    snprintf(err, el, "member %s is shorter than its header says", a->path);
                    a_failed(a, -EINVAL);
                }
                return;
            }
            continue;
        }
        if (a->op == OP_MATCH) {
            if (archidx_w_data(a->w, a->dbuf, (size_t)k, err, el)) {
                a_failed(a, -EIO);
                return;
            }
            continue;
        }
        uint64_t from = a->skip < (uint64_t)k ? a->skip : (uint64_t)k;
        a->skip -= from;
        uint64_t take = (uint64_t)k - from < a->left ? (uint64_t)k - from : a->left;
        gbuf_add(&a->out, a->dbuf + from, (size_t)take);
        a->left -= take;
        if (!a->left)
            a->done = 1;
    }
}

static void stream_done(void *arg);

static void stream_next(struct areq *a)
{
    a->in_pool = 1;
    iopool_submit(a->t->io, a->r->w->q, stream_work, stream_done, a);
}

static void stream_drained(struct http_req *r)
{
    struct areq *a = r->data;
    if (!a->in_pool && http_resp_pending(r) < ARCH_HIGH / 2) {
        r->on_drain = NULL;
        stream_next(a);
    }
}

static void stream_begin(struct areq *a)
{
    struct http_req *r = a->r;
    if (a->cache)
        http_resp_header_str(r, "X-Shoal-Cache", a->cache);
    if (a->op == OP_MATCH) {
        http_resp_header_str(r, "Content-Type", "application/x-tar");
        http_resp_begin(r, 200, -1);
        return;
    }
    http_resp_header_str(r, "Content-Type", "application/octet-stream");
    if (a->rg)
        http_resp_header(r, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)a->roff,
                         (unsigned long long)(a->roff + a->rlen - 1),
                         (unsigned long long)a->size);
    http_resp_begin(r, a->rg ? 206 : 200, (int64_t)a->rlen);
}

static void stream_done(void *arg)
{
    struct areq *a = arg;
    struct http_req *r = a->r;
    a->in_pool = 0;
    if (a->gone) {
        areq_free(a);
        return;
    }
    if (a->rc) {
        if (!a->started)
            reply_failed(a);
        else
            http_resp_abort(r);  /* cut: never a short answer that looks whole */
        if (a->started)
            log_warn("archive %s: stream cut: %s", a->shown, a->err);
        areq_free(a);
        return;
    }
    if (!a->started) {
        a->started = 1;
        stream_begin(a);
    }
    if (a->out.n)
        http_resp_write(r, a->out.p, a->out.n);
    a->out.n = 0;
    if (a->done) {
        http_resp_end(r);
        areq_free(a);
        return;
    }
    if (http_resp_pending(r) > ARCH_HIGH)
        r->on_drain = stream_drained;
    else
        stream_next(a);
}

/* ---- with the index ----------------------------------------------------------------- */

static void reply_list(struct areq *a)
{
    struct gbuf b = {0};
    gbuf_str(&b, "{\"archive\":");
    gbuf_json_str(&b, a->shown, strlen(a->shown));
    gbuf_str(&b, ",\"format\":\"");
    gbuf_str(&b, archidx_kind_name(a->kind));
    char num[64];
    snprintf(num, sizeof(num), "\",\"count\":%zu,\"members\":[", a->ix->x.n);
    gbuf_str(&b, num);
    for (size_t i = 0; i < a->ix->x.n; i++) {
        const struct archidx_member *e = &a->ix->x.m[i];
        gbuf_str(&b, i ? ",{\"name\":" : "{\"name\":");
        gbuf_json_str(&b, e->name, e->name_len);
        snprintf(num, sizeof(num), ",\"size\":%llu}", (unsigned long long)e->size);
        gbuf_str(&b, num);
    }
    gbuf_str(&b, "]}");
    http_reply(a->r, 200, "application/json", b.p, b.n);
    gbuf_free(&b);
}

static void with_index(struct areq *a)
{
    struct http_req *r = a->r;
    if (a->op == OP_LIST) {
        reply_list(a);
        areq_free(a);
        return;
    }
    const struct archidx_member *e = archidx_find(&a->ix->x, a->path, strlen(a->path));
    if (!e) {
        err_reply(r, S3E_NO_SUCH_KEY, "archive %s has no member %s", a->shown, a->path);
        areq_free(a);
        return;
    }
    char etag[GET_ETAG_MAX];
    snprintf(etag, sizeof(etag), "\"%016llx\"",
             (unsigned long long)XXH3_64bits_withSeed(e->name, e->name_len, a->m.cksum ^ e->size));
    if (e->off != ARCHIDX_SEQ) {
        r->data = NULL;          /* the read's own from here */
        r->on_abort = NULL;
        get_member(a->t, r, a->mkey, a->klen, a->cache, &a->m, a->fd, a->flags, e->off, e->size,
                   etag);        /* takes fd */
        a->fd = -1;
        areq_free(a);
        return;
    }
    a->size = e->size;
    uint64_t rl = e->size;
    a->rg = hdr_parse_range(http_req_header(r, "Range"), e->size, &a->roff, &rl);
    if (a->rg < 0) {
        http_resp_header(r, "Content-Range", "bytes */%llu", (unsigned long long)e->size);
        http_reply_error(r, 416, "range not satisfiable for the member's %llu bytes",
                         (unsigned long long)e->size);
        areq_free(a);
        return;
    }
    if (!a->rg)
        a->roff = 0;
    a->skip = a->roff;
    a->left = a->rlen = rl;
    http_resp_header_str(r, "ETag", etag);
    if (r->method == HTTP_M_HEAD || !a->left) {
        a->started = 1;
        stream_begin(a);
        http_resp_end(r);
        areq_free(a);
        return;
    }
    stream_next(a);
}

/* mkey's index: from beside the record when it is this version's (uid),
 * else built (reading through v) and kept there. 0 with *out (a new
 * reference, not yet in the cache), or an error with err. Blocks: the
 * I/O pool. */
static int index_load(struct target *t, const char *mkey, size_t klen, const struct objmeta *m,
                      int kind, struct vread *v, struct aidx **out, char *err, size_t errlen)
{
    struct store *s = &t->store;
    struct store_mp *mp = store_pick(s, mkey, klen);
    char *side = store_side_key(ARCH_SIDE_KIND, mkey, klen), *rec = NULL;
    size_t vl = 0;
    struct aidx *ix = xcalloc(1, sizeof(*ix));
    ix->uid = m->uid;
    ix->refs = 1;
    int have = 0;
    if (!store_kv_get(s, mp, side, klen, &rec, &vl) && vl >= 8) {
        uint64_t uid;
        memcpy(&uid, rec, 8);
        have = uid == m->uid && !archidx_decode(&ix->x, rec + 8, vl - 8) && ix->x.kind == kind;
    }
    free(rec);
    if (!have) {
        archidx_free(&ix->x);
        int rc = archidx_build(&ix->x, kind, vread_pread, v, m->size, err, errlen);
        if (rc) {
            free(ix);
            free(side);
            return v->bad ? v->bad : rc;
        }
        size_t el;
        char *enc = archidx_encode(&ix->x, &el);
        rec = xmalloc(el + 8);
        memcpy(rec, &m->uid, 8);
        memcpy(rec + 8, enc, el);
        if (store_kv_put_nosync(s, mp, side, klen, rec, el + 8))
            log_warn("an archive's index could not be kept beside its record");
        free(enc);
        free(rec);
    }
    free(side);
    *out = ix;
    return 0;
}

static void index_work(void *arg)
{
    struct areq *a = arg;
    int rc = index_load(a->t, a->mkey, a->klen, &a->m, a->kind, &a->v, &a->ix, a->err,
                        sizeof(a->err));
    if (rc)
        a_failed(a, rc);
}

int arch_locate(struct target *t, const char *mkey, size_t klen, const struct objmeta *m, int fd,
                int verify, const char *path, uint64_t *off, uint64_t *size, char *err,
                size_t errlen)
{
    const char *prov, *bucket, *name;
    size_t nl;
    xfer_key_parts(mkey, klen, &prov, &bucket, &name, &nl);
    int kind = archidx_kind_of(name, nl);
    if (!kind) {
        snprintf(err, errlen, "not an archive Shoal reads inside");
        return -EINVAL;
    }
    struct aidx *ix = cache_get(mkey, klen, m->uid);
    if (!ix) {
        struct vread v = {.fd = fd, .m = m, .verify = verify};
        int rc = index_load(t, mkey, klen, m, kind, &v, &ix, err, errlen);
        free(v.buf);
        if (rc)
            return rc;
        cache_put(ix, mkey, klen);
    }
    const struct archidx_member *e = archidx_find(&ix->x, path, strlen(path));
    int rc = e ? 0 : -ENOENT;
    if (e) {
        *off = e->off;
        *size = e->size;
    } else {
        snprintf(err, errlen, "archive %s/%.*s has no member %s", bucket, (int)nl, name, path);
    }
    aidx_unref(ix);
    return rc;
}

static void index_done(void *arg)
{
    struct areq *a = arg;
    a->in_pool = 0;
    if (a->gone) {
        areq_free(a);
        return;
    }
    if (a->rc) {
        reply_failed(a);
        areq_free(a);
        return;
    }
    cache_put(a->ix, a->mkey, a->klen);
    with_index(a);
}

/* ---- the request -------------------------------------------------------------------- */

int arch_asked(const struct http_req *r)
{
    char v[8];
    return http_query_get(r, "archpath", v, sizeof(v)) != -1 ||
           http_query_get(r, "archlist", v, sizeof(v)) != -1 ||
           http_query_get(r, "archregx", v, sizeof(v)) != -1 ||
           http_query_get(r, "archmode", v, sizeof(v)) != -1;
}

/* A pattern glibc compiles and runs in bounded time: short, without
 * back-references (backtracking) or {m,n} bounds (which it expands:
 * nested ones blow up). */
static int regex_tame(const char *x)
{
    if (strlen(x) > 256 || strchr(x, '{'))
        return 0;
    for (const char *p = x; (p = strchr(p, '\\')); p += p[1] ? 2 : 1)
        if (p[1] >= '1' && p[1] <= '9')
            return 0;
    return 1;
}

/* What r asks for, into a: 0, or answered (-1). */
static int parse(struct areq *a, struct http_req *r)
{
    char *v = xmalloc(ARCHIDX_NAME_MAX + 2), *x = xmalloc(ARCHIDX_NAME_MAX + 2), mode[16] = "";
    int pl = http_query_get(r, "archpath", v, ARCHIDX_NAME_MAX + 2);
    int rl = http_query_get(r, "archregx", x, ARCHIDX_NAME_MAX + 2);
    int ml = http_query_get(r, "archmode", mode, sizeof(mode));
    char fl[4];
    int list = http_query_get(r, "archlist", fl, sizeof(fl)) != -1;
    const char *bad = NULL;
    if (pl == -2 || rl == -2 || ml == -2)
        bad = "archpath, archregx and archmode take at most 4096 bytes";
    else if ((pl >= 0) + (rl >= 0) + list > 1)
        bad = "ask for one of archpath, archregx and archlist";
    else if (pl == 0 || rl == 0)
        bad = "archpath and archregx take a value";
    else if (ml >= 0 && rl < 0)
        bad = "archmode goes with archregx";
    if (!bad && pl > 0 && !archidx_name_ok(v, (size_t)pl))
        bad = "archpath is not a member name (empty, absolute, or with a '..')";
    if (!bad && rl > 0) {
        a->mode = ml < 0 || !strcmp(mode, "regexp") ? MODE_REGEXP
                  : !strcmp(mode, "prefix")         ? MODE_PREFIX
                  : !strcmp(mode, "suffix")         ? MODE_SUFFIX
                  : !strcmp(mode, "wdskey")         ? MODE_WDSKEY
                                                    : -1;
        if (a->mode < 0)
            bad = "archmode is one of regexp, prefix, suffix, wdskey";
        else if (a->mode == MODE_REGEXP && !regex_tame(x))
            bad = "archregx takes at most 256 bytes, without back-references or {m,n} "
                  "bounds";
        else if (a->mode == MODE_REGEXP && regcomp(&a->re, x, REG_EXTENDED | REG_NOSUB))
            bad = "archregx is not a valid regular expression";
        else
            a->have_re = a->mode == MODE_REGEXP;
    }
    if (!bad && (list || rl > 0) && r->method == HTTP_M_HEAD)
        bad = "archlist and archregx answer GET only";
    if (bad) {
        http_reply_error(r, 400, "%s", bad);
        free(v);
        free(x);
        return -1;
    }
    a->op = pl > 0 ? OP_PATH : list ? OP_LIST : OP_MATCH;
    if (pl > 0)
        a->path = v;
    else
        free(v);
    if (rl > 0)
        a->pat = x;
    else
        free(x);
    return 0;
}

void arch_serve(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, const struct objmeta *m, int fd, int flags)
{
    const char *prov, *bucket, *name;
    size_t nl;
    xfer_key_parts(mkey, klen, &prov, &bucket, &name, &nl);
    int kind = archidx_kind_of(name, nl);
    if (!kind) {
        close(fd);
        http_reply_error(r, 400, "%s/%.*s is not an archive Shoal reads inside (.tar, .tar.gz, "
                                 ".tgz, .tar.lz4, .zip)", bucket, (int)(nl > 200 ? 200 : nl),
                         name);
        return;
    }
    struct areq *a = xcalloc(1, sizeof(*a));
    a->fd = fd;
    if (parse(a, r)) {
        areq_free(a);
        return;
    }
    a->t = t;
    a->kind = kind;
    a->mkey = xmalloc(klen + 1);  /* NUL-separated parts: copied whole */
    memcpy(a->mkey, mkey, klen + 1);
    a->klen = klen;
    a->shown = xasprintf("%s/%.*s", bucket, (int)nl, name);
    a->cache = cache;
    a->m = *m;
    a->flags = flags;
    a->v = (struct vread){.fd = fd, .m = &a->m, .verify = (flags & GET_VERIFY) != 0};
    a->r = r;
    http_req_ref(r);
    r->data = a;
    r->on_abort = a_gone;
    if (a->op == OP_MATCH) {
        stream_next(a);
        return;
    }
    if ((a->ix = cache_get(mkey, klen, m->uid))) {
        with_index(a);
        return;
    }
    a->in_pool = 1;
    iopool_submit(t->io, r->w->q, index_work, index_done, a);
}
