/*
 * mpu: S3 multipart uploads, kept by the target that owns the final
 * object, on the mountpath the object will live on.
 *
 *   RocksDB "u<id>"          the upload: {"bucket","name","ctype","meta",
 *                            "tags","initiated","initiator"} (meta: the x-amz-meta-*,
 *                            tags: the x-amz-tagging given at creation;
 *                            "ckalg","cktype": its checksum, mpuchecksum.h)
 *   RocksDB "d<id>"          a completed upload: {"bucket","name","done",
 *                            "initiated"}, what a retried completion is
 *                            answered, until the expiry (mpuexp.c)
 *   RocksDB "p<id>/<00001>"  a part: {"size","etag","mtime"}
 *   mpu/<id>/<n>             a part's bytes
 *
 * A part is streamed to a work file like any PUT (put.c), then renamed
 * into mpu/<id>/ with its record. Completion checks the list the client
 * sends (ascending numbers, each part present with that ETag, every part
 * but the last at least 5 MiB), then on the I/O pool copies the parts into
 * one work file, checksumming it, writes it through to the backend when
 * the bucket has one, commits it like a PUT with the ETag S3 gives
 * multipart objects (MD5 of the parts' MD5s, "-N"), and drops the parts.
 * Part bytes never pass through memory whole: 1 MiB at a time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "condcheck.h"
#include "bsum.h"
#include "err.h"
#include "http.h"
#include "iopool.h"
#include "mirror.h"
#include "mpu.h"
#include "place.h"
#include "reb.h"
#include "partsizes.h"
#include "mpuchecksum.h"
#include "node.h"
#include "put.h"
#include "s3.h"
#include "s3tag.h"
#include "s3xml.h"
#include "target.h"
#include "util.h"
#include "vers.h"
#include "xfer.h"
#include "writeback.h"
#include "xxh.h"

#define PART_MIN (5u << 20)      /* every part but the last, as S3 */
#define PARTS_MAX 10000
#define COMPLETE_BODY_MAX (2u << 20)
#define COPY_CHUNK (1u << 20)

static const char S3_NS_ATTR[] = " xmlns=\"" S3_NS "\"";

/* "u<id>": an upload's record; "d<id>": a completed one's (kind 'd'). */
static char *record_key(char kind, const char *id, size_t *kl)
{
    char *k = xasprintf("%c%s", kind, id);
    *kl = strlen(k);
    return k;
}

static char *part_key(const char *id, int num, size_t *kl)
{
    char *k = xasprintf("p%s/%05d", id, num);
    *kl = strlen(k);
    return k;
}

static void part_path(const struct store_mp *mp, const char *id, int num, char *out, size_t n)
{
    if (num)
        snprintf(out, n, "%s/mpu/%s/%d", mp->dir, id, num);
    else
        snprintf(out, n, "%s/mpu/%s", mp->dir, id);
}

/* The upload's record (kind 'u'), or a completed one's ('d'), checked
 * against the object it was made for. */
static json_t *record_get(struct target *t, struct store_mp *mp, char kind, const char *id,
                          const char *bucket, const char *name)
{
    size_t kl, vl;
    char *k = record_key(kind, id, &kl), *v;
    int rc = store_kv_get(&t->store, mp, k, kl, &v, &vl);
    free(k);
    if (rc)
        return NULL;
    json_t *j = json_loadb(v, vl, 0, NULL);
    free(v);
    if (!j || strcmp(json_string_value(json_object_get(j, "bucket")) ?: "", bucket) ||
        strcmp(json_string_value(json_object_get(j, "name")) ?: "", name)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int valid_id(const char *id)
{
    size_t n = strlen(id);
    return n == 32 && strspn(id, "0123456789abcdef") == n;
}

static const char *mkey_bucket(const char *mkey)
{
    return strchr(mkey + 1, '\0') + 1;
}

static void no_upload(struct http_req *r, const char *id)
{
    err_reply(r, S3E_NO_SUCH_UPLOAD, "the specified multipart upload %s does not exist", id);
}

/* ---- create ------------------------------------------------------------------ */

static void create(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                   const char *name, const char *mkey, size_t klen)
{
    struct store_mp *mp = store_pick(&t->store, mkey, klen);
    unsigned char raw[16];
    char id[33];
    rand_bytes(raw, sizeof(raw));
    hex_encode(raw, sizeof(raw), id);
    /* the same metadata rules as a PUT, checked now rather than at completion */
    struct objmeta *scratch = xcalloc(1, sizeof(*scratch));
    if (target_s3_meta(r, scratch, bk->props) || target_s3_tags(r, scratch)) {
        free(scratch);
        return;
    }
    char *tags = s3tag_header(scratch->tags, scratch->tags_len);
    json_t *meta = json_object();
    for (size_t off = 0; off < scratch->umeta_len;) {
        const char *k = scratch->umeta + off, *v = k + strlen(k) + 1;
        json_object_set_new(meta, k, json_string(v));
        off = (size_t)(v - scratch->umeta) + strlen(v) + 1;
    }
    free(scratch);
    const char *ct = http_req_header(r, "Content-Type");
    json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:s, s:I}", "bucket", mkey_bucket(mkey), "name",
                          name, "ctype", ct ? ct : "", "meta", meta, "tags", tags, "initiated",
                          (json_int_t)wall_ns());
    free(tags);
    char wbuf[160];
    const char *writer = target_writer(r, wbuf, sizeof(wbuf));
    if (writer)                  /* ListMultipartUploads' Initiator */
        json_object_set_new(j, "initiator", json_string(writer));
    if (mpuchecksum_create(r, j)) {
        json_decref(j);
        return;
    }
    char *v = json_dumps(j, JSON_COMPACT);
    size_t kl;
    char *k = record_key('u', id, &kl);
    int rc = store_kv_put(&t->store, mp, k, kl, v, strlen(v));
    free(k);
    free(v);
    if (!rc)
        mpuchecksum_create_headers(r, j);
    json_decref(j);
    if (rc) {
        http_reply_error(r, err_status(rc), "cannot record the upload: %s",
                         strerror(-rc));
        return;
    }
    struct gbuf b = {0};
    gbuf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult");
    gbuf_str(&b, S3_NS_ATTR);
    gbuf_str(&b, ">");
    s3_xml_elem(&b, "Bucket", mkey_bucket(mkey));
    s3_xml_elem(&b, "Key", name);
    s3_xml_elem(&b, "UploadId", id);
    gbuf_str(&b, "</InitiateMultipartUploadResult>\n");
    http_reply(r, 200, "application/xml", b.p, b.n);
    gbuf_free(&b);
}

/* ---- parts ------------------------------------------------------------------- */

/* I/O pool: a part's finished work file becomes part->num of its upload
 * (put_part's commit). */
static int part_commit(struct target *t, struct store_mp *mp, const struct put_part *part,
                       const char *work, int fd, const struct objmeta *m)
{
    int rc = 0;
    if (t->store.fsync && fdatasync(fd))
        rc = -errno;
    if (close(fd) && !rc)
        rc = -errno;
    char dir[PATH_MAX], path[PATH_MAX];
    part_path(mp, part->upload, 0, dir, sizeof(dir));
    part_path(mp, part->upload, part->num, path, sizeof(path));
    if (!rc)
        rc = mkdir_p(dir, 0755);
    if (!rc && rename(work, path))
        rc = -errno;
    if (rc) {
        unlink(work);
        return rc;
    }
    json_t *j = json_pack("{s:I, s:s, s:I}", "size", (json_int_t)m->size, "etag", m->etag,
                          "mtime", (json_int_t)wall_ns());
    mpuchecksum_part_record(j, m);
    char *v = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    size_t kl;
    char *k = part_key(part->upload, part->num, &kl);
    rc = store_kv_put(&t->store, mp, k, kl, v, strlen(v));
    free(k);
    free(v);
    return rc;
}

static int part_number(struct http_req *r, int *num)
{
    char v[16];
    uint64_t n;
    if (http_query_get(r, "partNumber", v, sizeof(v)) < 0 || parse_u64(v, strlen(v), &n) ||
        n < 1 || n > PARTS_MAX) {
        err_reply(r, S3E_INVALID_ARGUMENT, "partNumber must be an integer from 1 to %d",
                  PARTS_MAX);
        return -1;
    }
    *num = (int)n;
    return 0;
}

/* ---- list parts -------------------------------------------------------------- */

struct plist {
    struct gbuf b;
    int marker, max, count, last, truncated;
};

static int plist_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct plist *l = arg;
    int num = atoi(k + kl - 5);
    if (num <= l->marker)
        return 0;
    if (l->count == l->max) {
        l->truncated = 1;
        return 1;
    }
    json_t *j = json_loadb(v, vl, 0, NULL);
    char date[40], size[24], n[16];
    s3_iso_date((uint64_t)json_integer_value(json_object_get(j, "mtime")), date, sizeof(date));
    snprintf(size, sizeof(size), "%lld", (long long)json_integer_value(json_object_get(j, "size")));
    snprintf(n, sizeof(n), "%d", num);
    gbuf_str(&l->b, "<Part>");
    s3_xml_elem(&l->b, "PartNumber", n);
    s3_xml_elem(&l->b, "LastModified", date);
    s3_xml_elem(&l->b, "ETag", json_string_value(json_object_get(j, "etag")) ?: "");
    s3_xml_elem(&l->b, "Size", size);
    mpuchecksum_part_xml(&l->b, j);
    gbuf_str(&l->b, "</Part>");
    json_decref(j);
    l->count++;
    l->last = num;
    return 0;
}

static void list_parts(struct target *t, struct http_req *r, const char *id, const char *name,
                       const char *mkey, size_t klen)
{
    struct store_mp *mp = store_pick(&t->store, mkey, klen);
    json_t *u = record_get(t, mp, 'u', id, mkey_bucket(mkey), name);
    if (!u) {
        no_upload(r, id);
        return;
    }
    struct plist l = {.max = 1000};
    char v[16];
    uint64_t n;
    if (http_query_get(r, "max-parts", v, sizeof(v)) >= 0 && !parse_u64(v, strlen(v), &n))
        l.max = n > 1000 ? 1000 : (int)n;
    if (http_query_get(r, "part-number-marker", v, sizeof(v)) >= 0 &&
        !parse_u64(v, strlen(v), &n) && n <= PARTS_MAX)
        l.marker = (int)n;
    char *pre = xasprintf("p%s/", id);
    store_kv_scan(&t->store, mp, pre, strlen(pre), plist_one, &l);
    free(pre);
    struct gbuf b = {0};
    char num[16];
    gbuf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListPartsResult");
    gbuf_str(&b, S3_NS_ATTR);
    gbuf_str(&b, ">");
    s3_xml_elem(&b, "Bucket", mkey_bucket(mkey));
    s3_xml_elem(&b, "Key", name);
    s3_xml_elem(&b, "UploadId", id);
    snprintf(num, sizeof(num), "%d", l.marker);
    s3_xml_elem(&b, "PartNumberMarker", num);
    snprintf(num, sizeof(num), "%d", l.last);
    s3_xml_elem(&b, "NextPartNumberMarker", num);
    snprintf(num, sizeof(num), "%d", l.max);
    s3_xml_elem(&b, "MaxParts", num);
    s3_xml_elem(&b, "IsTruncated", l.truncated ? "true" : "false");
    s3_xml_elem(&b, "StorageClass", "STANDARD");
    if (mpuchecksum_alg(u) != S3CK_NONE) {
        s3_xml_elem(&b, "ChecksumAlgorithm", s3ck_name(mpuchecksum_alg(u)));
        s3_xml_elem(&b, "ChecksumType", json_string_value(json_object_get(u, "cktype")) ?: "");
    }
    json_decref(u);
    gbuf_add(&b, l.b.p, l.b.n);
    gbuf_str(&b, "</ListPartsResult>\n");
    http_reply(r, 200, "application/xml", b.p, b.n);
    gbuf_free(&b);
    gbuf_free(&l.b);
}

/* ---- abort ------------------------------------------------------------------- */

static int drop_part_record(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)v;
    (void)vl;
    struct gbuf *keys = arg;
    gbuf_add(keys, &kl, sizeof(kl));
    gbuf_add(keys, k, kl);
    return 0;
}

void mpu_drop(struct target *t, struct store_mp *mp, const char *id)
{
    struct gbuf keys = {0};
    char *pre = xasprintf("p%s/", id);
    store_kv_scan(&t->store, mp, pre, strlen(pre), drop_part_record, &keys);
    free(pre);
    for (size_t off = 0; off < keys.n;) {
        size_t kl;
        memcpy(&kl, keys.p + off, sizeof(kl));
        store_kv_del(&t->store, mp, keys.p + off + sizeof(kl), kl);
        off += sizeof(kl) + kl;
    }
    gbuf_free(&keys);
    char dir[PATH_MAX];
    part_path(mp, id, 0, dir, sizeof(dir));
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.')
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
        rmdir(dir);
    }
    size_t kl;
    char *k = record_key('u', id, &kl);
    store_kv_del(&t->store, mp, k, kl);
    free(k);
}

struct completion {
    struct target *t;
    struct http_req *r;
    struct store_mp *mp;
    char id[33];
    char *name;
    char *mkey;
    size_t klen;
    json_t *upload;
    /* complete */
    int *nums;
    char **etags;
    char **cks;                  /* each part's checksum as listed, NULL: none */
    enum s3ck_alg *ck_algs;
    int n;
    struct mpuchecksum_join jn;  /* the object's checksum */
    enum s3ck_alg want_alg;      /* a FULL_OBJECT value the client gave, S3CK_NONE: none */
    char want[S3CK_VALUE_MAX];
    int status;                  /* error to answer, 0 none */
    const char *code;            /* its S3 code (err.h), NULL: the status's */
    char msg[300];
    int fd;
    char work[PATH_MAX];
    struct objmeta m;
    struct backend b;
    struct store_x cond;         /* If-None-Match, If-Match: checked at the commit */
    int rc;
    json_t *done;                /* committed: what the answer (and a retry's) says */
};

static void completion_free(struct completion *j)
{
    if (j->fd >= 0) {
        close(j->fd);
        unlink(j->work);
    }
    for (int i = 0; i < j->n; i++) {
        free(j->etags[i]);
        free(j->cks[i]);
    }
    free(j->etags);
    free(j->cks);
    free(j->ck_algs);
    mpuchecksum_join_free(&j->jn);
    json_decref(j->done);
    free(j->nums);
    json_decref(j->upload);
    backend_free(&j->b);
    target_conditions_clear(&j->cond);
    free(j->name);
    free(j->mkey);
    http_req_unref(j->r);
    free(j);
}

static void abort_work(void *arg)
{
    struct completion *j = arg;
    mpu_drop(j->t, j->mp, j->id);
}

static void abort_done(void *arg)
{
    struct completion *j = arg;
    http_reply(j->r, 204, NULL, NULL, 0);
    completion_free(j);
}

/* ---- complete ------------------------------------------------------------------ */

static int complete_part(void *arg, char **f, char *err, size_t errlen)
{
    struct completion *j = arg;
    uint64_t n;
    if (!f[0] || !f[1] || parse_u64(f[0], strlen(f[0]), &n) || n < 1 || n > PARTS_MAX) {
        snprintf(err, errlen, "each Part needs a PartNumber (1..%d) and an ETag", PARTS_MAX);
        return -1;
    }
    if (j->n && (int)n == j->nums[j->n - 1]) {
        /* a part number named again: its last entry is the one that counts
         * (the part was re-sent, and the later upload is what is kept) */
        j->n--;
        free(j->etags[j->n]);
        free(j->cks[j->n]);
    } else if (j->n && (int)n < j->nums[j->n - 1]) {
        j->status = err_s3_status(S3E_INVALID_PART_ORDER);
        j->code = err_s3_name(S3E_INVALID_PART_ORDER);
        snprintf(err, errlen, "the list of parts was not in ascending order");
        return -1;
    }
    j->nums = xrealloc(j->nums, sizeof(int) * (size_t)(j->n + 1));
    j->etags = xrealloc(j->etags, sizeof(char *) * (size_t)(j->n + 1));
    j->cks = xrealloc(j->cks, sizeof(char *) * (size_t)(j->n + 1));
    j->ck_algs = xrealloc(j->ck_algs, sizeof(enum s3ck_alg) * (size_t)(j->n + 1));
    j->nums[j->n] = (int)n;
    j->cks[j->n] = NULL;
    j->ck_algs[j->n] = S3CK_NONE;
    for (int a = S3CK_CRC32; a < S3CK_ALGS; a++)   /* f[2..]: the Checksum* elements */
        if (f[1 + a] && !j->cks[j->n]) {
            j->cks[j->n] = xstrdup(f[1 + a]);
            j->ck_algs[j->n] = (enum s3ck_alg)a;
        }
    j->etags[j->n++] = xstrdup(f[1]);
    return 0;
}

/* An ETag without its quotes, for comparing. */
static size_t etag_core(const char *e, const char **start)
{
    size_t n = strlen(e);
    if (n >= 2 && e[0] == '"' && e[n - 1] == '"') {
        *start = e + 1;
        return n - 2;
    }
    *start = e;
    return n;
}

static int same_etag(const char *a, const char *b)
{
    const char *x, *y;
    size_t xl = etag_core(a, &x), yl = etag_core(b, &y);
    return xl == yl && !strncasecmp(x, y, xl);
}

/* The upload cannot be completed: j's error is e (complete_refuse), or a
 * failure's status with its default code (complete_fail). fmt takes a
 * string (arg) and a part number. */
static void complete_fail(struct completion *j, int status, const char *fmt, const char *arg,
                          int num)
{
    j->status = status;
    j->code = NULL;
    snprintf(j->msg, sizeof(j->msg), fmt, arg, num);
}

static void complete_refuse(struct completion *j, enum s3e e, const char *fmt, const char *arg,
                            int num)
{
    complete_fail(j, err_s3_status(e), fmt, arg, num);
    j->code = err_s3_name(e);
}

/* Part i of the list against its record: the ETag must match, and every
 * part but the last must be at least PART_MIN. Its MD5 goes into md (the
 * object's ETag is the MD5 of the parts' MD5s). The part's size, or -1
 * with j's error set. */
static int64_t part_check(struct completion *j, int i, EVP_MD_CTX *md)
{
    size_t kl, vl;
    char *k = part_key(j->id, j->nums[i], &kl), *v = NULL;
    int rc = store_kv_get(&j->t->store, j->mp, k, kl, &v, &vl);
    free(k);
    json_t *pj = rc ? NULL : json_loadb(v, vl, 0, NULL);
    free(v);
    const char *etag = pj ? json_string_value(json_object_get(pj, "etag")) : NULL;
    uint64_t size = pj ? (uint64_t)json_integer_value(json_object_get(pj, "size")) : 0;
    if (!etag || !same_etag(etag, j->etags[i])) {
        json_decref(pj);
        complete_refuse(j, S3E_INVALID_PART,
                        "one or more of the specified parts could not be found or its "
                        "ETag did not match%s (part %d)", "", j->nums[i]);
        return -1;
    }
    const char *why;
    if (mpuchecksum_join_part(&j->jn, pj, j->ck_algs[i], j->cks[i], &why)) {
        json_decref(pj);
        complete_refuse(j, S3E_INVALID_PART, "%s (part %d)", why, j->nums[i]);
        return -1;
    }
    if (i < j->n - 1 && size < PART_MIN) {
        json_decref(pj);
        complete_refuse(j, S3E_ENTITY_TOO_SMALL,
                        "your proposed upload is smaller than the minimum allowed size%s "
                        "(part %d is under 5 MiB and not the last)", "", j->nums[i]);
        return -1;
    }
    const char *hex;
    size_t hl = etag_core(etag, &hex);
    unsigned char bin[16];
    for (size_t b = 0; b < 16 && 2 * b + 1 < hl; b++) {
        unsigned v2;
        sscanf(hex + 2 * b, "%2x", &v2);
        bin[b] = (unsigned char)v2;
    }
    EVP_DigestUpdate(md, bin, 16);
    json_decref(pj);
    return (int64_t)size;
}

/* Part i's size bytes appended to the work file (and to xs and bs),
 * COPY_CHUNK at a time through buf. 0, or -1 with j's error set. */
static int part_append(struct completion *j, int i, uint64_t size, XXH3_state_t *xs,
                       struct bsum *bs, char *buf)
{
    char path[PATH_MAX];
    part_path(j->mp, j->id, j->nums[i], path, sizeof(path));
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        complete_refuse(j, S3E_INVALID_PART, "part data is missing%s (part %d)", "",
                        j->nums[i]);
        return -1;
    }
    uint64_t left = size;
    while (left > 0) {
        ssize_t got = read(in, buf, left < COPY_CHUNK ? left : COPY_CHUNK);
        if (got <= 0) {
            close(in);
            complete_fail(j, 500, "cannot read a part%s (part %d)", "", j->nums[i]);
            return -1;
        }
        XXH3_64bits_update(xs, buf, (size_t)got);
        bsum_update(bs, buf, (size_t)got);
        mpuchecksum_join_data(&j->jn, buf, (size_t)got);
        for (ssize_t off = 0; off < got;) {
            ssize_t w = write(j->fd, buf + off, (size_t)(got - off));
            if (w < 0) {
                close(in);
                complete_fail(j, err_status(-errno), "cannot write the object%s (part %d)", "",
                              j->nums[i]);
                return -1;
            }
            off += w;
        }
        left -= (uint64_t)got;
    }
    close(in);
    return 0;
}

/* The object's Content-Type, user metadata and tags, from the upload's
 * record. */
static void upload_meta(struct completion *j)
{
    snprintf(j->m.ctype, sizeof(j->m.ctype), "%s",
             json_string_value(json_object_get(j->upload, "ctype")) ?: "");
    const char *mk;
    json_t *mv;
    json_object_foreach(json_object_get(j->upload, "meta"), mk, mv) {
        if (objmeta_umeta_add(&j->m, mk, json_string_value(mv) ?: ""))
            break;
    }
    struct s3tags tags = {0};
    enum s3e code;
    char msg[300];
    /* checked at creation; an upload recorded before tags were kept has none */
    if (!s3tag_parse_header(json_string_value(json_object_get(j->upload, "tags")) ?: "",
                            S3TAG_OBJECT_MAX, &tags, &code, msg, sizeof(msg)))
        objmeta_tags_set(&j->m, tags.pairs.p, tags.pairs.n);
    s3tags_free(&tags);
}

/* I/O pool: check the parts and join them into one work file. */
static void assemble_work(void *arg)
{
    struct completion *j = arg;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_md5(), NULL);
    XXH3_state_t *xs = XXH3_createState();
    XXH3_64bits_reset(xs);
    struct bsum bs;
    bsum_init(&bs);
    char *buf = xmalloc(COPY_CHUNK);
    uint64_t *sizes = xmalloc(sizeof(*sizes) * (size_t)j->n);
    mpuchecksum_join_start(&j->jn, j->upload);
    j->fd = store_work_open(j->mp, &j->m.uid, j->work, sizeof(j->work));
    if (j->fd < 0) {
        int rc = j->fd;
        j->fd = -1;
        complete_fail(j, err_status(rc), "cannot create a work file%s%.0d", "", 0);
        goto out;
    }
    uint64_t total = 0;
    for (int i = 0; i < j->n; i++) {
        int64_t size = part_check(j, i, md);
        if (size < 0 || part_append(j, i, (uint64_t)size, xs, &bs, buf))
            goto out;
        total += (uint64_t)size;
        sizes[i] = (uint64_t)size;
    }
    unsigned char d[16];
    char hex[33];
    EVP_DigestFinal_ex(md, d, NULL);
    hex_encode(d, 16, hex);
    snprintf(j->m.etag, sizeof(j->m.etag), "\"%s-%d\"", hex, j->n);
    j->m.size = total;
    j->m.cksum = XXH3_64bits_digest(xs);
    bsum_finish(&bs, &j->m);
    upload_meta(j);
    if (mpuchecksum_join_end(&j->jn, &j->m)) {
        complete_refuse(j, S3E_METADATA_TOO_LARGE, "the object's metadata and headers leave "
                        "no room for its checksum%s%.0d", "", 0);
        goto out;
    }
    partsizes_keep(&j->m, sizes, j->n);
    enum s3ck_alg a;
    const char *got = target_checksum_of(&j->m, &a);
    if (j->want_alg != S3CK_NONE && (!got || a != j->want_alg || strcmp(got, j->want)))
        complete_refuse(j, S3E_BAD_DIGEST, "the checksum you specified did not match the "
                        "calculated checksum%s%.0d", "", 0);
out:
    free(buf);
    free(sizes);
    XXH3_freeState(xs);
    bsum_deinit(&bs);
    EVP_MD_CTX_free(md);
}

/* I/O pool: a completed upload's record, once its object is committed
 * here and on its copy holders: what a retried CompleteMultipartUpload is
 * answered (SDKs retry one that timed out), until the expiry (mpuexp.c)
 * drops it. */
static void upload_done(void *arg)
{
    struct completion *j = arg;
    enum s3ck_alg a;
    const char *ck = target_checksum_of(&j->m, &a);
    j->done = json_pack("{s:s, s:s?, s:s?}", "etag", j->m.etag, "ckalg",
                        ck ? s3ck_name(a) : NULL, "ck", ck);
    json_t *u = json_pack("{s:s, s:s, s:O, s:I}", "bucket", mkey_bucket(j->mkey), "name",
                          j->name, "done", j->done, "initiated", (json_int_t)wall_ns());
    char *v = json_dumps(u, JSON_COMPACT);
    json_decref(u);
    size_t kl;
    char *k = record_key('d', j->id, &kl);
    store_kv_put(&j->t->store, j->mp, k, kl, v, strlen(v));   /* best effort: a retry
                                                                * without it is 404 */
    free(k);
    free(v);
}

/* I/O pool: the joined object becomes the object; its parts go. */
static void commit_work(void *arg)
{
    struct completion *j = arg;
    if ((store_x_conditional(&j->cond) || j->cond.vers) &&
        (j->rc = reb_write_placed(j->t, j->mkey, j->klen)))
        return;                  /* the work file goes with j */
    int fd = j->fd;
    j->fd = -1; /* store_commit closes it */
    if (j->b.write_back)         /* acknowledged here, with its record (writeback.h) */
        j->rc = writeback_commit(j->t, j->mp, j->mkey, j->klen, j->work, fd, &j->m, &j->cond);
    else
        j->rc = store_commit_x(&j->t->store, j->mp, j->mkey, j->klen, j->work, fd, &j->m,
                               &j->cond);
    if (!j->rc)
        mpu_drop(j->t, j->mp, j->id);
}

static void complete_answer(struct completion *j);
static void complete_reply(struct http_req *r, const char *mkey, const char *name,
                           const json_t *done);

static void done_recorded(void *arg)
{
    complete_answer(arg);
}

static void complete_spread(void *arg, int failed)
{
    struct completion *j = arg;
    if (failed) {                /* committed here, owed there: not acknowledged */
        j->rc = -EAGAIN;
        complete_answer(j);
        return;
    }
    iopool_submit(j->t->io, j->r->w->q, upload_done, done_recorded, j);
}

static void commit_done(void *arg)
{
    struct completion *j = arg;
    struct http_req *r = j->r;
    if (!j->rc && place_spreads(j->mkey, j->klen)) {
        struct xfer_loop lp = {r->w->base, r->w->q, target_hc(r)};
        mirror_spread(j->t, &lp, j->mkey, j->klen, j->m.size, 1, complete_spread, j);
        return;
    }
    if (j->rc)
        complete_answer(j);
    else
        complete_spread(j, 0);
}

/* CompleteMultipartUpload's answer, once committed here and on the copy
 * holders. */
static void complete_answer(struct completion *j)
{
    struct http_req *r = j->r;
    if (j->rc == -EAGAIN) {
        http_resp_header_str(r, "Retry-After", "2");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the object was written on its owner but not on "
                                            "every copy holder: try again");
    } else if (target_write_refused(r, &j->cond, j->rc)) {
        ;                        /* answered: a condition did not hold */
    } else if (j->rc) {
        http_reply_error(r, err_status(j->rc), "cannot commit the object: %s",
                         strerror(-j->rc));
    } else {
        if (j->b.write_back)
            writeback_kick(j->t);
        node_count_bytes(&j->t->node, j->m.size, 0);
        const char *vid = objmeta_umeta_get(&j->m, OBJMETA_VID);
        target_vid_header(r, vid);
        complete_reply(r, j->mkey, j->name, j->done);
    }
    completion_free(j);
}

/* CompleteMultipartUploadResult, from the upload's record once done. */
static void complete_reply(struct http_req *r, const char *mkey, const char *name,
                           const json_t *done)
{
    struct gbuf b = {0};
    gbuf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult");
    gbuf_str(&b, S3_NS_ATTR);
    gbuf_str(&b, ">");
    char *loc = xasprintf("/%s/%s", mkey_bucket(mkey), name);
    s3_xml_elem(&b, "Location", loc);
    free(loc);
    s3_xml_elem(&b, "Bucket", mkey_bucket(mkey));
    s3_xml_elem(&b, "Key", name);
    s3_xml_elem(&b, "ETag", json_string_value(json_object_get(done, "etag")) ?: "");
    enum s3ck_alg a = s3ck_alg_named(json_string_value(json_object_get(done, "ckalg")));
    const char *ck = json_string_value(json_object_get(done, "ck"));
    if (a != S3CK_NONE && ck) {
        s3_xml_elem(&b, s3ck_element(a), ck);
        s3_xml_elem(&b, "ChecksumType", strchr(ck, '-') ? "COMPOSITE" : "FULL_OBJECT");
    }
    gbuf_str(&b, "</CompleteMultipartUploadResult>\n");
    http_reply(r, 200, "application/xml", b.p, b.n);
    gbuf_free(&b);
}

static void complete_backend_done(void *arg, const struct backend_obj *o)
{
    struct completion *j = arg;
    if (o->status < 200 || o->status > 299) {
        char msg[300];
        int st = backend_status(&j->b, o, msg, sizeof(msg));
        http_reply_error(j->r, st, "write-through failed: %s", msg);
        completion_free(j);
        return;
    }
    snprintf(j->m.backend_etag, sizeof(j->m.backend_etag), "%s", o->etag);
    iopool_submit(j->t->io, j->r->w->q, commit_work, commit_done, j);
}

static void assemble_checked(void *arg, int answered);

static void assemble_done(void *arg)
{
    struct completion *j = arg;
    if (j->status) {
        j->r->err_code = j->code;
        http_reply_error(j->r, j->status, "%s", j->msg);
        completion_free(j);
        return;
    }
    if (j->b.kind != BK_NONE && store_x_conditional(&j->cond)) {
        condcheck_backed(j->t, j->r, &j->b, j->mkey, j->klen, j->name, &j->cond,
                         assemble_checked, j);
        return;                  /* its conditions are cleared once they hold */
    }
    if (backend_writable(&j->b) && !j->b.write_back)
        backend_put(target_cli(j->r), &j->b, j->name, j->fd, (int64_t)j->m.size,
                    complete_backend_done, j);
    else
        iopool_submit(j->t->io, j->r->w->q, commit_work, commit_done, j);
}

static void assemble_checked(void *arg, int answered)
{
    struct completion *j = arg;
    if (answered)
        completion_free(j);
    else
        assemble_done(j);
}

static void complete_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct completion *j = arg;
    char err[300] = "";
    static const struct s3xml_spec spec = {
        "CompleteMultipartUpload", "Part",
        {"PartNumber", "ETag", "ChecksumCRC32", "ChecksumCRC32C", "ChecksumCRC64NVME",
         "ChecksumSHA1", "ChecksumSHA256"}, 7, NULL, 0};
    int n = s3xml_records(body, len, &spec, complete_part, j, NULL, err, sizeof(err));
    if (n <= 0) {
        const char *msg = n == 0 ? "the upload must name at least one part" : err;
        if (j->status) { /* complete_part's */
            r->err_code = j->code;
            http_reply_error(r, j->status, "%s", msg);
        } else {
            err_reply(r, S3E_MALFORMED_XML, "%s", msg);
        }
        completion_free(j);
        return;
    }
    iopool_submit(j->t->io, r->w->q, assemble_work, assemble_done, j);
}

/* A whole object's value CompleteMultipartUpload gives (x-amz-checksum-*)
 * into j: 0, or 1 with r answered. */
static int complete_want(struct completion *j, struct http_req *r)
{
    for (int a = S3CK_CRC32; a < S3CK_ALGS; a++) {
        const char *v = http_req_header(r, s3ck_header((enum s3ck_alg)a));
        unsigned char raw[S3CK_RAW_MAX];
        if (!v)
            continue;
        if (j->want_alg != S3CK_NONE) {
            err_reply(r, S3E_INVALID_REQUEST, "Expecting a single x-amz-checksum- header.");
            return 1;
        }
        if (strlen(v) >= sizeof(j->want) ||
            (s3ck_decode((enum s3ck_alg)a, v, raw) && !strchr(v, '-'))) {
            err_reply(r, S3E_BAD_DIGEST, "The %s you specified did not match the calculated "
                      "checksum.", s3ck_header((enum s3ck_alg)a));
            return 1;
        }
        j->want_alg = (enum s3ck_alg)a;
        snprintf(j->want, sizeof(j->want), "%s", v);
    }
    return 0;
}

static void complete_gone(void *arg)
{
    completion_free(arg);
}

/* ---- dispatch ------------------------------------------------------------------ */

int mpu_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
               const char *name, char *mkey, size_t klen)
{
    char id[64];
    int has_uploads = http_query_get(r, "uploads", id, sizeof(id)) != -1;
    int has_id = http_query_get(r, "uploadId", id, sizeof(id)) >= 0;
    if (!target_is_s3(r) || (!has_uploads && !has_id))
        return 0;
    if (has_uploads && !has_id) {
        if (r->method != HTTP_M_POST)
            return 0;
        create(t, r, bk, name, mkey, klen);
        free(mkey);
        return 1;
    }
    struct store_mp *mp = store_pick(&t->store, mkey, klen);
    json_t *u = valid_id(id) ? record_get(t, mp, 'u', id, mkey_bucket(mkey), name) : NULL;
    if (!u) {
        json_t *d = r->method == HTTP_M_POST && valid_id(id)
                        ? record_get(t, mp, 'd', id, mkey_bucket(mkey), name)
                        : NULL;
        if (d)                   /* a retry of the completion */
            complete_reply(r, mkey, name, json_object_get(d, "done"));
        else
            no_upload(r, id);
        json_decref(d);
        free(mkey);
        return 1;
    }

    if (r->method == HTTP_M_PUT) {
        struct put_part part = {.num = 0, .ckalg = mpuchecksum_alg(u), .commit = part_commit};
        json_decref(u);
        if (part_number(r, &part.num)) {
            free(mkey);
            return 1;
        }
        memcpy(part.upload, id, 33); /* valid_id: 32 hex digits */
        put_object(t, r, name, bk, mkey, klen, &part); /* takes mkey */
        return 1;
    }
    if (r->method == HTTP_M_GET) {
        json_decref(u);
        list_parts(t, r, id, name, mkey, klen);
        free(mkey);
        return 1;
    }
    struct completion *j = xcalloc(1, sizeof(*j));
    j->t = t;
    j->r = r;
    j->mp = mp;
    j->fd = -1;
    memcpy(j->id, id, 33); /* valid_id: 32 hex digits */
    j->name = xstrdup(name);
    j->mkey = mkey;
    j->klen = klen;
    j->upload = u;
    http_req_ref(r);
    if (r->method == HTTP_M_DELETE) {
        iopool_submit(t->io, r->w->q, abort_work, abort_done, j);
    } else if (r->method == HTTP_M_POST) {
        backend_resolve(t, bk, &j->b);
        j->cond.vers = vers_state(bk);   /* a versioned bucket's new version */
        target_write_conditions(r, &j->cond);
        if (complete_want(j, r))
            completion_free(j);         /* answered */
        else
            node_read_body(r, COMPLETE_BODY_MAX, complete_body, complete_gone, j);
    } else {
        completion_free(j);
        http_reply_error(r, 405, "%s is not allowed on a multipart upload", r->method_name);
    }
    return 1;
}
