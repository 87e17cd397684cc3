/*
 * bsend: a target's entries of a GetBatch as frames (see bsend.h).
 *
 * Each entry: its record and data file (a file that is not there, or a
 * record marked damaged, is BSEND_ASK: the object API repairs or finds
 * it), the range asked (an archive member's, then start/length within
 * it), a check of the blocks that range touches (those not checked since
 * their pages were loaded, vmap.h), then its bytes: an inline version's
 * from its record; a large entry's as a file segment, sent with sendfile
 * where the stream goes to a plain socket (bsend_way); others read in
 * pieces, so that one large entry never holds more than a turn's bytes
 * in memory. The BMD is the one of the moment the send began.
 *
 * Thread: bsend_turn on the I/O pool; bsend_handle's driver on the
 * request's worker.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "archidx.h"
#include "batchreq.h"
#include "bmd.h"
#include "bsend.h"
#include "bsum.h"
#include "get.h"
#include "http.h"
#include "httpbody.h"
#include "iopool.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "vmap.h"
#include "xxh.h"

#define PIECE (256u << 10)
#define VBUF (1u << 20)
#define SEND_TURN (1u << 20)
#define SEND_HIGH (4u << 20)

struct bsend {
    struct target *t;
    const struct batch_req *q;
    const uint32_t *idx;
    size_t n, i;                 /* entries; the next */
    struct bmd *bmd;
    int fd;                      /* the entry being sent, or -1 */
    uint64_t off, left;
    char *vbuf;
    struct objmeta *m;           /* the entry's record, reused */
    enum bsend_way way;
    uint64_t refd;               /* this turn's BSEND_FILE bytes */
};

struct bsend *bsend_new(struct target *t, const struct batch_req *q, const uint32_t *idx,
                        size_t n)
{
    struct bsend *s = xcalloc(1, sizeof(*s));
    s->t = t;
    s->q = q;
    s->idx = idx;
    s->n = n;
    s->fd = -1;
    s->bmd = bmd_current();
    return s;
}

void bsend_set_way(struct bsend *s, enum bsend_way way)
{
    s->way = way;
}

uint64_t bsend_turn_refs(const struct bsend *s)
{
    return s->refd;
}

void bsend_free(struct bsend *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    bmd_unref(s->bmd);
    free(s->vbuf);
    free(s->m);
    free(s);
}

static void head_into(unsigned char *h, int status, uint64_t len)
{
    memset(h, 0, BSEND_HEAD);
    h[0] = 'S';
    h[1] = 'B';
    h[2] = (unsigned char)status;
    h[3] = (unsigned char)(status >> 8);
    for (int i = 0; i < 8; i++)
        h[8 + i] = (unsigned char)(len >> (8 * i));
}

static void head(struct evbuffer *out, int status, uint64_t len)
{
    unsigned char h[BSEND_HEAD];
    head_into(h, status, len);
    evbuffer_add(out, h, sizeof(h));
}

int bsend_head(const unsigned char *p, int *status, uint64_t *len)
{
    if (p[0] != 'S' || p[1] != 'B')
        return -1;
    *status = p[2] | p[3] << 8;
    *len = 0;
    for (int i = 0; i < 8; i++)
        *len |= (uint64_t)p[8 + i] << (8 * i);
    return 0;
}

static void message(struct evbuffer *out, int status, const char *msg)
{
    head(out, status, strlen(msg));
    evbuffer_add(out, msg, strlen(msg));
}

/* Are [lo, hi) of fd's bytes what m's sums say? Blocks checked since
 * their pages came from the drive are not hashed again (vmap.h), as a
 * GET's are not; member: a range of an archive, read without read-ahead
 * past it when small (get.h). */
static int checked(struct bsend *s, int fd, const struct objmeta *m, uint64_t lo, uint64_t hi,
                   int member)
{
    struct stat st;
    struct vmap_plan p;
    if (fstat(fd, &st))
        return 0;
    if (member && hi - lo <= GET_MEMBER_RANDOM_MAX)
        vmap_plan_random(fd, &st, m, lo, hi - lo, &p);
    else
        vmap_plan(fd, &st, m, lo, hi - lo, &p);
    if (p.lo == p.hi)
        return 1;
    if (!s->vbuf)
        s->vbuf = xmalloc(VBUF);
    int bad;
    if (!bsum_kept(m)) {
        void *state = NULL;
        bad = vmap_check_whole(fd, m, 0, m->size, s->vbuf, VBUF, &state);
    } else {
        bad = vmap_check(fd, m, p.lo, p.hi, s->vbuf, VBUF);
    }
    if (!bad && p.keep)
        vmap_mark(fd, &st, m, p.lo, p.hi);
    return !bad;
}

/* Entry [off, off + len) of fd (checked), taken, as a file segment
 * (bsend_way): 0, or -EIO when its head went and it could not follow. */
static int by_file(struct bsend *s, int fd, uint64_t off, uint64_t len, struct evbuffer *out)
{
    struct evbuffer_file_segment *seg = evbuffer_file_segment_new(
        fd, (ev_off_t)off, (ev_off_t)len, EVBUF_FS_CLOSE_ON_FREE | EVBUF_FS_DISABLE_LOCKING);
    if (!seg) {
        close(fd);
        message(out, BSEND_ASK, "cannot send it from here");
        return 0;
    }
    int rc = 0;
    if (s->way == BSEND_REFS) {
        head(out, BSEND_FILE, len);
        evbuffer_add(out, &seg, sizeof(seg));   /* the taker's now */
        s->refd += len;
        return 0;
    }
    head(out, BSEND_OK, len);
    if (evbuffer_add_file_segment(out, seg, 0, (ev_off_t)len))
        rc = -EIO;
    evbuffer_file_segment_free(seg);   /* the chain holds it */
    return rc;
}

/* A small object whole: its head and bytes read into out's chains at
 * once, and kept only when they hash to its checksum (verify), so a
 * small entry is read once, not once to check and once to send. */
static void whole(struct evbuffer *out, int fd, const struct objmeta *m, int verify)
{
    struct evbuffer_iovec v;
    size_t n = (size_t)m->size;
    if (evbuffer_reserve_space(out, (ev_ssize_t)(BSEND_HEAD + n), &v, 1) != 1) {
        message(out, BSEND_ASK, "no memory for it here");
        return;
    }
    char *p = v.iov_base;
    ssize_t got = n ? pread(fd, p + BSEND_HEAD, n, 0) : 0;
    if (got != (ssize_t)n || (verify && XXH3_64bits(p + BSEND_HEAD, n) != m->cksum)) {
        message(out, BSEND_ASK, "damaged here");   /* the reservation is dropped */
        return;
    }
    head_into((unsigned char *)p, BSEND_OK, n);
    v.iov_len = BSEND_HEAD + n;
    evbuffer_commit_space(out, &v, 1);
}

/* Entry e's range [*off, *off + *len) of the object's or member's: 0, or
 * -1 when it starts past the end. */
static int cut(const struct batch_entry *e, uint64_t *off, uint64_t *len)
{
    if (e->start >= 0 && (uint64_t)e->start > *len)
        return -1;
    if (e->start > 0) {
        *off += (uint64_t)e->start;
        *len -= (uint64_t)e->start;
    }
    if (e->length >= 0 && (uint64_t)e->length < *len)
        *len = (uint64_t)e->length;
    return 0;
}

static void free_bytes(const void *data, size_t len, void *hold)
{
    (void)data;
    (void)len;
    store_bytes_free(hold);
}

/* An inline version's entry from its record (store_get_bytes read its
 * bytes with it and holds them where RocksDB read them; out refers to
 * them there: no copy), checked as a whole object is: no file to open
 * or read. */
static void from_record(struct evbuffer *out, const struct batch_entry *e,
                        const struct objmeta *m, const char *bytes, void *hold, int verify)
{
    uint64_t off = 0, len = m->size;
    const char *p = bytes ? bytes : m->inl_loaded ? m->inl : NULL;
    if (!p || (verify && XXH3_64bits(p, (size_t)m->size) != m->cksum)) {
        message(out, BSEND_ASK, "damaged here");   /* the object API repairs it */
    } else if (cut(e, &off, &len)) {
        message(out, BSEND_BAD, "start is past the entry's end");
    } else {
        head(out, BSEND_OK, len);
        if (hold && len &&
            !evbuffer_add_reference(out, bytes + off, (size_t)len, free_bytes, hold))
            return;              /* out lets them go */
        evbuffer_add(out, p + off, (size_t)len);
    }
    store_bytes_free(hold);
}

/* Open entry e: a frame's head and s->fd/off/left, or a whole frame
 * (ask, missing, bad, or the entry by its file) with s->fd -1. 0, or
 * -EIO as bsend_turn's. */
static int open_entry(struct bsend *s, const struct batch_entry *e, struct evbuffer *out)
{
    const struct bmd_bucket *bk = s->bmd ? bmd_find(s->bmd, e->provider, e->bucket) : NULL;
    if (!bk) {
        message(out, BSEND_MISSING, "no such bucket");
        return 0;
    }
    if (e->transform) {          /* the object API runs it (xfget.h) */
        message(out, BSEND_ASK, "transformed through the object API");
        return 0;
    }
    size_t klen;
    char *mkey = store_mkey(e->provider, e->bucket, e->name, strlen(e->name), &klen);
    struct store *st = &s->t->store;
    struct store_mp *mp = store_pick(st, mkey, klen);
    if (!s->m)
        s->m = xmalloc(sizeof(*s->m));
    struct objmeta *m = s->m;
    int fd = -1, rc = 0;
    int verify = get_verifies(bk) != 0;
    const char *bytes = NULL;
    void *hold = NULL;           /* an archive member is read through its memory file */
    int got = e->archpath ? store_get(st, mp, mkey, klen, m)
                          : store_get_bytes(st, mp, mkey, klen, m, &bytes, &hold);
    if (got || store_is_marker(m) || (m->flags & OBJMETA_F_DAMAGED) || m->ec.d) {
        store_bytes_free(hold);
        message(out, BSEND_ASK, "not on this target's drives");
        goto out;
    }
    if (objmeta_inline(m) && !e->archpath) {
        from_record(out, e, m, bytes, hold, verify);
        goto out;
    }
    if ((fd = store_data_open_served(mp, mkey, klen, m)) < 0) {
        message(out, BSEND_ASK, "not on this target's drives");
        goto out;
    }
    uint64_t off = 0, len = m->size;
    char err[300];
    if (e->archpath) {
        int found = arch_locate(s->t, mkey, klen, m, fd, verify, e->archpath, &off, &len, err,
                                sizeof(err));
        if (found == -ENOENT || found == -EINVAL) {
            message(out, found == -ENOENT ? BSEND_MISSING : BSEND_BAD, err);
            goto out;
        }
        if (found || off == ARCHIDX_SEQ) {
            message(out, BSEND_ASK, "read by decompressing, or damaged");
            goto out;
        }
    }
    if (cut(e, &off, &len)) {
        message(out, BSEND_BAD, "start is past the entry's end");
        goto out;
    }
    struct stat fst;
    if (!verify && !fstat(fd, &fst))
        vmap_forget(&fst);       /* what it loads is nobody's checked, as a GET's */
    int by_ref = s->way != BSEND_READ && len >= BSEND_FILE_MIN;
    if (!by_ref && !bsum_kept(m) && !off && len == m->size && len <= PIECE) {
        whole(out, fd, m, verify);   /* read, checked in memory, in one go */
        goto out;
    }
    if (verify && len && !checked(s, fd, m, off, off + len, e->archpath != NULL)) {
        message(out, BSEND_ASK, "damaged here");   /* the object API repairs it */
        goto out;
    }
    if (by_ref) {
        rc = by_file(s, fd, off, len, out);
        fd = -1;
        goto out;
    }
    head(out, BSEND_OK, len);
    s->fd = fd;
    fd = -1;
    s->off = off;
    s->left = len;
out:
    if (fd >= 0)
        close(fd);
    free(mkey);
    return rc;
}

int bsend_turn(struct bsend *s, struct evbuffer *out, size_t max)
{
    s->refd = 0;
    if (s->way == BSEND_CHAINS)
        evbuffer_set_flags(out, EVBUFFER_FLAG_DRAINS_TO_FD);
    while (evbuffer_get_length(out) + s->refd < max) {
        if (s->fd < 0 && s->i >= s->n)
            return 1;
        if (s->fd < 0) {
            if (open_entry(s, &s->q->e[s->idx[s->i]], out))
                return -EIO;
            if (s->fd < 0) {
                s->i++;
                continue;
            }
        }
        size_t k = s->left < PIECE ? (size_t)s->left : PIECE;
        if (k) {
            struct evbuffer_iovec v;
            if (evbuffer_reserve_space(out, (ev_ssize_t)k, &v, 1) != 1)
                return -EIO;
            ssize_t got = pread(s->fd, v.iov_base, k, (off_t)s->off);
            if (got <= 0)
                return -EIO;     /* a head went with its length: no honest way on */
            v.iov_len = (size_t)got;
            evbuffer_commit_space(out, &v, 1);
            s->off += (uint64_t)got;
            s->left -= (uint64_t)got;
        }
        if (!s->left) {
            close(s->fd);
            s->fd = -1;
            s->i++;
        }
    }
    return 0;
}

void bsend_frames_free(struct evbuffer *frames, uint64_t skip)
{
    size_t n = evbuffer_get_length(frames);
    evbuffer_drain(frames, skip < n ? (size_t)skip : n);
    unsigned char h[BSEND_HEAD];
    int status;
    uint64_t len;
    while (evbuffer_copyout(frames, h, sizeof(h)) == (ev_ssize_t)sizeof(h) &&
           !bsend_head(h, &status, &len)) {
        evbuffer_drain(frames, sizeof(h));
        if (status == BSEND_FILE) {
            struct evbuffer_file_segment *seg;
            if (evbuffer_remove(frames, &seg, sizeof(seg)) != (int)sizeof(seg))
                break;
            evbuffer_file_segment_free(seg);
        } else {
            evbuffer_drain(frames, (size_t)len);
        }
    }
    evbuffer_drain(frames, evbuffer_get_length(frames));
}

/* ---- POST /v1/internal/batch ------------------------------------------------------- */

struct sender {
    struct target *t;
    struct http_req *r;
    struct batch_req q;
    uint32_t *idx;
    struct bsend *s;
    struct evbuffer *out;
    int rc, gone, in_pool;
};

static void sender_free(struct sender *x)
{
    if (x->r->data == x) {
        x->r->data = NULL;
        x->r->on_abort = NULL;
        x->r->on_drain = NULL;
    }
    http_req_unref(x->r);
    bsend_free(x->s);
    batchreq_free(&x->q);
    if (x->out)
        evbuffer_free(x->out);
    free(x->idx);
    free(x);
}

static void send_work(void *arg)
{
    struct sender *x = arg;
    x->rc = bsend_turn(x->s, x->out, SEND_TURN);
}

static void send_done(void *arg);

static void send_next(struct sender *x)
{
    x->in_pool = 1;
    iopool_submit(x->t->io, x->r->w->q, send_work, send_done, x);
}

static void send_drained(struct http_req *r)
{
    struct sender *x = r->data;
    if (!x->in_pool && http_resp_pending(r) < SEND_HIGH / 2) {
        r->on_drain = NULL;
        send_next(x);
    }
}

static void send_gone(struct http_req *r)
{
    struct sender *x = r->data;
    x->gone = 1;
    if (!x->in_pool)
        sender_free(x);
}

static void send_done(void *arg)
{
    struct sender *x = arg;
    x->in_pool = 0;
    if (x->gone) {
        sender_free(x);
        return;
    }
    http_resp_buffer(x->r, x->out);
    if (x->rc < 0) {
        http_resp_abort(x->r);
        sender_free(x);
    } else if (x->rc == 1) {
        http_resp_end(x->r);
        sender_free(x);
    } else if (http_resp_pending(x->r) > SEND_HIGH) {
        x->r->on_drain = send_drained;
    } else {
        send_next(x);
    }
}

static void got_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct sender *x = arg;
    char err[300];
    if (batchreq_parse(&x->q, body, len, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        http_req_unref(r);
        free(x);
        return;
    }
    x->idx = xmalloc(x->q.n * sizeof(*x->idx));
    for (size_t i = 0; i < x->q.n; i++)
        x->idx[i] = (uint32_t)i;
    x->s = bsend_new(x->t, &x->q, x->idx, x->q.n);
    if (!http_req_tls(r))        /* a large entry leaves with sendfile */
        bsend_set_way(x->s, BSEND_CHAINS);
    x->out = evbuffer_new();
    http_resp_header_str(r, "Content-Type", "application/octet-stream");
    http_resp_begin(r, 200, -1);
    r->data = x;
    r->on_abort = send_gone;
    send_next(x);
}

static void body_gone(void *arg)
{
    struct sender *x = arg;
    http_req_unref(x->r);
    free(x);
}

void bsend_handle(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    struct sender *x = xcalloc(1, sizeof(*x));
    x->t = r->w->ctx;
    x->r = r;
    http_req_ref(r);
    /* an assembler's re-encoding names every entry's provider: more bytes */
    node_read_body(r, 2 * (size_t)BATCHREQ_BODY_MAX, got_body, body_gone, x);
}
