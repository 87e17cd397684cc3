/*
 * s3bucket: the S3 bucket operations of the proxies: ListBuckets,
 * CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation and
 * GetBucketVersioning, bucket tagging and ACL, and DeleteObjects.
 *
 * Answers come from the bucket metadata; changes (create, destroy, the
 * tags as the "labels" property) are buckets_change's, whose answers are
 * turned into S3's.
 * DeleteObjects sends one DELETE per key to its owning target.
 *
 * Thread: the worker's loop; every call answers r, now or later.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "authz.h"
#include "bmd.h"
#include "buckets.h"
#include "cmap.h"
#include "nodeclient.h"
#include "http.h"
#include "node.h"
#include "objects.h"
#include "objname.h"
#include "objlist.h"
#include "proxy.h"
#include "s3.h"
#include "s3acl.h"
#include "s3own.h"
#include "s3bucket.h"
#include "s3front.h"
#include "s3sub.h"
#include "s3tag.h"
#include "s3xml.h"
#include "util.h"
#include "worker.h"

#define BUCKET_BODY_MAX (64u << 10)
#define DELETE_BODY_MAX (2u << 20)
#define DELETE_KEYS_MAX 1000

/* ---- buckets ------------------------------------------------------------------ */

#define LIST_BUCKETS_MAX 10000   /* max-buckets, at most (S3's) */

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct bmd_bucket *const *)a)->name,
                  (*(const struct bmd_bucket *const *)b)->name);
}

/* ListBuckets: in name order, those under prefix, max-buckets at a time;
 * the continuation token is the last name given (a bucket name needs no
 * escaping), an empty one none. */
void s3bucket_list_all(struct http_req *r, const struct authz_who *who)
{
    char prefix[S3_BUCKET_LEN] = "", num[16], after[S3_BUCKET_LEN] = "";
    int max = LIST_BUCKETS_MAX;
    uint64_t v;
    if (http_query_get(r, "max-buckets", num, sizeof(num)) >= 0 &&
        (parse_u64(num, strlen(num), &v) || v < 1 || v > LIST_BUCKETS_MAX)) {
        s3_fail(r, S3E_INVALID_ARGUMENT, "max-buckets must be 1..%d", LIST_BUCKETS_MAX);
        return;
    }
    if (http_query_get(r, "max-buckets", num, sizeof(num)) >= 0)
        max = (int)v;
    if (http_query_get(r, "prefix", prefix, sizeof(prefix)) < 0)
        prefix[0] = '\0';
    int tl = http_query_get(r, "continuation-token", after, sizeof(after));
    if (tl == -2) {              /* too long for a bucket name: none of ours */
        s3_fail(r, S3E_INVALID_ARGUMENT, "the continuation token is not valid");
        return;
    }
    if (tl < 0)
        after[0] = '\0';
    struct bmd *m = bmd_current();
    const struct bmd_bucket **all = xcalloc((size_t)m->n + 1, sizeof(*all));
    int n = 0;
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->b[i].provider, BMD_PROVIDER_SHOAL) &&
            !strncmp(m->b[i].name, prefix, strlen(prefix)) && strcmp(m->b[i].name, after) > 0 &&
            authz_allows(m->b[i].props, who, AUTHZ_OWN))   /* its own, not public ones */
            all[n++] = &m->b[i];
    qsort(all, (size_t)n, sizeof(*all), by_name);
    struct gbuf b = {0};
    gbuf_str(&b, S3_XML_HEAD "<ListAllMyBucketsResult xmlns=\"" S3_NS "\"><Owner>");
    s3own_xml(&b, who->enforced ? who->access : NULL);   /* the account that asks */
    gbuf_str(&b, "</Owner><Buckets>");
    for (int i = 0; i < n && i < max; i++) {
        char date[40];
        s3_iso_date((uint64_t)all[i]->created * 1000000000u, date, sizeof(date));
        gbuf_str(&b, "<Bucket>");
        s3_xml_elem(&b, "Name", all[i]->name);
        s3_xml_elem(&b, "CreationDate", date);
        gbuf_str(&b, "</Bucket>");
    }
    gbuf_str(&b, "</Buckets>");
    if (n > max)                 /* more: where the next page starts */
        s3_xml_elem(&b, "ContinuationToken", all[max - 1]->name);
    if (prefix[0])
        s3_xml_elem(&b, "Prefix", prefix);
    gbuf_str(&b, "</ListAllMyBucketsResult>\n");
    free(all);
    bmd_unref(m);
    s3front_reply_xml(r, 200, &b);
}

struct bucket_op {
    struct http_req *r;
    char bucket[S3_BUCKET_LEN];
    const char *what;            /* the change, for change_done's message */
    char location[S3XML_FLAG_MAX];   /* CreateBucket's LocationConstraint, "" none */
    char owner[128];             /* CreateBucket's: the access key, "" none */
    int admin;                   /* ... an admin key */
    json_t *acl;                 /* CreateBucket's x-amz-acl or x-amz-grant-*, or NULL */
    char ownership[32];          /* ... its x-amz-object-ownership, "" none */
    int ok_status;               /* a change's answer: 204 (PutBucketAcl: 200) */
};

/* A bucket operation on r (referenced until bucket_op_free). */
static struct bucket_op *bucket_op_new(struct http_req *r, const char *bucket, const char *what)
{
    struct bucket_op *o = xcalloc(1, sizeof(*o));
    o->r = r;
    snprintf(o->bucket, sizeof(o->bucket), "%s", bucket);
    o->what = what;
    o->ok_status = 204;
    http_req_ref(r);
    return o;
}

static void bucket_op_free(struct bucket_op *o)
{
    http_req_unref(o->r);
    json_decref(o->acl);
    free(o);
}

/* The bucket o names, as it is now: its owner o's or none? */
static int own_or_ownerless(const struct bucket_op *o)
{
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, o->bucket) : NULL;
    const char *owner = bk ? s3own_owner(bk->props) : NULL;
    int ok = !owner || o->admin || !strcmp(owner, o->owner);
    bmd_unref(m);
    return ok;
}

static void create_done(void *arg, int status, json_t *answer, const char *err)
{
    struct bucket_op *o = arg;
    struct http_req *r = o->r;
    json_decref(answer);
    if (status == 201 || status == 200) {
        http_resp_header(r, "Location", "/%s", o->bucket);
        http_reply(r, 200, NULL, NULL, 0);
    } else if (status == 409 && !own_or_ownerless(o)) {   /* another key made it first */
        s3_fail(r, S3E_BUCKET_ALREADY_EXISTS, "the requested bucket name is not available: "
                                              "another account owns it");
    } else if (status == 409 && (!o->location[0] || !strcmp(o->location, "us-east-1"))) {
        http_resp_header(r, "Location", "/%s", o->bucket);   /* us-east-1's answer */
        http_reply(r, 200, NULL, NULL, 0);
    } else if (status == 409) {
        s3_fail(r, S3E_BUCKET_ALREADY_OWNED_BY_YOU,
                "your previous request to create the named bucket succeeded and you "
                "already own it");
    } else if (status == 400) {
        s3_fail(r, S3E_INVALID_BUCKET_NAME, "the specified bucket is not valid");
    } else if (status) {
        s3_fail_status(r, status, S3E_INTERNAL_ERROR, "bucket creation failed: %.200s", err);
    } else {
        s3_fail(r, S3E_SERVICE_UNAVAILABLE, "bucket creation failed: %.200s", err);
    }
    bucket_op_free(o);
}

static int no_records(void *arg, char **fields, char *err, size_t errlen)
{
    (void)arg;
    (void)fields;
    (void)err;
    (void)errlen;
    return 0;
}

/* CreateBucket's optional body (CreateBucketConfiguration) names a
 * location: every location is this cluster, and the bucket keeps the name
 * (its "location" property) for GetBucketLocation. */
static void create_body(struct http_req *r, void *arg, char *body, size_t len)
{
    static const struct s3xml_spec spec = {
        .root = "CreateBucketConfiguration", .record = "-", .flag = "LocationConstraint"};
    char loc[S3XML_FLAG_MAX] = "", err[256];
    if (len && s3xml_records(body, len, &spec, no_records, NULL, loc, err, sizeof(err)) < 0) {
        bucket_op_free(arg);
        s3_fail(r, S3E_MALFORMED_XML, "CreateBucketConfiguration: %s", err);
        return;
    }
    struct bucket_op *o = arg;
    snprintf(o->location, sizeof(o->location), "%s", loc);
    json_t *props = json_object();
    if (loc[0])
        json_object_set_new(props, "location", json_string(loc));
    if (o->owner[0])
        json_object_set_new(props, "owner", json_string(o->owner));
    if (o->acl)
        json_object_set(props, "acl", o->acl);
    if (o->ownership[0])
        json_object_set_new(props, "object_ownership", json_string(o->ownership));
    buckets_change(r, BUCKETS_CREATE, BMD_PROVIDER_SHOAL, o->bucket, props, create_done,
                   o);           /* takes props */
}

static void create_gone(void *arg)
{
    bucket_op_free(arg);
}

void s3bucket_create(struct http_req *r, const char *bucket, const struct authz_who *who)
{
    if (!bmd_valid_name(bucket, strlen(bucket)) || strlen(bucket) < 3) {
        s3_fail(r, S3E_INVALID_BUCKET_NAME, "the specified bucket is not valid");
        return;
    }
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, bucket) : NULL;
    int theirs = bk && !authz_allows(bk->props, who, AUTHZ_OWN);
    bmd_unref(m);
    if (theirs) {
        s3_fail(r, S3E_BUCKET_ALREADY_EXISTS, "the requested bucket name is not available: "
                                              "another account owns it");
        return;
    }
    const char *owner = who->enforced && who->access ? who->access : NULL;
    json_t *acl;
    enum s3e code;
    char msg[300];
    if (s3acl_of_request(r, NULL, 0, 0, owner, owner, &acl, &code, msg, sizeof(msg))) {
        s3_fail(r, code, "%s", msg);
        return;
    }
    const char *own = http_req_header(r, "x-amz-object-ownership");
    if (own && !s3own_ownership_valid(own)) {
        json_decref(acl);
        s3_fail(r, S3E_INVALID_ARGUMENT, "x-amz-object-ownership is BucketOwnerEnforced, "
                                         "BucketOwnerPreferred or ObjectWriter");
        return;
    }
    if (own && !strcmp(own, "BucketOwnerEnforced") && acl && !s3acl_private(acl, owner)) {
        json_decref(acl);
        s3_fail(r, S3E_ACL_WITH_OWNERSHIP, "Bucket cannot have ACLs set with ObjectOwnership's "
                                           "BucketOwnerEnforced setting");
        return;
    }
    struct bucket_op *o = bucket_op_new(r, bucket, NULL);
    if (owner)
        snprintf(o->owner, sizeof(o->owner), "%s", owner);
    if (own)
        snprintf(o->ownership, sizeof(o->ownership), "%s", own);
    o->admin = who->admin || !who->enforced;
    if (acl && !s3acl_private(acl, owner))
        o->acl = acl;            /* the private ACL is kept as none */
    else
        json_decref(acl);
    node_read_body(r, BUCKET_BODY_MAX, create_body, create_gone, o);
}

/* A change of a bucket (deletion, tags, ACL): 204 (the ACL: 200), or the
 * S3 error. */
static void change_done(void *arg, int status, json_t *answer, const char *err)
{
    struct bucket_op *o = arg;
    json_decref(answer);
    if (status == 204 || status == 200)
        http_reply(o->r, o->ok_status, NULL, NULL, 0);
    else if (status == 404)
        s3_fail(o->r, S3E_NO_SUCH_BUCKET, "the specified bucket does not exist");
    else if (status)
        s3_fail_status(o->r, status, S3E_INTERNAL_ERROR, "%s failed: %.200s", o->what, err);
    else
        s3_fail(o->r, S3E_SERVICE_UNAVAILABLE, "%s failed: %.200s", o->what, err);
    bucket_op_free(o);
}

void s3bucket_patch(struct http_req *r, const char *bucket, json_t *patch, const char *what,
                    int ok_status)
{
    struct bucket_op *o = bucket_op_new(r, bucket, what);
    o->ok_status = ok_status;
    buckets_change(r, BUCKETS_PATCH, BMD_PROVIDER_SHOAL, bucket, patch, change_done, o);
}

/* DeleteBucket: the bucket's first cached name, if any, decides. */
static void delete_checked(void *arg, struct objlist_page *pg, int status, const char *err)
{
    struct bucket_op *o = arg;
    struct http_req *r = o->r;
    if (!pg) {
        s3_fail(r, S3E_SERVICE_UNAVAILABLE, "cannot tell whether the bucket is empty: %d %.200s",
                status, err);
        bucket_op_free(o);
    } else if (pg->n > 0) {
        s3_fail(r, S3E_BUCKET_NOT_EMPTY, "the bucket you tried to delete is not empty");
        bucket_op_free(o);
    } else {
        buckets_change(r, BUCKETS_DESTROY, BMD_PROVIDER_SHOAL, o->bucket,
                       NULL, change_done, o);
    }
    objlist_page_free(pg);
}

void s3bucket_delete(struct http_req *r, const char *bucket)
{
    struct bucket_op *o = bucket_op_new(r, bucket, "bucket deletion");
    /* kept versions and delete markers count: S3 keeps such a bucket */
    objlist_start(r, BMD_PROVIDER_SHOAL, bucket, "", "", 1, OBJLIST_CACHED_ONLY | OBJLIST_VERSIONS,
                  delete_checked, o);
}

/* ---- DeleteObjects ------------------------------------------------------------- */

struct mdel {
    struct http_req *r;
    char bucket[S3_BUCKET_LEN];
    int quiet;
    int pending;
    char **keys;
    char **vids;                 /* each key's VersionId, or NULL */
    int *status;
    /* a versioned bucket's answer: the delete made or removed a delete
     * marker (its id), as the target said (x-amz-delete-marker and
     * x-amz-version-id) */
    char **marker_ids;
    int n;
};

static int mdel_key(void *arg, char **f, char *err, size_t errlen)
{
    struct mdel *d = arg;
    if (!f[0] || !f[0][0]) {
        snprintf(err, errlen, "each Object needs a Key");
        return -1;
    }
    if (d->n == DELETE_KEYS_MAX) {
        snprintf(err, errlen, "at most %d keys per request", DELETE_KEYS_MAX);
        return -1;
    }
    d->keys = xrealloc(d->keys, sizeof(char *) * (size_t)(d->n + 1));
    d->vids = xrealloc(d->vids, sizeof(char *) * (size_t)(d->n + 1));
    d->vids[d->n] = f[1] && f[1][0] ? xstrdup(f[1]) : NULL;
    d->keys[d->n++] = xstrdup(f[0]);
    return 0;
}

static void mdel_free(struct mdel *d)
{
    for (int i = 0; i < d->n; i++) {
        free(d->keys[i]), free(d->vids[i]);
        if (d->marker_ids)
            free(d->marker_ids[i]);
    }
    free(d->keys);
    free(d->vids);
    free(d->marker_ids);
    free(d->status);
    free(d);
}

static void mdel_finish(struct mdel *d)
{
    struct gbuf b = {0};
    gbuf_str(&b, S3_XML_HEAD "<DeleteResult xmlns=\"" S3_NS "\">");
    for (int i = 0; i < d->n; i++) {
        int st = d->status[i];
        if (st == 204 || st == 200 || st == 404) {
            if (d->quiet)
                continue;
            gbuf_str(&b, "<Deleted>");
            s3_xml_elem(&b, "Key", d->keys[i]);
            if (d->vids[i])
                s3_xml_elem(&b, "VersionId", d->vids[i]);
            if (d->marker_ids[i]) {
                s3_xml_elem(&b, "DeleteMarker", "true");
                s3_xml_elem(&b, "DeleteMarkerVersionId", d->marker_ids[i]);
            }
            gbuf_str(&b, "</Deleted>");
        } else {
            gbuf_str(&b, "<Error>");
            s3_xml_elem(&b, "Key", d->keys[i]);
            s3_xml_elem(&b, "Code", st == 400   ? "InvalidArgument"
                                    : st == 503 ? "ServiceUnavailable"
                                                : "InternalError");
            s3_xml_elem(&b, "Message", st == 400   ? "the key is not valid"
                                       : st == 503 ? "the key could not be deleted now: "
                                                     "delete it again"
                                                   : "the storage target could not delete it");
            gbuf_str(&b, "</Error>");
        }
    }
    gbuf_str(&b, "</DeleteResult>\n");
    s3front_reply_xml(d->r, 200, &b);
    http_req_unref(d->r);
    mdel_free(d);
}

struct mdel_one {
    struct mdel *d;
    int i;
};

static void mdel_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct mdel_one *o = arg;
    (void)err;
    o->d->status[o->i] = status;
    const char *dm = status ? nodeclient_header(x, "x-amz-delete-marker") : NULL;
    const char *vid = status ? nodeclient_header(x, "x-amz-version-id") : NULL;
    if ((status == 204 || status == 200) && dm && !strcmp(dm, "true") && vid && vid[0])
        o->d->marker_ids[o->i] = xstrdup(vid);
    if (--o->d->pending == 0)
        mdel_finish(o->d);
    free(o);
}

static void delete_objects_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct mdel *d = xcalloc(1, sizeof(*d));
    d->r = r;
    snprintf(d->bucket, sizeof(d->bucket), "%s", (char *)arg);
    free(arg);
    if (s3_check_md5(r, body, len)) {
        free(d);
        return; /* answered */
    }
    static const struct s3xml_spec spec = {
        "Delete", "Object", {"Key", "VersionId"}, 2, "Quiet", 0};
    char err[300] = "", quiet[S3XML_FLAG_MAX];
    int n = s3xml_records(body, len, &spec, mdel_key, d, quiet, err, sizeof(err));
    if (n <= 0) {
        mdel_free(d);
        s3_fail(r, S3E_MALFORMED_XML, "%s", n == 0 ? "no keys to delete" : err);
        return;
    }
    d->quiet = !strcasecmp(quiet, "true");
    d->status = xcalloc((size_t)d->n, sizeof(int));
    d->marker_ids = xcalloc((size_t)d->n, sizeof(char *));
    d->pending = 1;
    http_req_ref(r);
    struct proxy *p = r->w->ctx;
    struct cmap *m = cmap_current();
    for (int i = 0; i < d->n; i++) {
        char ev[256];
        if (objname_valid(d->keys[i], strlen(d->keys[i]), ev, sizeof(ev))) {
            d->status[i] = 400;
            continue;
        }
        const struct cmap_node *owner =
            objects_owner(m, BMD_PROVIDER_SHOAL, d->bucket, d->keys[i]);
        if (!owner) { /* a map without targets */
            d->status[i] = 503;
            continue;
        }
        char *vq = NULL;
        if (d->vids[i]) {
            char *enc = http_pct_encode(d->vids[i], strlen(d->vids[i]), 0);
            vq = xasprintf("versionId=%s", enc);
            free(enc);
        }
        char *url = objects_url(&p->node, owner, "DELETE", d->bucket, d->keys[i],
                                strlen(d->keys[i]), vq);
        free(vq);
        struct mdel_one *o = xcalloc(1, sizeof(*o));
        o->d = d;
        o->i = i;
        d->pending++;
        static const struct nodeclient_ops ops = {.on_done = mdel_done}; /* bodies dropped */
        static const char *const hdrs[] = {S3_MODE_HEADER ": 1"};
        nodeclient_start(worker_hc(r), "DELETE", url, hdrs, 1, -1, 60000, &ops, o);
        free(url);
    }
    cmap_unref(m);
    if (--d->pending == 0)
        mdel_finish(d);
}

void s3bucket_delete_objects(struct http_req *r, const char *bucket)
{
    node_read_body(r, DELETE_BODY_MAX, delete_objects_body, free, xstrdup(bucket));
}

/* ---- bucket tagging and ACL ------------------------------------------------------ */

/*
 * A bucket's tags are its "labels" property (free-form string labels,
 * the same idea), changed like any property: a patch the primary commits
 * to the BMD. tags_set makes
 * the labels the set in pairs and answers r.
 */
static void tags_set(struct http_req *r, const char *bucket, const char *pairs, size_t len)
{
    json_t *labels = json_object();
    const char *k, *v;
    size_t off = 0;
    while (s3tag_next(pairs, len, &off, &k, &v))
        json_object_set_new(labels, k, json_string(v));
    struct bucket_op *o = bucket_op_new(r, bucket, "the change of the bucket's tags");
    buckets_change(r, BUCKETS_PATCH, BMD_PROVIDER_SHOAL, bucket,
                   json_pack("{s:o}", "labels", labels), change_done, o);
}

static void tags_body(struct http_req *r, void *arg, char *body, size_t len)
{
    char *bucket = arg;
    struct s3tags t = {0};
    enum s3e code;
    char msg[300];
    if (!s3_check_md5(r, body, len)) {
        if (s3tag_parse_xml(body, len, S3TAG_BUCKET_MAX, &t, &code, msg, sizeof(msg)))
            s3_fail(r, code, "%s", msg);
        else
            tags_set(r, bucket, t.pairs.p, t.pairs.n);
    }
    s3tags_free(&t);
    free(bucket);
}

void s3bucket_tagging(struct http_req *r, const char *bucket)
{
    if (r->method == HTTP_M_PUT) {
        node_read_body(r, BUCKET_BODY_MAX, tags_body, free, xstrdup(bucket));
        return;
    }
    if (r->method == HTTP_M_DELETE) {
        tags_set(r, bucket, "", 0);
        return;
    }
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = bmd_find(m, BMD_PROVIDER_SHOAL, bucket);
    json_t *labels = bk ? json_object_get(bk->props, "labels") : NULL;
    struct gbuf pairs = {0};
    const char *k;
    json_t *v;
    json_object_foreach(labels, k, v) {
        gbuf_add(&pairs, k, strlen(k) + 1);
        gbuf_add(&pairs, json_string_value(v), json_string_length(v) + 1);
    }
    bmd_unref(m);
    if (!pairs.n) {
        s3_fail(r, S3E_NO_SUCH_TAG_SET, "the TagSet does not exist");
    } else {
        struct gbuf b = {0};
        s3tag_xml(&b, pairs.p, pairs.n);
        s3front_reply_xml(r, 200, &b);
    }
    gbuf_free(&pairs);
}

/* The bucket's owner (an access key, "" for none) into out, and its grants
 * (new; NULL when there is no such bucket), from one snapshot. */
static json_t *bucket_acl_of(const char *bucket, char *out, size_t n, int *block_public,
                             int *disabled)
{
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, bucket) : NULL;
    const char *owner = bk ? s3own_owner(bk->props) : NULL;
    snprintf(out, n, "%s", owner ? owner : "");
    json_t *g = bk ? s3acl_grants(json_object_get(bk->props, "acl"), owner) : NULL;
    *block_public = bk && s3own_block_public(bk->props);
    *disabled = bk && s3own_acls_disabled(bk->props);
    bmd_unref(m);
    return g;
}

static void acl_body(struct http_req *r, void *arg, char *body, size_t len)
{
    char *bucket = arg, owner[128], msg[300];
    enum s3e code;
    int block, disabled;
    json_decref(bucket_acl_of(bucket, owner, sizeof(owner), &block, &disabled));
    json_t *g;
    if (s3acl_of_request(r, body, len, 1, owner, owner, &g, &code, msg, sizeof(msg))) {
        s3_fail(r, code, "%s", msg);
    } else if (!g) {
        s3_fail(r, S3E_MISSING_SECURITY_HEADER,
                "the request needs x-amz-acl, x-amz-grant-* or an AccessControlPolicy body");
    } else if (disabled && !s3acl_private(g, owner)) {
        json_decref(g);
        s3_fail(r, S3E_ACL_NOT_SUPPORTED, "The bucket does not allow ACLs");
    } else if (block && s3acl_public(g)) {
        json_decref(g);
        s3_fail(r, S3E_ACCESS_DENIED, "the bucket's PublicAccessBlock refuses public ACLs");
    } else {
        s3bucket_patch(r, bucket, json_pack("{s:o}", "acl", g),
                       "the change of the bucket's ACL", 200);
    }
    free(bucket);
}

void s3bucket_acl(struct http_req *r, const char *bucket)
{
    if (r->method == HTTP_M_PUT) {
        node_read_body(r, BUCKET_BODY_MAX, acl_body, free, xstrdup(bucket));
        return;
    }
    char owner[128];
    int block, disabled;
    json_t *g = bucket_acl_of(bucket, owner, sizeof(owner), &block, &disabled);
    struct gbuf b = {0};
    s3acl_xml(&b, owner, g);
    json_decref(g);
    s3front_reply_xml(r, 200, &b);
}


/* ---- HeadBucket, location, versioning ------------------------------------------- */

void s3bucket_head(struct http_req *r)
{
    http_resp_header_str(r, "x-amz-bucket-region", "us-east-1");
    http_reply(r, 200, NULL, NULL, 0);
}

void s3bucket_location(struct http_req *r, const char *bucket)
{
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, bucket) : NULL;
    const char *loc = bk ? json_string_value(json_object_get(bk->props, "location")) : NULL;
    struct gbuf x = {0};
    gbuf_str(&x, S3_XML_HEAD "<LocationConstraint xmlns=\"" S3_NS "\">");
    s3_xml_add(&x, loc ? loc : "");
    gbuf_str(&x, "</LocationConstraint>\n");
    bmd_unref(m);
    s3front_reply_xml(r, 200, &x);
}

static int mfa_record(void *arg, char **f, char *err, size_t errlen)
{
    (void)arg, (void)f, (void)err, (void)errlen;
    return 0;
}

/* PutBucketVersioning's body: Status Enabled or Suspended. */
static void versioning_body(struct http_req *r, void *arg, char *body, size_t len)
{
    char *bucket = arg, err[300] = "", status[S3XML_FLAG_MAX];
    static const struct s3xml_spec spec = {"VersioningConfiguration", "MfaDelete", {NULL}, 0,
                                           "Status", 0};
    if (s3_check_md5(r, body, len)) {
        free(bucket);
        return; /* answered */
    }
    int n = s3xml_records(body, len, &spec, mfa_record, NULL, status, err, sizeof(err));
    const char *state = !strcmp(status, "Enabled")     ? "enabled"
                        : !strcmp(status, "Suspended") ? "suspended"
                                                       : NULL;
    if (n < 0 || !state) {
        s3_fail(r, S3E_MALFORMED_XML, "%s", n < 0 ? err : "Status must be Enabled or Suspended");
    } else if (memmem(body, len, ">Enabled</MfaDelete>", 20)) {
        s3_fail(r, S3E_NOT_IMPLEMENTED, "MFA delete: not implemented");
    } else {
        struct bucket_op *o = bucket_op_new(r, bucket, "the change of the bucket's versioning");
        o->ok_status = 200;
        buckets_change(r, BUCKETS_PATCH, BMD_PROVIDER_SHOAL, bucket,
                       json_pack("{s:s}", "versioning", state), change_done, o);
    }
    free(bucket);
}

void s3bucket_versioning(struct http_req *r, const char *bucket)
{
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m ? bmd_find(m, BMD_PROVIDER_SHOAL, bucket) : NULL;
    const char *v = bk ? json_string_value(json_object_get(bk->props, "versioning")) : NULL;
    const char *why = !bk ? NULL : bmd_has_backend(bk) ? "a bucket with a backend"
                             : json_object_get(bk->props, "ec") ? "an erasure-coded bucket"
                                                                : NULL;
    char shown[16];
    snprintf(shown, sizeof(shown), "%s", v ? v : "");
    bmd_unref(m);
    if (r->method == HTTP_M_PUT) {
        if (why)
            s3_fail(r, S3E_NOT_IMPLEMENTED, "versioning of %s: not implemented", why);
        else
            node_read_body(r, BUCKET_BODY_MAX, versioning_body, free, xstrdup(bucket));
        return;
    }
    struct gbuf x = {0};
    gbuf_str(&x, S3_XML_HEAD "<VersioningConfiguration xmlns=\"" S3_NS "\">");
    if (!strcmp(shown, "enabled"))
        s3_xml_elem(&x, "Status", "Enabled");
    else if (!strcmp(shown, "suspended"))
        s3_xml_elem(&x, "Status", "Suspended");
    gbuf_str(&x, "</VersioningConfiguration>\n");
    s3front_reply_xml(r, 200, &x);
}
