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
 * Thread: the request's worker; store_get and open are quick reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "err.h"
#include "atime.h"
#include "get.h"
#include "tmet.h"
#include "hdrparse.h"
#include "http.h"
#include "iopool.h"
#include "log.h"
#include "mparts.h"
#include "ocache.h"
#include "repair.h"
#include "s3.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

/* Conditional GET/HEAD in RFC 9110's order: 0 to go on, or 412 / 304. */
static int check_conditions(const struct http_req *r, const struct ometa *m, const char *etag)
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
static void s3_overrides(struct http_req *r, const struct ometa *m)
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
        http_resp_header(r, "Content-Type", "%s", v);
    else
        http_resp_header(r, "Content-Type", "%s", m->ctype[0] ? m->ctype : "binary/octet-stream");
    for (size_t i = 0; i < ARRAY_LEN(map); i++)
        if (http_query_get(r, map[i][0], v, sizeof(v)) >= 0)
            http_resp_header(r, map[i][1], "%s", v);
}

/* The object's metadata and an open data file: fd, or -errno; -EUCLEAN
 * when the record is there but its data file is missing or not of the
 * record's size (caught on every read: such a file is never served). */
static int open_object(struct target *t, const char *mkey, size_t klen, struct ometa *m)
{
    int fd = ocache_open(&t->store, mkey, klen, m), rc = 0;
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
        if ((fd = store_data_open(mp, mkey, klen, m->uid)) >= 0)
            break;
        rc = fd != -ENOENT ? fd : missing == m->uid ? -EUCLEAN : -EAGAIN;
        if (rc != -EAGAIN)
            break;
        missing = m->uid;
    }
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) || (uint64_t)st.st_size != m->size)) {
        close(fd);
        return -EUCLEAN;
    }
    if (fd >= 0 && !(m->flags & OMETA_F_DAMAGED))
        ocache_put(mp, gen, mkey, klen, m, fd);
    return fd >= 0 ? fd : rc;
}

/* 500 for an object whose bytes are not what its record says, logged;
 * never the bytes. */
void get_corrupted(struct http_req *r, const char *mkey, size_t klen, const char *why)
{
    char *shown = xfer_key_show(mkey, klen);
    tmet_add(TM_UNSERVED, 1);
    log_error("object %s: %s: not served", shown, why);
    err_reply(r, S3E_INTERNAL_ERROR, "ObjectCorrupted: object %s: %s on this target", shown,
              why);
    free(shown);
}

int get_verifies(const struct bmd_bucket *bk)
{
    return json_is_true(json_object_get(bk->props, "verify_reads")) ? GET_VERIFY : 0;
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

static void serve(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                  const char *cache, const struct ometa *mp, int fd);

/* ---- verify_reads: the whole file checksummed before the first byte ---------------- */

/* The file is read in turns of VERIFY_TURN bytes, each a job of its own,
 * so that a large object does not hold an I/O thread (commits, deletes
 * and listings share them) for long, and a client that left stops it. */
#define VERIFY_TURN (8u << 20)

struct verify {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    const char *cache;           /* a literal */
    struct ometa m;
    int fd;
    XXH3_state_t *xs;
    uint64_t got;
    int bad;                     /* 0, or what was wrong */
    int gone;                    /* the client left */
    int flags;                   /* get_local's */
};

static void verify_work(void *arg)
{
    struct verify *v = arg;
    char *buf = xmalloc(1 << 20);
    uint64_t end = v->got + VERIFY_TURN;
    ssize_t n = 1;
    while (v->got < v->m.size && v->got < end) {
        n = pread(v->fd, buf, 1 << 20, (off_t)v->got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        XXH3_64bits_update(v->xs, buf, (size_t)n);
        v->got += (uint64_t)n;
    }
    if (n < 0)
        v->bad = 1;
    else if (n == 0 && v->got < v->m.size)
        v->bad = 2;
    else if (v->got == v->m.size && XXH3_64bits_digest(v->xs) != v->m.cksum)
        v->bad = 3;
    free(buf);
}

static void verify_gone(struct http_req *r)
{
    struct verify *v = r->data;
    v->gone = 1;
}

static void verify_done(void *arg)
{
    struct verify *v = arg;
    static const char *const why[] = {"", "its data file cannot be read",
                                      "its data file is short",
                                      "its data does not match its checksum"};
    if (!v->gone && !v->bad && v->got < v->m.size) {
        iopool_submit(v->t->io, v->r->w->q, verify_work, verify_done, v);   /* next turn */
        return;
    }
    v->r->data = NULL;
    v->r->on_abort = NULL;
    if (v->gone || v->bad)
        close(v->fd);
    if (v->bad && !v->gone && !(v->flags & GET_NO_REPAIR) &&
        repair_read(v->t, v->r, v->mkey, v->klen, &v->m, v->flags))
        ;                        /* answered once repaired */
    else if (v->bad && !v->gone)
        get_corrupted(v->r, v->mkey, v->klen, why[v->bad]);
    else if (!v->gone)
        serve(v->t, v->r, v->mkey, v->klen, v->cache, &v->m, v->fd);
    http_req_unref(v->r);
    XXH3_freeState(v->xs);
    free(v->mkey);
    free(v);
}

static void verify_start(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                         const char *cache, const struct ometa *m, int fd, int flags)
{
    struct verify *v = xcalloc(1, sizeof(*v));
    v->flags = flags;
    v->t = t;
    v->r = r;
    v->mkey = xmalloc(klen + 1);   /* NUL-separated parts: copied whole */
    memcpy(v->mkey, mkey, klen + 1);
    v->klen = klen;
    v->cache = cache;
    v->m = *m;
    v->fd = fd;
    if (!(v->xs = XXH3_createState()))
        abort();
    XXH3_64bits_reset(v->xs);
    http_req_ref(r);
    r->data = v;
    r->on_abort = verify_gone;
    iopool_submit(t->io, r->w->q, verify_work, verify_done, v);
}

void get_local(struct target *t, struct http_req *r, const char *mkey, size_t klen,
               const char *cache, int flags)
{
    struct ometa m;
    int fd = open_object(t, mkey, klen, &m);
    get_opened(t, r, mkey, klen, cache, flags, &m, fd);
}

void get_opened(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, int flags, struct ometa *m, int fd)
{
    if (fd == -EUCLEAN) {
        if ((flags & GET_NO_REPAIR) || !repair_read(t, r, mkey, klen, m, flags))
            get_corrupted(r, mkey, klen, "its data file is missing or short");
        return;
    }
    if (fd >= 0 && (m->flags & OMETA_F_DAMAGED)) {
        close(fd);
        get_corrupted(r, mkey, klen, "a scrub found its data damaged, with no other copy");
        return;
    }
    if (fd >= 0 && store_is_marker(m)) {   /* a versioned bucket's deleted name */
        close(fd);
        http_resp_header(r, "x-amz-delete-marker", "true");
        http_resp_header(r, "x-amz-version-id", "%s", store_vid(m));
        err_reply(r, S3E_NO_SUCH_KEY, "The specified key does not exist.");
        return;
    }
    if (fd == -EAGAIN) {         /* rewritten again and again while we looked */
        http_resp_header(r, "Retry-After", "1");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the object is being rewritten; try again");
        return;
    }
    if (fd < 0) {
        if (fd == -ENOENT)
            http_reply_error(r, 404, "object not found");
        else
            http_reply_error(r, 500, "cannot read object: %s", strerror(-fd));
        return;
    }
    if (r->method != HTTP_M_HEAD && (flags & GET_VERIFY)) {
        verify_start(t, r, mkey, klen, cache, m, fd, flags);
        return;
    }
    serve(t, r, mkey, klen, cache, m, fd);
}

/* The rest of a read, with the object's record and open file. */
static void serve(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                  const char *cache, const struct ometa *m, int fd)
{
    uint64_t off = 0, len = m->size;
    char pq[4];
    if (http_query_get(r, "shoal_public", pq, sizeof(pq)) != -1 && !target_acl_public(m)) {
        close(fd);               /* the record served decides, not one looked at before */
        err_reply(r, S3E_ACCESS_DENIED, "Access Denied");
        return;
    }
    if (cache)
        http_resp_header(r, "X-Shoal-Cache", "%s", cache);
    if (cache && r->method != HTTP_M_HEAD)
        atime_touch(mkey, klen); /* a backed bucket's copy: its place in the LRU order */
    target_meta_headers(r, m);
    char etag[OMETA_ETAG_MAX + 1];
    ometa_etag(m, etag, sizeof(etag));
    int cond = check_conditions(r, m, etag);
    if (cond) {
        close(fd);
        reply_condition(r, cond);
        return;
    }
    int part = target_is_s3(r) ? mparts_range(r, m, &off, &len) : 0;
    if (part < 0) {
        close(fd);
        return;                  /* answered */
    }
    int rg = part ? part == 1 : hdr_parse_range(http_req_header(r, "Range"), m->size, &off, &len);
    if (rg < 0) {
        close(fd);
        http_resp_header(r, "Content-Range", "bytes */%llu", (unsigned long long)m->size);
        http_reply_error(r, 416, "range not satisfiable for %llu bytes",
                         (unsigned long long)m->size);
        return;
    }
    if (target_is_s3(r))
        s3_overrides(r, m);
    else
        http_resp_header(r, "Content-Type", "%s", m->ctype[0] ? m->ctype : "application/octet-stream");
    int status = 200;
    if (rg > 0) {
        status = 206;
        http_resp_header(r, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)off,
                         (unsigned long long)(off + len - 1), (unsigned long long)m->size);
    }
    http_resp_begin(r, status, (int64_t)len);
    http_resp_file(r, fd, (int64_t)off, (int64_t)len);
    http_resp_end(r);
    if (r->method != HTTP_M_HEAD) {
        node_count_bytes(&t->node, 0, len);
        tmet_get(cache && !strcmp(cache, "miss"), len);
    }
}
