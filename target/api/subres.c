/*
 * subres: S3 subresource requests on objects, on the target that owns the
 * object. Every S3-mode request whose query names a subresource
 * (common/s3/s3sub.h's table) is taken here: served, or answered 501
 * NotImplemented; none reaches the plain GET, PUT or DELETE.
 *
 *   ?uploads, ?uploadId   multipart uploads (mpu.c)
 *   ?tagging              Get/Put/DeleteObjectTagging: the tags live in
 *                         the object's metadata record (objmeta), changed
 *                         in place on the I/O pool; the data is untouched
 *   ?acl                  Get/PutObjectAcl: the grants (s3acl.h), kept in
 *                         the same record
 *   ?attributes           GetObjectAttributes (attrs.c)
 *
 * ?tagging and ?acl take a versionId: that version's record, read and
 * changed the same way.
 *
 * Tags are those of the copy held here: an object of a backed bucket
 * that is not cached has none to show (NoSuchKey), and tags are not
 * written through to the backend.
 *
 * The headers an object's tags make on GET and HEAD are target.c's
 * (target_meta_headers), with the object's other headers.
 *
 * Threads: the handlers run on the request's worker; metadata writes on
 * the I/O pool.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"
#include "err.h"
#include "http.h"
#include "iopool.h"
#include "mirror.h"
#include "mpu.h"
#include "node.h"
#include "place.h"
#include "s3.h"
#include "s3acl.h"
#include "s3own.h"
#include "s3sub.h"
#include "s3tag.h"
#include "subres.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

#define SUB_BODY_MAX (64u << 10)  /* a Tagging or AccessControlPolicy body */

_Static_assert(OBJMETA_TAGS_MAX >= S3TAG_OBJECT_BYTES, "an object's tags fit its metadata");

struct subreq {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    struct s3tags tags;          /* PUT ?tagging: the new set; DELETE: empty */
    json_t *acl;                 /* PUT ?acl: the new grants */
    int block_public;            /* ... the bucket's PublicAccessBlock refuses public ones */
    int acls_disabled;           /* ... its OwnershipControls refuse any (BucketOwnerEnforced) */
    char owner[128];             /* ... the object's owner, "" none */
    char bucket_owner[128];      /* ... and its bucket's */
    int (*change)(struct objmeta *m, void *arg); /* what a change does to the record */
    const char *what;            /* ... named in errors */
    uint64_t size;               /* the object's, once changed */
    int rc;
};

static struct subreq *subreq_new(struct target *t, struct http_req *r, char *mkey, size_t klen)
{
    struct subreq *s = xcalloc(1, sizeof(*s));
    s->t = t;
    s->r = r;
    s->mkey = mkey;
    s->klen = klen;
    http_req_ref(r);
    return s;
}

static void subreq_free(void *arg)
{
    struct subreq *s = arg;
    s3tags_free(&s->tags);
    json_decref(s->acl);
    http_req_unref(s->r);
    free(s->mkey);
    free(s);
}

static void no_key(struct http_req *r)
{
    err_reply(r, S3E_NO_SUCH_KEY, "the specified key does not exist");
}

/* The object's metadata (heap: it holds up to OBJMETA_TAGS_MAX of tags);
 * NULL with r answered when it is not here or cannot be read. */
static struct objmeta *meta_get(struct target *t, struct http_req *r, const char *mkey,
                                size_t klen)
{
    struct objmeta *m = xmalloc(sizeof(*m));
    int rc = store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen, m);
    if (!rc)
        return m;
    free(m);
    if (rc == -ENOENT)
        no_key(r);
    else
        http_reply_error(r, 500, "cannot read the object's metadata: %s", strerror(-rc));
    return NULL;
}

/* The record of the version ?versionId names (its key into *mkey, in
 * place of the name's), or of the latest; NULL with r answered. */
static struct objmeta *version_get(struct target *t, struct http_req *r, char **mkey,
                                   size_t *klen)
{
    char vid[64];
    int n = http_query_get(r, "versionId", vid, sizeof(vid));
    if (n == -1)
        return meta_get(t, r, *mkey, *klen);
    if (n <= 0 || !store_vid_valid(vid)) {
        err_reply(r, S3E_INVALID_ARGUMENT, "Invalid version id specified");
        return NULL;
    }
    struct store *st = &t->store;
    struct objmeta *m = xmalloc(sizeof(*m));
    char *vkey = NULL;
    size_t vkl;
    int rc = store_version_find(st, store_pick(st, *mkey, *klen), *mkey, *klen, vid, &vkey,
                                &vkl, m);
    if (!rc && store_is_marker(m)) {
        free(vkey);
        rc = -EISDIR;
    }
    if (rc) {
        free(m);
        if (rc == -EISDIR)
            err_reply(r, S3E_METHOD_NOT_ALLOWED, "The specified method is not allowed against "
                                                 "this resource.");
        else if (rc == -ENOENT)
            err_reply(r, S3E_NO_SUCH_VERSION, "The specified version does not exist.");
        else
            http_reply_error(r, 500, "cannot read the version: %s", strerror(-rc));
        return NULL;
    }
    free(*mkey);
    *mkey = vkey;
    *klen = vkl;
    return m;
}

/* ---- tagging ------------------------------------------------------------------ */

static int tags_change(struct objmeta *m, void *arg)
{
    struct subreq *s = arg;
    return objmeta_tags_set(m, s->tags.pairs.p, s->tags.pairs.n);
}

static int acl_change(struct objmeta *m, void *arg)
{
    struct subreq *s = arg;
    return target_set_acl(m, s->acl, s->owner);
}

/*
 * I/O pool: the object's tags (or ACL) replaced in its metadata record,
 * with store_meta_update: a PUT or DELETE of the object is wholly before
 * or after the change, so the tags never land on a newer version's record
 * that they were not meant for, and never resurrect a deleted one. The
 * version moves on (the newer record wins wherever copies meet); ETag and
 * Last-Modified stay, as in S3.
 */
static void tags_work(void *arg)
{
    struct subreq *s = arg;
    struct store *st = &s->t->store;
    struct objmeta m;
    s->rc = store_meta_update(st, s->mkey, s->klen, s->change, s);
    if (!s->rc && !store_get(st, store_pick(st, s->mkey, s->klen), s->mkey, s->klen, &m))
        s->size = m.size;
}

static void tags_answer(struct subreq *s);

static void tags_spread(void *arg, int failed)
{
    struct subreq *s = arg;
    if (failed)                  /* changed here, not yet on every holder */
        s->rc = -EAGAIN;
    tags_answer(s);
}

/* The new version goes to the copy holders first (mirror.h). */
static void tags_done(void *arg)
{
    struct subreq *s = arg;
    struct http_req *r = s->r;
    if (!s->rc && place_spreads(s->mkey, s->klen)) {
        struct xfer_loop lp = {r->w->base, r->w->q, target_hc(r)};
        mirror_spread(s->t, &lp, s->mkey, s->klen, s->size, 1, tags_spread, s);
        return;
    }
    tags_answer(s);
}

static void tags_answer(struct subreq *s)
{
    struct http_req *r = s->r;
    if (s->rc == -EAGAIN) {
        http_resp_header_str(r, "Retry-After", "2");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "the %s changed on the owner but not on every "
                                              "copy holder: try again", s->what);
    } else if (s->rc == -ENOENT)
        no_key(r);
    else if (s->rc)
        http_reply_error(r, err_status(s->rc), "cannot change the %s: %s", s->what,
                         strerror(-s->rc));
    else
        http_reply(r, r->method == HTTP_M_DELETE ? 204 : 200, NULL, NULL, 0);
    subreq_free(s);
}

static void tags_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct subreq *s = arg;
    enum s3e code;
    char msg[300];
    if (s3_check_md5(r, body, len)) {
        subreq_free(s);
        return; /* answered */
    }
    if (s3tag_parse_xml(body, len, S3TAG_OBJECT_MAX, &s->tags, &code, msg, sizeof(msg))) {
        s3_fail(r, code, "%s", msg);
        subreq_free(s);
        return;
    }
    iopool_submit(s->t->io, r->w->q, tags_work, tags_done, s);
}

/* GET, PUT and DELETE ?tagging: the object's tags (or its version's). */
static void tagging(struct target *t, struct http_req *r, char *mkey, size_t klen)
{
    struct objmeta *m = version_get(t, r, &mkey, &klen);
    if (!m) {
        free(mkey);
        return;
    }
    if (r->method == HTTP_M_GET) {
        free(mkey);
        struct gbuf b = {0};
        s3tag_xml(&b, m->tags, m->tags_len);
        http_reply(r, 200, "application/xml", b.p, b.n);
        gbuf_free(&b);
        free(m);
        return;
    }
    free(m);
    struct subreq *s = subreq_new(t, r, mkey, klen);
    s->change = tags_change;
    s->what = "tags";
    if (r->method == HTTP_M_PUT)
        node_read_body(r, SUB_BODY_MAX, tags_body, subreq_free, s);
    else /* DELETE: the empty set */
        iopool_submit(t->io, r->w->q, tags_work, tags_done, s);
}

/* ---- acl ------------------------------------------------------------------------ */

static void acl_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct subreq *s = arg;
    enum s3e code;
    char msg[300];
    if (s3acl_of_request(r, body, len, 1, s->owner, s->bucket_owner, &s->acl, &code, msg,
                         sizeof(msg))) {
        s3_fail(r, code, "%s", msg);
    } else if (!s->acl) {
        s3_fail(r, S3E_MISSING_SECURITY_HEADER,
                "the request needs x-amz-acl, x-amz-grant-* or an AccessControlPolicy body");
    } else if (s->acls_disabled && !s3acl_private(s->acl, s->owner)) {
        s3_fail(r, S3E_ACL_NOT_SUPPORTED, "The bucket does not allow ACLs");
    } else if (s3acl_public(s->acl) && s->block_public) {
        s3_fail(r, S3E_ACCESS_DENIED, "the bucket's PublicAccessBlock refuses public ACLs");
    } else {
        iopool_submit(s->t->io, r->w->q, tags_work, tags_done, s);
        return;
    }
    subreq_free(s);
}

/* GET and PUT ?acl: the object's ACL in bucket bk (or its version's). */
static void acl(struct target *t, struct http_req *r, char *mkey, size_t klen,
                const struct bmd_bucket *bk)
{
    struct objmeta *m = version_get(t, r, &mkey, &klen);
    if (!m) {
        free(mkey);
        return;
    }
    const char *owner = target_object_owner(m, bk->props), *bo = s3own_owner(bk->props);
    if (r->method == HTTP_M_PUT) {
        struct subreq *s = subreq_new(t, r, mkey, klen);
        s->change = acl_change;
        s->what = "ACL";
        s->block_public = s3own_block_public(bk->props);
        s->acls_disabled = s3own_acls_disabled(bk->props);
        snprintf(s->owner, sizeof(s->owner), "%s", owner ? owner : "");
        snprintf(s->bucket_owner, sizeof(s->bucket_owner), "%s", bo ? bo : "");
        free(m);
        node_read_body(r, SUB_BODY_MAX, acl_body, subreq_free, s);
        return;
    }
    free(mkey);
    json_t *g = target_acl(m, owner);
    struct gbuf b = {0};
    s3acl_xml(&b, owner, g);
    json_decref(g);
    free(m);
    http_reply(r, 200, "application/xml", b.p, b.n);
    gbuf_free(&b);
}

/* ---- dispatch ------------------------------------------------------------------- */

int subres_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                  const char *name, char *mkey, size_t klen)
{
    const struct s3sub *s = target_is_s3(r) ? s3sub_find(r) : NULL;
    if (!s)
        return 0;
    if (s3sub_serves(s, 1, r->method)) {
        switch (s->id) {
        case S3SUB_UPLOADS:
        case S3SUB_UPLOAD_ID:
            if (mpu_handle(t, r, bk, name, mkey, klen))
                return 1; /* took mkey */
            break;
        case S3SUB_TAGGING:
            tagging(t, r, mkey, klen);
            return 1;
        case S3SUB_ACL:
            acl(t, r, mkey, klen, bk);
            return 1;
        case S3SUB_ATTRIBUTES:
            attrs_get(t, r, mkey, klen);
            return 1;
        default:
            break;
        }
    }
    free(mkey);
    s3sub_refuse(r, s, 1);
    return 1;
}
