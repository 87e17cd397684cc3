/*
 * get: GET and HEAD of an object the drives hold, shared by plain buckets
 * (obj.c) and by backed ones once the object is cached (cold.c).
 *
 * The metadata record says which version's data file to open; the bytes
 * then go to the client with sendfile from that file, which stays valid
 * however the object changes meanwhile (a PUT commits a new file, it does
 * not write over the old one). Conditional requests follow RFC 9110's
 * order (If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since);
 * one byte range is served (hdrparse); in S3 mode the response-* query
 * parameters override the headers S3 lets them override.
 *
 * Before any byte goes, the blocks the read sends are checked against
 * their sums (bsum.h), unless the bucket turned that off: only those not
 * checked since their pages came from the drive (vmap.h), on the worker
 * when they are few and in memory, else on the I/O pool. A block that
 * fails is never sent: the copy is repaired or the read answers 500.
 *
 * Thread: the request's worker; store_get and open are quick reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "err.h"
#include "atime.h"
#include "bsum.h"
#include "get.h"
#include "targetmetrics.h"
#include "hdrparse.h"
#include "http.h"
#include "iopool.h"
#include "log.h"
#include "partsizes.h"
#include "ocache.h"
#include "repair.h"
#include "s3.h"
#include "target.h"
#include "util.h"
#include "vmap.h"
#include "xfer.h"
#include "xfget.h"
#include "xxh.h"

/* Conditional GET/HEAD in RFC 9110's order: 0 to go on, or 412 / 304. */
static int check_conditions(const struct http_req *r, const struct objmeta *m, const char *etag)
{
    const char *im = http_req_header(r, "If-Match");
    const char *inm = http_req_header(r, "If-None-Match");
    const char *ius = http_req_header(r, "If-Unmodified-Since");
    const char *ims = http_req_header(r, "If-Modified-Since");
    time_t mt = (time_t)(m->mtime_ns / 1000000000u), t;
    if (im) {
        if (!hdr_etag_listed(im, etag))
            return 412;
    } else if (ius && !s3_parse_http_date(ius, &t) && mt > t) {
        return 412;
    }
    if (inm) {
        if (hdr_etag_listed(inm, etag))
            return 304;
    } else if (ims && !s3_parse_http_date(ims, &t) && mt <= t) {
        return 304;
    }
    return 0;
}

/* S3's response-* query parameters override these response headers. */
static void s3_overrides(struct http_req *r, const struct objmeta *m)
{
    static const char *const map[][2] = {
        {"response-content-language", "Content-Language"},
        {"response-expires", "Expires"},
        {"response-cache-control", "Cache-Control"},
        {"response-content-disposition", "Content-Disposition"},
        {"response-content-encoding", "Content-Encoding"},
    };
    char v[1024];
    if (http_query_get(r, "response-content-type", v, sizeof(v)) >= 0)
        http_resp_header_str(r, "Content-Type", v);
    else
        http_resp_header_str(r, "Content-Type", m->ctype[0] ? m->ctype : "binary/octet-stream");
    for (size_t i = 0; i < ARRAY_LEN(map); i++)
        if (http_query_get(r, map[i][0], v, sizeof(v)) >= 0)
            http_resp_header_str(r, map[i][1], v);
}

/* An inline record's bytes, checked against its checksum on a read from
 * the database (the cache keeps them checked): -1 with *mem = m->inl, or
 * -EBADMSG when they do not match, -EUCLEAN when they are missing. */
static int inline_bytes(struct store_mp *mp, uint64_t gen, const char *mkey, size_t klen,
                        struct objmeta *m, const char **mem)
{
    if (!m->inl_loaded)
        return -EUCLEAN;         /* its bytes are missing (store_get) */
    if (XXH3_64bits(m->inl, (size_t)m->size) != m->cksum)
        return -EBADMSG;
    if (!(m->flags & OBJMETA_F_DAMAGED))
        ocache_put(mp, gen, mkey, klen, m, -1);
    *mem = m->inl;
    return -1;
}

/* The object's metadata and an open data file: fd, or -errno; -EUCLEAN
 * when the record is there but its data file is missing or not of the
 * record's size (caught on every read: such a file is never served);
 * st: the open file's stat. An inline record's bytes: -1 with *mem set,
 * when mem is given (else they come as a file, store_data_open). */
static int open_object(struct target *t, const char *mkey, size_t klen, struct objmeta *m,
                       struct stat *st, const char **mem)
{
    int fd = ocache_open(&t->store, mkey, klen, m, st), rc = 0;
    if (fd >= 0)
        return fd;               /* a record and file this worker read, unchanged since */
    uint64_t missing = 0;        /* the uid whose file was not there */
    uint64_t gen = 0;
    struct store_mp *mp = NULL;
    /* A PUT (or a resilver's move) may replace the file between the lookup
     * and the open; the next round sees the new record. Only the same
     * version found twice without its file is damage. */
    for (int tries = 0; tries < 4 && fd < 0; tries++) {
        mp = store_pick(&t->store, mkey, klen);
        gen = store_wgen(mp);    /* before the read: a write after it makes the entry stale */
        if ((rc = store_get(&t->store, mp, mkey, klen, m)))
            break;
        if (mem && objmeta_inline(m))
            return inline_bytes(mp, gen, mkey, klen, m, mem);
        if ((fd = store_data_open_served(mp, mkey, klen, m)) >= 0)
            break;
        rc = fd != -ENOENT ? fd : missing == m->uid ? -EUCLEAN : -EAGAIN;
        if (rc != -EAGAIN)
            break;
        missing = m->uid;
    }
    if (fd >= 0 && (fstat(fd, st) || (uint64_t)st->st_size != m->size)) {
        close(fd);
        return -EUCLEAN;
    }
    if (fd >= 0 && !(m->flags & OBJMETA_F_DAMAGED) && !objmeta_inline(m))
        ocache_put(mp, gen, mkey, klen, m, fd);   /* (an inline one's: a memory file) */
    return fd >= 0 ? fd : rc;
}

/* 500 for an object whose bytes are not what its record says, logged;
 * never the bytes. */
void get_corrupted(struct http_req *r, const char *mkey, size_t klen, const char *why)
{
    char *shown = xfer_key_show(mkey, klen);
    targetmetrics_add(TM_UNSERVED, 1);
    log_error("object %s: %s: not served", shown, why);
    err_reply(r, S3E_INTERNAL_ERROR, "ObjectCorrupted: object %s: %s on this target", shown,
              why);
    free(shown);
}

int get_verifies(const struct bmd_bucket *bk)
{
    return json_is_false(json_object_get(bk->props, "verify_reads")) ? 0 : GET_VERIFY;
}

/* 304 or 412 for a condition that did not hold. */
static void reply_condition(struct http_req *r, int cond)
{
    if (cond == 412) {
        err_reply(r, S3E_PRECONDITION_FAILED, "at least one of the preconditions did not hold");
    } else {
        http_resp_begin(r, 304, 0);
        http_resp_end(r);
    }
}

/* What serve worked out for a read: its range and status, kept across
 * a check on the I/O pool. */
struct range {
    uint64_t off, len;           /* in the file */
    int rg;                      /* 1: a range (206) */
    int member;                  /* an archive's member: its own headers */
    uint64_t base, total;        /* the member's offset in the file and size */
    char etag[GET_ETAG_MAX];     /* the member's */
    int st_known;                /* st: the file's stat, taken when it was opened */
    struct stat st;
};

static void send_object(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                        const char *cache, const struct objmeta *m, int fd, const struct range *g,
                        const char *mem);

/* The stat of g's open file fd: the one its opener took, else a new
 * one; 0, or -1 when fstat fails. */
static int range_stat(const struct range *g, int fd, struct stat *st)
{
    if (g->st_known) {
        *st = g->st;
        return 0;
    }
    return fstat(fd, st);
}

/* fd, when there is one (a read from kept bytes has none) */
static void fd_close(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* ---- checks: a read's blocks against their sums, before any byte goes ----------- */

/* Blocks still to check are read in turns of CHECK_TURN bytes (a block at
 * least), each a job of its own, so a large read does not hold an I/O
 * thread (commits, deletes and listings share them) for long, and a
 * client that left stops it. Up to CHECK_INLINE bytes whose pages are in
 * memory are checked on the worker at once: hashing them costs less than
 * handing them over. */
#define CHECK_TURN (8u << 20)
#define CHECK_BUF (1u << 20)
#define CHECK_INLINE (128u << 10)

struct check {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    const char *cache;           /* a literal */
    struct objmeta m;
    struct stat st;
    int fd;
    struct range g;
    struct vmap_plan p;
    uint64_t at;                 /* checked up to here */
    void *whole;                 /* an object without block sums: its hash so far */
    int bad;                     /* 0, or a vmap_check error */
    int gone;                    /* the client left */
    int flags;                   /* get_local's */
};

static const char *check_why(int bad)
{
    return bad == -EUCLEAN ? "its data does not match its checksum"
           : bad == -ENODATA ? "its data file is short"
                             : "its data file cannot be read";
}

/* A check that failed: repaired from redundancy and served, or 500. */
static void check_failed(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                         struct objmeta *m, int flags, int bad)
{
    if ((flags & GET_NO_REPAIR) || !repair_read(t, r, mkey, klen, m, flags))
        get_corrupted(r, mkey, klen, check_why(bad));
}

static void check_work(void *arg)
{
    struct check *c = arg;
    uint64_t bsz = bsum_block_size(&c->m), end = c->at + CHECK_TURN;
    if (bsum_kept(&c->m))        /* whole blocks */
        end = end - end % bsz > c->at ? end - end % bsz : c->at + bsz;
    if (end > c->p.hi)
        end = c->p.hi;
    char *buf = xmalloc(CHECK_BUF);
    if (bsum_kept(&c->m))
        c->bad = vmap_check(c->fd, &c->m, c->at, end, buf, CHECK_BUF);
    else                         /* the whole object, a turn at a time */
        c->bad = vmap_check_whole(c->fd, &c->m, c->at, end, buf, CHECK_BUF, &c->whole);
    free(buf);
    c->at = end;
}

static void check_gone(struct http_req *r)
{
    struct check *c = r->data;
    c->gone = 1;
}

static void check_done(void *arg)
{
    struct check *c = arg;
    if (!c->gone && !c->bad && c->at < c->p.hi) {
        iopool_submit(c->t->io, c->r->w->q, check_work, check_done, c);   /* next turn */
        return;
    }
    c->r->data = NULL;
    c->r->on_abort = NULL;
    if (c->gone || c->bad)
        close(c->fd);
    if (!c->gone && c->bad) {
        check_failed(c->t, c->r, c->mkey, c->klen, &c->m, c->flags, c->bad);
    } else if (!c->gone) {
        if (c->p.keep)
            vmap_mark(c->fd, &c->st, &c->m, c->p.lo, c->p.hi);
        send_object(c->t, c->r, c->mkey, c->klen, c->cache, &c->m, c->fd, &c->g, NULL);
    }
    http_req_unref(c->r);
    vmap_check_whole_free(c->whole);
    free(c->mkey);
    free(c);
}

static void check_start(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                        const char *cache, const struct objmeta *m, int fd, int flags,
                        const struct stat *st, const struct range *g, const struct vmap_plan *p)
{
    struct check *c = xcalloc(1, sizeof(*c));
    c->flags = flags;
    c->t = t;
    c->r = r;
    c->mkey = xmalloc(klen + 1);   /* NUL-separated parts: copied whole */
    memcpy(c->mkey, mkey, klen + 1);
    c->klen = klen;
    c->cache = cache;
    c->m = *m;
    c->st = *st;
    c->fd = fd;
    c->g = *g;
    c->p = *p;
    c->at = p->lo;
    http_req_ref(r);
    r->data = c;
    r->on_abort = check_gone;
    iopool_submit(t->io, r->w->q, check_work, check_done, c);
}

/* An object of at most SMALL_MAX bytes is read whole into the worker's
 * buffer and hashed there, on every read: that costs less than asking
 * the kernel about its pages, and its answer is copied out of a buffer
 * anyway (http_resp_file copies ranges this small). 1 when it matches
 * its checksum (*mem: its bytes, until the next read on this worker), 0
 * when answered (repaired, or 500). Takes fd then. */
#define SMALL_MAX (32u << 10)

static int check_small(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                       struct objmeta *m, int fd, int flags, const char **mem)
{
    static __thread char *buf;
    if (!buf)
        buf = xmalloc(SMALL_MAX);
    void *state = NULL;
    int bad = vmap_check_whole(fd, m, 0, m->size, buf, SMALL_MAX, &state);
    if (bad) {
        close(fd);
        check_failed(t, r, mkey, klen, m, flags, bad);
        return 0;
    }
    *mem = buf;
    return 1;
}

/* Check the blocks of g's bytes not checked since their pages were
 * loaded: 1 when that is done and the bytes may go, 0 when the check
 * goes on (on the I/O pool) or failed (answered). Takes fd then. */
static int check_range(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                       const char *cache, struct objmeta *m, int fd, int flags,
                       const struct range *g)
{
    struct stat st;
    struct vmap_plan p;
    if (range_stat(g, fd, &st)) {
        close(fd);
        check_failed(t, r, mkey, klen, m, flags, -EIO);
        return 0;
    }
    if (g->member && g->len <= GET_MEMBER_RANDOM_MAX)   /* no read-ahead past it (vmap.h) */
        vmap_plan_random(fd, &st, m, g->off, g->len, &p);
    else
        vmap_plan(fd, &st, m, g->off, g->len, &p);
    if (p.lo == p.hi)
        return 1;                /* checked since it was loaded */
    if (!p.resident || p.hi - p.lo > CHECK_INLINE) {
        check_start(t, r, mkey, klen, cache, m, fd, flags, &st, g, &p);
        return 0;
    }
    static __thread char *buf;
    if (!buf)
        buf = xmalloc(CHECK_INLINE);
    int bad = vmap_check(fd, m, p.lo, p.hi, buf, CHECK_INLINE);
    if (bad) {
        close(fd);
        check_failed(t, r, mkey, klen, m, flags, bad);
        return 0;
    }
    if (p.keep)
        vmap_mark(fd, &st, m, p.lo, p.hi);
    return 1;
}

static void serve(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                  const char *cache, struct objmeta *m, int fd, int flags,
                  const struct stat *st, const char *mem);
static void opened(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                   const char *cache, int flags, struct objmeta *m, int fd,
                   const struct stat *st, const char *mem);
static void send_checked(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                         const char *cache, struct objmeta *m, int fd, int flags,
                         const struct range *g);

void get_local(struct target *t, struct http_req *r, const char *mkey, size_t klen,
               const char *cache, int flags)
{
    struct objmeta m;
    struct stat st;
    const char *mem;
    /* a small object read before: its checked bytes, kept by this worker */
    if ((r->method == HTTP_M_GET || r->method == HTTP_M_HEAD) && !arch_asked(r) &&
        !xfget_asked(r) && ocache_bytes(&t->store, mkey, klen, &m, &mem) &&
        !store_is_marker(&m) && !(m.flags & OBJMETA_F_DAMAGED)) {
        serve(t, r, mkey, klen, cache, &m, -1, flags, NULL, mem);
        return;
    }
    int plain = (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD) && !arch_asked(r) &&
                !xfget_asked(r);   /* may be answered from memory */
    mem = NULL;
    int fd = open_object(t, mkey, klen, &m, &st, plain ? &mem : NULL);
    opened(t, r, mkey, klen, cache, flags, &m, fd, fd >= 0 ? &st : NULL, mem);
}

void get_opened(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, int flags, struct objmeta *m, int fd)
{
    opened(t, r, mkey, klen, cache, flags, m, fd, NULL, NULL);
}

/* get_opened, with the open file's stat when its opener took one, or an
 * inline record's bytes (mem, with fd -1). */
static void opened(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                   const char *cache, int flags, struct objmeta *m, int fd,
                   const struct stat *st, const char *mem)
{
    if (fd == -EUCLEAN || fd == -EBADMSG) {
        if ((flags & GET_NO_REPAIR) || !repair_read(t, r, mkey, klen, m, flags))
            get_corrupted(r, mkey, klen,
                          fd == -EBADMSG ? check_why(-EUCLEAN)
                                         : "its data file is missing or short");
        return;
    }
    int have = fd >= 0 || mem;
    if (have && (m->flags & OBJMETA_F_DAMAGED)) {
        fd_close(fd);
        get_corrupted(r, mkey, klen, "a scrub found its data damaged, with no other copy");
        return;
    }
    if (have && store_is_marker(m)) {   /* a versioned bucket's deleted name */
        fd_close(fd);
        http_resp_header_str(r, "x-amz-delete-marker", "true");
        http_resp_header_str(r, "x-amz-version-id", store_vid(m));
        err_reply(r, S3E_NO_SUCH_KEY, "The specified key does not exist.");
        return;
    }
    if (fd == -EAGAIN) {         /* rewritten again and again while we looked */
        http_resp_header_str(r, "Retry-After", "1");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the object is being rewritten; try again");
        return;
    }
    if (!have) {
        if (fd == -ENOENT) {
            /* no marker stands for the name: S3 says so on the answer */
            http_resp_header_str(r, "x-amz-delete-marker", "false");
            http_reply_error(r, 404, "object not found");
        }
        else
            http_reply_error(r, 500, "cannot read object: %s", strerror(-fd));
        return;
    }
    serve(t, r, mkey, klen, cache, m, fd, flags, st, mem);
}

/* The response's own headers, for the bytes and for a condition's
 * answer alike. */
static void object_headers(struct http_req *r, const char *mkey, size_t klen, const char *cache,
                           const struct objmeta *m)
{
    if (cache)
        http_resp_header_str(r, "X-Shoal-Cache", cache);
    if (cache && r->method != HTTP_M_HEAD)
        atime_touch(mkey, klen); /* a backed bucket's copy: its place in the LRU order */
    target_meta_headers(r, m);
}

/* The rest of a read, with the object's record and open file: its
 * conditions and range, then (GET_VERIFY) a check of the blocks it
 * sends. st: the file's stat, when its opener took one (NULL: none);
 * mem: the object's bytes, checked (ocache_bytes), with fd -1 and no
 * archive asked. */
static void serve(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                  const char *cache, struct objmeta *m, int fd, int flags,
                  const struct stat *st, const char *mem)
{
    struct range g = {0, m->size, 0, 0, 0, 0, "", 0, {0}};
    if (st) {
        g.st = *st;
        g.st_known = 1;
    }
    if (!target_routed_allows(r, mkey, m)) {
        fd_close(fd);            /* the record served decides, not one looked at before */
        err_reply(r, S3E_ACCESS_DENIED, "Access Denied");
        return;
    }
    if (arch_asked(r)) {
        arch_serve(t, r, mkey, klen, cache, m, fd, flags);   /* takes fd */
        return;
    }
    char etag[OBJMETA_ETAG_MAX + 1];
    objmeta_etag(m, etag, sizeof(etag));
    int cond = check_conditions(r, m, etag);
    if (cond) {
        fd_close(fd);
        object_headers(r, mkey, klen, cache, m);
        reply_condition(r, cond);
        return;
    }
    int part = target_is_s3(r) ? partsizes_range(r, m, &g.off, &g.len) : 0;
    if (part < 0) {
        fd_close(fd);
        return;                  /* answered */
    }
    g.rg = part ? part == 1 : hdr_parse_range(http_req_header(r, "Range"), m->size, &g.off, &g.len);
    if (g.rg < 0) {
        fd_close(fd);
        object_headers(r, mkey, klen, cache, m);
        http_resp_header(r, "Content-Range", "bytes */%llu", (unsigned long long)m->size);
        http_reply_error(r, 416, "range not satisfiable for %llu bytes",
                         (unsigned long long)m->size);
        return;
    }
    if (mem)
        send_object(t, r, mkey, klen, cache, m, -1, &g, mem);
    else
        send_checked(t, r, mkey, klen, cache, m, fd, flags, &g);
}

/* g's bytes, once (GET_VERIFY) the blocks they are in are checked. */
static void send_checked(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                         const char *cache, struct objmeta *m, int fd, int flags,
                         const struct range *g)
{
    const char *mem = NULL;
    if (r->method != HTTP_M_HEAD && (flags & GET_VERIFY) && g->len && m->size <= SMALL_MAX) {
        if (!check_small(t, r, mkey, klen, m, fd, flags, &mem))
            return;              /* answered */
        if (g->st_known)         /* later reads of it may take these bytes */
            ocache_keep_bytes(&t->store, mkey, klen, m, &g->st, mem);
    } else if (r->method != HTTP_M_HEAD && (flags & GET_VERIFY) &&
               !check_range(t, r, mkey, klen, cache, m, fd, flags, g)) {
        return;                  /* checking on, or answered */
    }
    struct stat st;
    if (r->method != HTTP_M_HEAD && !(flags & GET_VERIFY) && !range_stat(g, fd, &st))
        vmap_forget(&st);        /* what it loads is nobody's checked */
    send_object(t, r, mkey, klen, cache, m, fd, g, mem);
}

void get_member(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, struct objmeta *m, int fd, int flags, uint64_t off,
                uint64_t size, const char *etag)
{
    struct range g = {off, size, 0, 1, off, size, "", 0, {0}};
    snprintf(g.etag, sizeof(g.etag), "%s", etag);
    uint64_t ro, rl;
    g.rg = hdr_parse_range(http_req_header(r, "Range"), size, &ro, &rl);
    if (g.rg < 0) {
        close(fd);
        http_resp_header(r, "Content-Range", "bytes */%llu", (unsigned long long)size);
        http_reply_error(r, 416, "range not satisfiable for the member's %llu bytes",
                         (unsigned long long)size);
        return;
    }
    if (g.rg > 0) {
        g.off = off + ro;
        g.len = rl;
    }
    send_checked(t, r, mkey, klen, cache, m, fd, flags, &g);
}

/* The bytes of a read, checked where they are checked: from the file,
 * or from mem (the whole object, when not NULL). Takes fd. */
static void send_object(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                        const char *cache, const struct objmeta *m, int fd, const struct range *g,
                        const char *mem)
{
    uint64_t off = g->off, len = g->len;
    int status = 200;
    if (r->method == HTTP_M_GET && xfget_asked(r)) {   /* the transform's answer instead */
        if (cache)
            atime_touch(mkey, klen);
        xfget_send(t, r, mkey, klen, cache, m, fd, off, len, mem);
        return;
    }
    if (g->member) {             /* a member: its ETag, the archive's time and cache */
        if (cache)
            http_resp_header_str(r, "X-Shoal-Cache", cache);
        http_resp_header_str(r, "ETag", g->etag);
        http_resp_header_str(r, "Content-Type", "application/octet-stream");
        char lm[64];
        time_t mt = (time_t)(m->mtime_ns / 1000000000u);
        struct tm tmv;
        strftime(lm, sizeof(lm), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&mt, &tmv));
        http_resp_header_str(r, "Last-Modified", lm);
        if (g->rg > 0) {
            status = 206;
            http_resp_header(r, "Content-Range", "bytes %llu-%llu/%llu",
                             (unsigned long long)(off - g->base),
                             (unsigned long long)(off - g->base + len - 1),
                             (unsigned long long)g->total);
        }
    } else {
        object_headers(r, mkey, klen, cache, m);
        if (target_is_s3(r))
            s3_overrides(r, m);
        else
            http_resp_header_str(r, "Content-Type",
                             m->ctype[0] ? m->ctype : "application/octet-stream");
        if (g->rg > 0) {
            status = 206;
            http_resp_header(r, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)off,
                             (unsigned long long)(off + len - 1), (unsigned long long)m->size);
        }
    }
    http_resp_begin(r, status, (int64_t)len);
    if (mem) {
        if (r->method != HTTP_M_HEAD)
            http_resp_write(r, mem + off, (size_t)len);
        fd_close(fd);
    } else {
        http_resp_file(r, fd, (int64_t)off, (int64_t)len);
    }
    http_resp_end(r);
    if (r->method != HTTP_M_HEAD) {
        node_count_bytes(&t->node, 0, len);
        targetmetrics_get(cache && !strcmp(cache, "miss"), len);
    }
}
