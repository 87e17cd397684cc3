/*
 * put: a PUT's body streamed to a work file on the object's mountpath
 * (checksummed on the way, and MD5'd in S3 mode), then committed on the
 * I/O pool: store_commit for an object, after the backend has it when
 * the bucket writes through, or with its write-back record (writeback.h) when
 * it writes back; for a part of a multipart upload, the commit its
 * put_part names (mpu.c's).
 *
 * S3 mode (target_is_s3): Content-MD5 is checked before anything is
 * committed (BadDigest), the MD5 becomes the ETag, Content-Type,
 * x-amz-meta-* and x-amz-tagging are kept with the object, and the answer
 * is 200 with the ETag instead of the native JSON. An aws-chunked body
 * (a client that followed a redirect here, or signed its request to this
 * target's S3 root) is decoded on the way in (awschunk), its chunk
 * signatures checked against the request's verified signature; a body
 * that fails is refused whole, the work file dropped.
 *
 * CopyObject and UploadPartCopy (COPY_FROM_HEADER, set only by a proxy):
 * the body is the source object (a byte range of it for a part), fetched
 * from the source's target with the proxy's signed URL; CopyObject takes
 * the source's metadata and tags unless the directives say REPLACE.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

#include "auth.h"
#include "awschunk.h"
#include "backend.h"
#include "condcheck.h"
#include "bsum.h"
#include "ecode.h"
#include "ecstream.h"
#include "err.h"
#include "nodeclient.h"
#include "curlclient.h"
#include "http.h"
#include "iopool.h"
#include "mirror.h"
#include "node.h"
#include "place.h"
#include "put.h"
#include "reb.h"
#include "space.h"
#include "writeback.h"
#include "s3.h"
#include "s3ck.h"
#include "s3tag.h"
#include "target.h"
#include "md5lane.h"
#include "util.h"
#include "vers.h"
#include "xfer.h"
#include "xxh.h"

struct put {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    char *name;
    struct store_mp *mp;
    int fd;                      /* -1 once closed or handed to the commit */
    char work[PATH_MAX];
    XXH3_state_t *xs;
    struct bsum bs;              /* the block sums */
    uint64_t size;
    struct objmeta m;
    int rc;
    struct backend b;            /* write-through target, kind BK_NONE if none */
    struct put_part part;        /* num 0: a whole object */
    struct md5 *md5;             /* S3 mode: the body's MD5 makes the ETag (&lane.st) */
    int md5_lane;                /* ...hashed back from the work file (md5lane) */
    struct md5lane lane;
    int body_in;                 /* put_end came: finish once the lane caught up */
    int want_md5;                /* Content-MD5 was given */
    unsigned char md5_want[16];
    struct awschunk *chunks;     /* the body is aws-chunked: its decoder */
    struct s3ck_req ck;          /* S3's x-amz-checksum-*: checked, kept with the object */
    int64_t body_len;            /* the object's length announced, -1: not known */
    struct ecstream *ecs;        /* erasure coding the body as it comes */
    struct ecstream_out coded;   /* what it coded, for the slicing */
    int end_wait;                /* the body is in: commit once the coding turn ends */
    struct store_x cond;         /* If-None-Match and If-Match, checked at the commit */
    int dropped;                 /* put_free came during a coding or MD5 turn */
    /* CopyObject, UploadPartCopy: the body comes from the source's target */
    struct nodeclient_xfer *x; /* the source's GET, while it runs */
    int copy;
    int copy_meta;               /* take the source's metadata (COPY) */
    int copy_tags;               /* take the source's tags (COPY) */
    int src_status;
    int ranged;                  /* x-amz-copy-source-range: [first, last] */
    uint64_t first, last;
    uint64_t src_pos;            /* offset in the source of the next byte that comes */
    char *carry;                 /* the bytes short of a whole page, not written yet */
    size_t clen;
};

static void put_free(struct put *p)
{
    if ((p->ecs && ecstream_busy(p->ecs)) ||
        (p->md5_lane && md5lane_close(&p->lane))) {   /* a turn reads the work file */
        p->dropped = 1;          /* freed when it ends */
        return;
    }
    if (p->x)
        nodeclient_cancel(p->x);
    backend_free(&p->b);
    if (p->fd >= 0) {
        close(p->fd);
        if (p->work[0])          /* "": a work file in memory */
            unlink(p->work);
    }
    XXH3_freeState(p->xs);
    free(p->carry);
    bsum_deinit(&p->bs);
    awschunk_free(p->chunks);
    s3ck_req_free(&p->ck);
    ecstream_free(p->ecs);
    ecstream_out_close(&p->coded);
    target_conditions_clear(&p->cond);
    free(p->mkey);
    free(p->name);
    free(p);
}

/* The PUT ends unanswered and uncommitted: the request's hooks are
 * detached and the work file dropped; returns r for the answer (after
 * which the connection closes, the rest of the body unread). */
static struct http_req *put_drop(struct put *p)
{
    struct http_req *r = p->r;
    r->data = NULL;
    r->on_body = NULL;
    r->on_end = NULL;
    r->on_abort = NULL;
    put_free(p);
    http_resp_close(r);
    return r;
}

/* A write failed. */
static void put_fail(struct put *p, int rc)
{
    const char *dir = p->mp->dir;
    store_note_error(p->mp, rc);  /* a failing drive is disabled after a few */
    int st = err_status(rc);
    char msg[PATH_MAX + 64];
    if (st == 507)
        snprintf(msg, sizeof(msg), "out of space on mountpath %s", dir);
    else
        snprintf(msg, sizeof(msg), "cannot write object: %s", strerror(-rc));
    http_reply_error(put_drop(p), st == 507 ? 507 : 500, "%s", msg);
}

/* The aws-chunked body was refused (awschunk_feed or _finish's rc). */
static void put_refuse(struct put *p, int rc)
{
    const char *msg;
    enum s3e e = s3_chunk_error(rc, &msg);
    s3_fail(put_drop(p), e, "%s", msg);
}

static void put_go(struct put *p);

static void turn_work(void *arg)
{
    struct put *p = arg;
    ecstream_turn(p->ecs);
}

static void put_turn(struct put *p);

/* A coding turn ended: the PUT was dropped meanwhile, its body is whole
 * (on to the commit), or the next turn. */
static void put_turned(void *arg)
{
    struct put *p = arg;
    ecstream_turned(p->ecs);
    if (p->dropped)
        put_free(p);
    else if (p->end_wait)
        put_go(p);
    else if (ecstream_start(p->ecs))
        put_turn(p);
}

static void put_turn(struct put *p)
{
    iopool_submit(p->t->io, p->r->w->q, turn_work, put_turned, p);
}

#define PUT_PAGE 4096u

static int writev_all(int fd, struct iovec *v, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, v, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        while (n > 0 && (size_t)w >= v->iov_len) {
            w -= (ssize_t)v->iov_len;
            v++;
            n--;
        }
        if (n > 0) {
            v->iov_base = (char *)v->iov_base + w;
            v->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Append to the work file in whole pages: a write that ends inside a
 * page the file has not filled makes the file system zero the rest of
 * it first (a tenth of a target's CPU on a stream of odd-sized body
 * pieces). The bytes short of a page wait in p->carry for the next
 * piece, or put_flush. An erasure-coded PUT writes as it comes: its
 * coding turns read the file. 0 or -errno. */
static int file_append(struct put *p, const char *d, size_t n)
{
    struct iovec v[2];
    if (p->ecs) {
        v[0] = (struct iovec){(void *)d, n};
        return writev_all(p->fd, v, 1);
    }
    if (!p->carry)
        p->carry = xmalloc(PUT_PAGE);
    size_t total = p->clen + n, whole = total / PUT_PAGE * PUT_PAGE;
    if (!whole) {
        memcpy(p->carry + p->clen, d, n);
        p->clen += n;
        return 0;
    }
    v[0] = (struct iovec){p->carry, p->clen};
    v[1] = (struct iovec){(void *)d, whole - p->clen};
    int rc = writev_all(p->fd, p->clen ? v : v + 1, p->clen ? 2 : 1);
    if (rc)
        return rc;
    p->clen = total - whole;
    memcpy(p->carry, d + n - p->clen, p->clen);
    return 0;
}

/* What waits in p->carry into the file (the body is whole). */
static int put_flush(struct put *p)
{
    if (!p->clen)
        return 0;
    struct iovec v = {p->carry, p->clen};
    p->clen = 0;
    return writev_all(p->fd, &v, 1);
}

/*
 * An S3 body of MD5_LANE_MIN bytes or more (or of a length not known) is
 * MD5'd back from its work file by md5lane's hasher, with the other S3
 * bodies coming in at the same time; a shorter one is hashed on the loop
 * as it comes.
 */
#define MD5_LANE_MIN (256u << 10)

static void put_end_md5(struct put *p);

/* The hasher is through with p's body, met an error reading it, or let
 * it go after put_free (on p's loop). */
static void md5_done(void *arg)
{
    struct put *p = arg;
    int rc;
    if (p->dropped)
        put_free(p);
    else if (p->body_in)
        put_end_md5(p);
    else if ((rc = md5lane_wrote(&p->lane, p->size - p->clen)))
        put_fail(p, rc);
}

/* Bytes of the object into the work file: 0 or -errno. */
static int put_write(struct put *p, const char *d, size_t n)
{
    XXH3_64bits_update(p->xs, d, n);
    bsum_update(&p->bs, d, n);
    if (p->md5 && !p->md5_lane)
        md5_update(p->md5, d, n);
    s3ck_req_update(&p->ck, d, n);
    p->size += n;
    int rc = file_append(p, d, n);
    if (rc)
        return rc;
    if (p->md5_lane && (rc = md5lane_wrote(&p->lane, p->size - p->clen)))
        return rc;
    if (p->ecs && ecstream_feed(p->ecs, d, n))
        put_turn(p);
    return 0;
}

/* The aws-chunked decoder's output; a failed write stops it (1). */
static int put_chunk_out(void *arg, const char *d, size_t n)
{
    struct put *p = arg;
    p->rc = put_write(p, d, n);
    return p->rc ? 1 : 0;
}

static int put_body(struct http_req *r, const char *d, size_t n)
{
    struct put *p = r->data;
    if (p->chunks) {
        int rc = awschunk_feed(p->chunks, d, n);
        if (rc > 0)
            put_fail(p, p->rc);
        else if (rc)
            put_refuse(p, rc);
        return 0;
    }
    int rc = put_write(p, d, n);
    if (rc)
        put_fail(p, rc);
    return 0;
}

static void put_commit_work(void *arg)
{
    struct put *p = arg;
    if ((store_x_conditional(&p->cond) || p->cond.vers) &&
        (p->rc = reb_write_placed(p->t, p->mkey, p->klen)))
        return;                  /* the work file goes with p */
    int fd = p->fd;
    p->fd = -1; /* the commit closes it */
    if (p->ecs)
        ecstream_finish(p->ecs, &p->coded);   /* failed: the slicing codes it from the file */
    if (p->part.num) {
        p->rc = p->part.commit(p->t, p->mp, &p->part, p->work, fd, &p->m);
    } else if (p->b.write_back) {   /* acknowledged here; the backend gets it later */
        p->rc = writeback_commit(p->t, p->mp, p->mkey, p->klen, p->work, fd, &p->m, &p->cond);
    } else {
        p->rc = store_commit_x(&p->t->store, p->mp, p->mkey, p->klen, p->work, fd, &p->m,
                               &p->cond);
    }
}

static void put_answer(struct put *p);

static void put_spread(void *arg, int failed)
{
    struct put *p = arg;
    if (failed)                  /* committed here, owed there: not acknowledged */
        p->rc = -EAGAIN;
    put_answer(p);
}

static void put_commit_done(void *arg)
{
    struct put *p = arg;
    struct http_req *r = p->r;
    if (!p->rc && p->b.write_back && !p->part.num)
        writeback_kick(p->t);
    if (!p->rc && !p->part.num && place_spreads(p->mkey, p->klen)) {
        struct xfer_loop lp = {r->w->base, r->w->q, target_hc(r)};
        mirror_spread_coded(p->t, &lp, p->mkey, p->klen, p->m.size, 1,
                            p->coded.d ? &p->coded : NULL, put_spread, p);
        return;
    }
    put_answer(p);
}

/* The PUT's answer, once committed here and on the copy holders. */
static void put_answer(struct put *p)
{
    struct http_req *r = p->r;
    if (p->rc == -EAGAIN) {
        http_resp_header_str(r, "Retry-After", "2");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the object was written on its owner but not "
                                              "on every copy holder: try again");
    } else if (target_write_refused(r, &p->cond, p->rc)) {
        ;                        /* answered: a condition did not hold */
    } else if (p->rc) {
        int st = err_status(p->rc);
        http_reply_error(r, st, "cannot commit object: %s", strerror(-p->rc));
    } else if (p->part.num && !p->copy) {
        http_resp_header_str(r, "ETag", p->m.etag);
        target_checksum_headers(r, &p->m);
        node_count_bytes(&p->t->node, p->size, 0);
        http_reply(r, 200, NULL, NULL, 0);
    } else if (p->copy) {
        char date[40];
        const char *root = p->part.num ? "CopyPartResult" : "CopyObjectResult";
        s3_iso_date(p->part.num ? wall_ns() : p->m.mtime_ns, date, sizeof(date));
        struct gbuf b = {0};
        gbuf_str(&b, S3_XML_HEAD "<");
        gbuf_str(&b, root);
        gbuf_str(&b, " xmlns=\"" S3_NS "\">");
        const char *vid = p->part.num ? NULL : objmeta_umeta_get(&p->m, OBJMETA_VID);
        target_vid_header(r, vid);
        s3_xml_elem(&b, "LastModified", date);
        s3_xml_elem(&b, "ETag", p->m.etag);
        target_checksum_xml(&b, &p->m);
        gbuf_str(&b, "</");
        gbuf_str(&b, root);
        gbuf_str(&b, ">\n");
        node_count_bytes(&p->t->node, p->size, 0);
        http_reply(r, 200, "application/xml", b.p, b.n);
        gbuf_free(&b);
    } else if (target_is_s3(r)) {
        target_meta_headers(r, &p->m);
        node_count_bytes(&p->t->node, p->size, 0);
        http_reply(r, 200, NULL, NULL, 0);
    } else {
        char ck[17];
        snprintf(ck, sizeof(ck), "%016llx", (unsigned long long)p->m.cksum);
        target_meta_headers(r, &p->m);
        node_count_bytes(&p->t->node, p->size, 0);
        http_reply_json(r, 201,
                        json_pack("{s:s, s:s, s:I, s:s, s:I}", "bucket",
                                  strchr(p->mkey + 1, '\0') + 1, "name", p->name, "size",
                                  (json_int_t)p->m.size, "checksum", ck, "version",
                                  (json_int_t)p->m.version));
    }
    r->data = NULL;
    put_free(p);
    http_req_unref(r);
}

/* Write-through: the backend has the object (or refused it). */
static void put_backend_done(void *arg, const struct backend_obj *o)
{
    struct put *p = arg;
    struct http_req *r = p->r;
    if (o->status < 200 || o->status > 299) {
        char msg[300];
        int st = backend_status(&p->b, o, msg, sizeof(msg));
        http_reply_error(r, st, "write-through failed: %s", msg);
        r->data = NULL;
        put_free(p);
        http_req_unref(r);
        return;
    }
    snprintf(p->m.backend_etag, sizeof(p->m.backend_etag), "%s", o->etag);
    iopool_submit(p->t->io, r->w->q, put_commit_work, put_commit_done, p);
}

/* S3's checksum, checked against the one given and kept with the
 * object: 0, or 1 with r answered (400). */
static int put_checksum_end(struct put *p)
{
    char v[S3CK_VALUE_MAX];
    enum s3e e;
    const char *msg;
    if (s3ck_req_end(&p->ck, p->chunks, v, &e, &msg)) {
        s3_fail(put_drop(p), e, "%s", msg);
        return 1;
    }
    if (v[0] && target_keep_checksum(&p->m, p->ck.alg, v)) {
        s3_fail(put_drop(p), S3E_METADATA_TOO_LARGE, "the object's metadata and headers "
                                                      "leave no room for its checksum");
        return 1;
    }
    return 0;
}

static void put_end(struct http_req *r)
{
    struct put *p = r->data;
    int crc = p->chunks ? awschunk_finish(p->chunks) : 0;
    if (crc) {
        put_refuse(p, crc);
        return;
    }
    int frc = put_flush(p);
    if (frc) {
        put_fail(p, frc);
        return;
    }
    p->body_in = 1;
    put_end_md5(p);
}

/* The body is in the file: its MD5 caught up (the hasher's last turn, or
 * at once), then checked and on to the commit. */
static void put_end_md5(struct put *p)
{
    struct http_req *r = p->r;
    int mrc = p->md5_lane ? md5lane_finish(&p->lane, p->size) : 0;
    if (mrc > 0)
        return;                  /* md5_done comes back here */
    if (mrc) {
        put_fail(p, mrc);
        return;
    }
    p->m.size = p->size;
    p->m.cksum = XXH3_64bits_digest(p->xs);
    bsum_finish(&p->bs, &p->m);
    if (p->md5) {
        unsigned char md[16];
        md5_final(p->md5, md);
        if (p->want_md5 && memcmp(md, p->md5_want, 16)) {
            s3_fail(put_drop(p), S3E_BAD_DIGEST,
                    "the Content-MD5 you specified did not match what was received");
            return;
        }
        s3_md5_etag(md, p->m.etag);
    }
    if (put_checksum_end(p))
        return;                  /* answered */
    /* From here the commit owns p; a dying connection must not free it. */
    r->on_abort = NULL;
    http_req_ref(r);
    if (p->ecs && ecstream_busy(p->ecs))
        p->end_wait = 1;         /* put_turned goes on */
    else
        put_go(p);
}

/* The body is whole and checked: to the backend first when the bucket
 * writes through, then committed. */
static void put_checked(void *arg, int answered)
{
    struct put *p = arg;
    if (!answered) {
        put_go(p);
        return;
    }
    struct http_req *r = p->r;
    r->data = NULL;
    put_free(p);
    http_req_unref(r);
}

static void put_go(struct put *p)
{
    struct http_req *r = p->r;
    if (p->b.kind != BK_NONE && store_x_conditional(&p->cond)) {
        condcheck_backed(p->t, r, &p->b, p->mkey, p->klen, p->name, &p->cond, put_checked, p);
        return;                  /* its conditions are cleared once they hold */
    }
    if (backend_writable(&p->b) && !p->part.num && !p->b.write_back)
        backend_put(target_cli(r), &p->b, p->name, p->fd, (int64_t)p->size, put_backend_done,
                    p);
    else
        iopool_submit(p->t->io, r->w->q, put_commit_work, put_commit_done, p);
}

static void put_abort(struct http_req *r)
{
    struct put *p = r->data;
    r->data = NULL;
    put_free(p); /* the work file goes: nothing was committed */
}

/* S3 mode: Content-MD5 and x-amz-meta-* of a PUT. 0, or the status of
 * the error already answered. */
static int put_s3_headers(struct http_req *r, struct put *p, const json_t *props)
{
    const char *cm = http_req_header(r, "Content-MD5");
    if (cm) {
        if (s3_b64_decode(cm, p->md5_want, sizeof(p->md5_want)) != 16) {
            err_reply(r, S3E_INVALID_DIGEST, "the Content-MD5 you specified is not valid");
            return err_s3_status(S3E_INVALID_DIGEST);
        }
        p->want_md5 = 1;
    }
    p->md5 = &p->lane.st;
    md5_init(p->md5);
    int st = target_s3_meta(r, &p->m, props);
    return st ? st : target_s3_tags(r, &p->m);
}

/* aws-chunked bodies: 0 (p->chunks set when the body is one), or the
 * status of the error answered. Chunk signatures are checked against the
 * client's verified signature (r->auth); a request routed by a proxy (its
 * signature authorises it, as for a body whose SHA-256 is not checked
 * here) or served without auth_keys decodes without that check. */
static int put_chunks(struct target *t, struct put *p, struct http_req *r)
{
    uint64_t decoded;
    int is_signed;
    int st = s3_streaming(r, http_req_header(r, "x-amz-content-sha256"), &decoded, &is_signed);
    if (st <= 0)
        return st ? 400 : 0;
    const struct s3auth_result *signer = r->auth;
    if (signer && (signer->anonymous || !signer->seed_sig[0]))
        signer = NULL;
    if (is_signed && !signer && auth_enabled(&t->node.auth) && node_check_sig(&t->node, r) != 1) {
        s3_fail(r, S3E_ACCESS_DENIED, "chunk signatures need a signed request");
        return 403;
    }
    p->chunks = awschunk_new(is_signed ? signer : NULL, decoded, put_chunk_out, p);
    p->body_len = (int64_t)decoded;
    return 0;
}

/* ---- CopyObject ----------------------------------------------------------- */

static int copy_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct put *p = arg;
    p->src_status = status;
    if (status != 200 && !(p->ranged && status == 206))
        return -1;
    if (status == 206) {
        /* "bytes a-b/size": the data starts at a */
        const char *cr = nodeclient_header(x, "Content-Range");
        unsigned long long a;
        if (!cr || sscanf(cr, "bytes %llu-", &a) != 1) {
            p->src_status = 502;
            return -1;
        }
        p->src_pos = a;
    }
    if (p->copy_meta) {
        const char *ct = nodeclient_header(x, "Content-Type");
        snprintf(p->m.ctype, sizeof(p->m.ctype), "%s", ct ? ct : "");
        target_meta_reset(&p->m);   /* the request's ACL and owner, never the source's */
        int n = nodeclient_header_count(x);
        for (int i = 0; i < n; i++) {
            const char *v, *k = nodeclient_header_at(x, i, &v);
            if (strncasecmp(k, "x-amz-meta-", 11) ? target_keep_header(&p->m, k, v)
                                                  : objmeta_umeta_add(&p->m, k + 11, v))
                break;
        }
    }
    for (int a = S3CK_CRC32; !p->part.num && p->ck.alg == S3CK_NONE && a < S3CK_ALGS; a++)
        if (nodeclient_header(x, s3ck_header((enum s3ck_alg)a))) {
            p->ck.alg = (enum s3ck_alg)a;
            s3ck_init(&p->ck.run, p->ck.alg);
        }
    if (p->copy_tags) {
        const char *h = nodeclient_header(x, COPY_TAGS_HEADER);
        struct s3tags tags = {0};
        enum s3e code;
        char msg[300];
        p->m.tags_len = 0;
        if (h && !s3tag_parse_header(h, S3TAG_OBJECT_MAX, &tags, &code, msg, sizeof(msg)))
            objmeta_tags_set(&p->m, tags.pairs.p, tags.pairs.n);
        s3tags_free(&tags);
    }
    return 0;
}

/* The source's bytes; of a ranged copy, those in [first, last] (a source
 * that ignored the range sends them all). */
static int copy_data(void *arg, struct nodeclient_xfer *x, const char *d, size_t n)
{
    struct put *p = arg;
    (void)x;
    uint64_t at = p->src_pos;
    p->src_pos += n;
    if (p->ranged) {
        if (p->src_pos <= p->first || at > p->last)
            return 0;
        size_t skip = at < p->first ? (size_t)(p->first - at) : 0;
        uint64_t end = p->src_pos - 1 < p->last ? p->src_pos - 1 : p->last;
        d += skip;
        n = (size_t)(end - (at + skip) + 1);
    }
    int rc = put_write(p, d, n);
    if (rc)
        p->rc = rc;
    return rc ? -1 : 0;
}

static void copy_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct put *p = arg;
    struct http_req *r = p->r;
    (void)x;
    p->x = NULL;
    r->on_abort = NULL;
    int whole = !p->ranged || p->size == p->last - p->first + 1;
    if ((status == 200 || status == 206) && !p->rc && whole) {
        put_end(r); /* takes its own reference */
        http_req_unref(r);
        return;
    }
    int bad_range = p->ranged && !p->rc && (!whole || p->src_status == 416);
    int unmet = !p->rc && (p->src_status == 412 || p->src_status == 304);
    int denied = !p->rc && p->src_status == 403;   /* a source not public to the copier */
    int st = p->rc ? err_status(p->rc)
             : bad_range ? 400
             : unmet ? 412
             : p->src_status == 404 ? 404
             : p->src_status ? 502 : 503;
    char msg[300];
    snprintf(msg, sizeof(msg), "%s",
             p->rc ? strerror(-p->rc) : err ? err : "the source answered an error");
    r->data = NULL;
    put_free(p);
    if (unmet)
        err_reply(r, S3E_PRECONDITION_FAILED,
                  "At least one of the pre-conditions you specified did not hold");
    else if (denied)
        err_reply(r, S3E_ACCESS_DENIED, "Access Denied");
    else if (st == 404)
        err_reply(r, S3E_NO_SUCH_KEY, "the copy source does not exist");
    else if (bad_range)
        err_reply_status(r, 400, S3E_INVALID_RANGE,     /* S3's status for a copy's */
                         "The requested range is not satisfiable: x-amz-copy-source-range is "
                         "not within the source object");
    else
        http_reply_error(r, st, "copy failed: %s", msg);
    http_req_unref(r);
}

static void copy_abort(struct http_req *r)
{
    struct put *p = r->data;
    r->data = NULL;
    put_free(p); /* stops the source's transfer */
    http_req_unref(r);
}

static const struct nodeclient_ops copy_ops = {
    .on_headers = copy_headers,
    .on_data = copy_data,
    .on_done = copy_done,
};

/* UploadPartCopy's x-amz-copy-source-range, "bytes=first-last", into p:
 * 0, or 400 answered. */
static int copy_range(struct put *p, struct http_req *r)
{
    const char *h = http_req_header(r, "x-amz-copy-source-range");
    if (!h)
        return 0;
    const char *dash = strncmp(h, "bytes=", 6) ? NULL : strchr(h + 6, '-');
    if (!dash || parse_u64(h + 6, (size_t)(dash - h - 6), &p->first) ||
        parse_u64(dash + 1, strlen(dash + 1), &p->last) || p->last < p->first) {
        s3_fail(r, S3E_INVALID_ARGUMENT,
                "x-amz-copy-source-range must be bytes=first-last, first <= last");
        return 400;
    }
    if (p->last - p->first >= 5ull << 30) {
        s3_fail(r, S3E_INVALID_ARGUMENT, "a part copied is at most 5 GiB");
        return 400;
    }
    p->ranged = 1;
    return 0;
}

/* A copy's checksum: a part's is its upload's algorithm, an object's the
 * one x-amz-checksum-algorithm names, else the source's (copy_headers).
 * 0, or 400 answered (an algorithm not known). */
static int copy_checksum(struct put *p, struct http_req *r)
{
    const char *named = p->part.num ? NULL : http_req_header(r, "x-amz-checksum-algorithm");
    enum s3ck_alg a = p->part.num ? (enum s3ck_alg)p->part.ckalg : s3ck_alg_named(named);
    if (named && a == S3CK_NONE) {
        s3_fail(r, S3E_INVALID_REQUEST, "Checksum algorithm provided is unsupported.");
        return 400;
    }
    if (a != S3CK_NONE) {
        p->ck.alg = a;
        s3ck_init(&p->ck.run, a);
    }
    return 0;
}

/* r carries no body: the object (or, for a part, a range of it) is the
 * one at the signed URL `from`. */
static void copy_start(struct put *p, struct http_req *r, const char *from)
{
    const char *dir = http_req_header(r, "x-amz-metadata-directive");
    const char *tdir = http_req_header(r, "x-amz-tagging-directive");
    p->copy = 1;
    p->copy_meta = !p->part.num && (!dir || strcasecmp(dir, "REPLACE"));
    p->copy_tags = !p->part.num && (!tdir || strcasecmp(tdir, "REPLACE"));
    /* x-amz-copy-source-if-*: the source's GET answers 412 (or 304) when
     * one does not hold */
    static const char *const conds[][2] = {
        {"x-amz-copy-source-if-match", "If-Match"},
        {"x-amz-copy-source-if-none-match", "If-None-Match"},
        {"x-amz-copy-source-if-modified-since", "If-Modified-Since"},
        {"x-amz-copy-source-if-unmodified-since", "If-Unmodified-Since"},
    };
    const char *hdrs[4 + ARRAY_LEN(conds)];
    char *owned[ARRAY_LEN(conds)];
    int nh = 0, no = 0;
    char range[64];
    hdrs[nh++] = S3_MODE_HEADER ": 1";
    for (size_t i = 0; i < ARRAY_LEN(conds); i++) {
        const char *v = http_req_header(r, conds[i][0]);
        if (v)
            hdrs[nh++] = owned[no++] = xasprintf("%s: %s", conds[i][1], v);
    }
    if (p->copy_tags)
        hdrs[nh++] = COPY_TAGS_HEADER ": 1";
    if (!p->part.num && p->ck.alg == S3CK_NONE)
        hdrs[nh++] = "x-amz-checksum-mode: ENABLED";   /* its algorithm is the copy's */
    if (p->ranged) {
        snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)p->first,
                 (unsigned long long)p->last);
        hdrs[nh++] = range;
    }
    r->data = p;
    r->on_abort = copy_abort;
    http_req_ref(r); /* until copy_done */
    p->x = nodeclient_start(target_hc(r), "GET", from, hdrs, nh, -1,
                            (long)p->t->conf.backend_timeout_s * 1000, &copy_ops, p);
    while (no > 0)
        free(owned[--no]);
}

void put_object(struct target *t, struct http_req *r, const char *name,
                const struct bmd_bucket *bk, char *mkey, size_t klen,
                const struct put_part *part)
{
    struct put *p = xcalloc(1, sizeof(*p));
    backend_resolve(t, bk, &p->b);
    p->t = t;
    p->r = r;
    p->mkey = mkey;
    p->klen = klen;
    p->name = xstrdup(name);
    if (part)
        p->part = *part;
    p->mp = store_place(&t->store, mkey, klen);   /* a new version goes where HRW places it */
    char full[512];
    if ((p->b.kind == BK_NONE || p->b.write_back) &&   /* a copy that cannot be evicted */
        space_admit(t, p->mp, r->content_length > 0 ? (uint64_t)r->content_length : 0, full,
                    sizeof(full))) {
        p->fd = -1;              /* no work file yet */
        put_free(p);
        /* before any of the body: the server drops what the client still sends */
        http_reply_error(r, 507, "%s", full);
        return;
    }
    const char *from = target_is_s3(r) ? http_req_header(r, COPY_FROM_HEADER) : NULL;
    /* a whole body that its record keeps (store_commit_x) lands in memory */
    int small = !(part && part->num) && !from && t->store.inline_max &&
                r->content_length >= 0 && (uint64_t)r->content_length <= t->store.inline_max;
    p->fd = small ? store_work_open_mem(&p->m.uid, p->work, sizeof(p->work))
                  : store_work_open(p->mp, &p->m.uid, p->work, sizeof(p->work));
    if (p->fd < 0) {
        int rc = p->fd;
        p->fd = -1;
        put_free(p);
        http_reply_error(r, err_status(rc), "cannot create work file: %s", strerror(-rc));
        return;
    }
    p->xs = XXH3_createState();
    XXH3_64bits_reset(p->xs);
    bsum_init(&p->bs);
    p->body_len = r->content_length;
    const char *ct = http_req_header(r, "Content-Type");
    if (ct)
        snprintf(p->m.ctype, sizeof(p->m.ctype), "%s", ct);
    if (target_is_s3(r)) {
        int st = put_s3_headers(r, p, bk->props);
        if (!st && from && p->part.num)
            st = copy_range(p, r);
        if (!st && !from)
            st = put_chunks(t, p, r);
        if (!st && !from && s3ck_req_open(r, &p->ck, (enum s3ck_alg)p->part.ckalg))
            st = 400;
        if (!st && from)
            st = copy_checksum(p, r);
        if (st) {
            put_free(p);
            http_resp_close(r);
            return; /* answered */
        }
    }
    if (!p->part.num && !from)
        target_write_conditions(r, &p->cond);
    if (from && !p->part.num &&
        (http_req_header(r, "If-Match") || http_req_header(r, "If-None-Match"))) {
        put_free(p);
        http_resp_close(r);
        err_reply(r, S3E_NOT_IMPLEMENTED, "If-Match and If-None-Match on CopyObject's "
                                          "destination: not implemented");
        return;
    }
    if (!p->part.num)
        p->cond.vers = vers_state(bk);   /* a versioned bucket's new version */
    p->md5_lane = p->md5 && !from && (p->body_len < 0 || p->body_len >= MD5_LANE_MIN);
    if (p->md5_lane)
        md5lane_open(&p->lane, p->fd, r->w->q, md5_done, p);
    if (from) {
        /* only a proxy may point a target at another one */
        if (node_check_sig(&t->node, r) != 1) {
            put_free(p);
            http_reply_error(r, 403, "copies must come through a proxy");
            return;
        }
        copy_start(p, r, from);
        return;
    }
    if (!p->part.num && p->body_len >= 0)
        p->ecs = ecode_stream(p->mp, p->fd, p->m.uid, mkey, klen, (uint64_t)p->body_len);
    r->data = p;
    r->on_body = put_body;
    r->on_end = put_end;
    r->on_abort = put_abort;
}
