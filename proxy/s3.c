/*
 * s3: the S3 API of the proxies, at /s3/ (path style: /s3/BUCKET/KEY).
 *
 * Every request is verified first (s3auth) and every error is S3 XML.
 * Bucket requests are answered here: from the bucket metadata, or through
 * the native bucket API of this same proxy (create, destroy, the merged
 * listing), whose JSON is turned into S3's XML. Object requests are
 * streamed to the owning target (s3fwd.c), which answers them in S3 mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bmd.h"
#include "hcli.h"
#include "http.h"
#include "log.h"
#include "node.h"
#include "objname.h"
#include "proxy.h"
#include "s3.h"
#include "s3auth.h"
#include "s3sub.h"
#include "s3tag.h"
#include "s3xml.h"
#include "cmap.h"
#include "util.h"

#define XML_HEAD S3_XML_HEAD
#define LIST_MAX_KEYS 1000
#define LIST_MAX_PAGES 200      /* native pages read for one S3 page, at most */
#define BUCKET_BODY_MAX (64u << 10)
#define DELETE_BODY_MAX (2u << 20)
#define DELETE_KEYS_MAX 1000
#define S3_PUT_MAX (5ull << 30)

struct s3req {
    struct proxy *p;
    struct http_req *r;
    char bucket[64];
    struct s3auth_result auth;
};

static void reply_xml(struct http_req *r, int status, struct gbuf *b)
{
    http_reply(r, status, "application/xml", b->p, b->n);
    gbuf_free(b);
}

static int bucket_exists(const char *name)
{
    struct bmd *b = bmd_current();
    int found = bmd_find(b, BMD_PROVIDER_SHOAL, name) != NULL;
    bmd_unref(b);
    return found;
}

/* This proxy's native API, signed as the cluster (the S3 client was
 * authenticated already). */
static char *self_url(struct http_req *r, const char *method, const char *fmt,
                      const char *bucket)
{
    struct proxy *p = r->w->ctx;
    char *path = xasprintf(fmt, bucket);
    char *q = strchr(path, '?');
    if (q)
        *q++ = '\0';
    char *u = node_signed_url(&p->node, method, p->conf.public_url, path, q);
    free(path);
    return u;
}

/* ---- buckets ------------------------------------------------------------------ */

static void list_buckets(struct http_req *r)
{
    struct gbuf b = {0};
    gbuf_str(&b, XML_HEAD "<ListAllMyBucketsResult xmlns=\"" S3_NS "\">"
                          "<Owner>" S3_OWNER_XML "</Owner>"
                          "<Buckets>");
    struct bmd *m = bmd_current();
    for (int i = 0; i < m->n; i++) {
        if (strcmp(m->b[i].provider, BMD_PROVIDER_SHOAL))
            continue;
        char date[40];
        s3_iso_date((uint64_t)m->b[i].created * 1000000000u, date, sizeof(date));
        gbuf_str(&b, "<Bucket>");
        s3_xml_elem(&b, "Name", m->b[i].name);
        s3_xml_elem(&b, "CreationDate", date);
        gbuf_str(&b, "</Bucket>");
    }
    bmd_unref(m);
    gbuf_str(&b, "</Buckets></ListAllMyBucketsResult>\n");
    reply_xml(r, 200, &b);
}

struct bucket_op {
    struct http_req *r;
    char bucket[64];
    const char *what;            /* the change, for change_done's message */
};

static void bucket_op_free(struct bucket_op *o)
{
    http_req_unref(o->r);
    free(o);
}

static void create_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct bucket_op *o = arg;
    struct http_req *r = o->r;
    (void)len;
    if (status == 201 || status == 200) {
        http_resp_header(r, "Location", "/%s", o->bucket);
        http_reply(r, 200, NULL, NULL, 0);
    } else if (status == 409) {
        s3_error(r, 409, "BucketAlreadyOwnedByYou",
                 "your previous request to create the named bucket succeeded and you "
                 "already own it");
    } else if (status == 400) {
        s3_error(r, 400, "InvalidBucketName", "the specified bucket is not valid");
    } else {
        s3_error(r, status ? status : 503, status ? "InternalError" : "ServiceUnavailable",
                 "bucket creation failed: %.200s", status ? body : err);
    }
    bucket_op_free(o);
}

/* CreateBucket's optional body (CreateBucketConfiguration) names a
 * location; every location is this cluster, so it is read and dropped. */
static void create_body(struct http_req *r, void *arg, char *body, size_t len)
{
    (void)body;
    (void)len;
    struct bucket_op *o = xcalloc(1, sizeof(*o));
    o->r = r;
    snprintf(o->bucket, sizeof(o->bucket), "%s", (char *)arg);
    free(arg);
    http_req_ref(r);
    char *u = self_url(r, "PUT", "/v1/buckets/%s", o->bucket);
    hcli_request(proxy_cli(r), "PUT", u, NULL, 0, NULL, 30000, create_done, o);
    free(u);
}

/* A change of a bucket through the native API (deletion, tags): 204, or
 * the S3 error. */
static void change_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct bucket_op *o = arg;
    (void)len;
    if (status == 204 || status == 200)
        http_reply(o->r, 204, NULL, NULL, 0);
    else if (status == 404)
        s3_error(o->r, 404, "NoSuchBucket", "the specified bucket does not exist");
    else
        s3_error(o->r, status ? status : 503, status ? "InternalError" : "ServiceUnavailable",
                 "%s failed: %.200s", o->what, status ? body : err);
    bucket_op_free(o);
}

/* A page of the native listing: its "objects" array (in *j, which the
 * caller drops), or NULL. */
static json_t *page_objects(int status, const char *body, size_t len, json_t **j)
{
    *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *objs = *j ? json_object_get(*j, "objects") : NULL;
    return json_is_array(objs) ? objs : NULL;
}

static void delete_checked(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct bucket_op *o = arg;
    struct http_req *r = o->r;
    json_t *j;
    json_t *objs = page_objects(status, body, len, &j);
    if (!objs) {
        s3_error(r, 503, "ServiceUnavailable", "cannot tell whether the bucket is empty: %.200s",
                 status ? body : err);
        bucket_op_free(o);
    } else if (json_array_size(objs) > 0) {
        s3_error(r, 409, "BucketNotEmpty", "the bucket you tried to delete is not empty");
        bucket_op_free(o);
    } else {
        char *u = self_url(r, "DELETE", "/v1/buckets/%s", o->bucket);
        o->what = "bucket deletion";
        hcli_request(proxy_cli(r), "DELETE", u, NULL, 0, NULL, 30000, change_done, o);
        free(u);
    }
    json_decref(j);
}

static void delete_bucket(struct http_req *r, const char *bucket)
{
    struct bucket_op *o = xcalloc(1, sizeof(*o));
    o->r = r;
    snprintf(o->bucket, sizeof(o->bucket), "%s", bucket);
    http_req_ref(r);
    char *u = self_url(r, "GET", "/v1/buckets/%s/objects?limit=1&cached=true", bucket);
    hcli_request(proxy_cli(r), "GET", u, NULL, 0, NULL, 30000, delete_checked, o);
    free(u);
}

/* ---- listing ------------------------------------------------------------------ */

enum list_kind { LIST_V1, LIST_V2, LIST_VERSIONS };

struct s3list {
    struct http_req *r;
    enum list_kind kind;
    char bucket[64];
    char *prefix, *delim, *after;  /* after: names up to it are skipped */
    char *token_in;                /* the client's continuation token, echoed */
    char *page;                    /* native token of the page being read */
    int max_keys;
    int url_enc;
    int remote;                    /* backend listing: page tokens are not names */
    int pages;
    int count;
    int truncated;
    char *next;                    /* resume point: a name or a common prefix */
    char *last_cp;
    struct gbuf items;             /* <Contents>/<Version> elements */
    struct gbuf cps;               /* <CommonPrefixes> elements */
};

static void s3list_free(struct s3list *l)
{
    http_req_unref(l->r);
    free(l->prefix);
    free(l->delim);
    free(l->after);
    free(l->token_in);
    free(l->page);
    free(l->next);
    free(l->last_cp);
    gbuf_free(&l->items);
    gbuf_free(&l->cps);
    free(l);
}

/* A value in the listing, URL-encoded when the client asked for it. */
static void list_value(struct s3list *l, struct gbuf *b, const char *elem, const char *v)
{
    if (l->url_enc) {
        char *e = http_pct_encode(v, strlen(v), 1);
        s3_xml_elem(b, elem, e);
        free(e);
    } else {
        s3_xml_elem(b, elem, v);
    }
}

/* Continuation tokens: hex of "page-token \0 after". */
static char *token_make(const char *page, const char *after)
{
    size_t pl = strlen(page), al = strlen(after);
    char *raw = xmalloc(pl + al + 1);
    memcpy(raw, page, pl);
    raw[pl] = '\0';
    memcpy(raw + pl + 1, after, al);
    char *hex = xmalloc(2 * (pl + al + 1) + 1);
    hex_encode(raw, pl + al + 1, hex);
    free(raw);
    return hex;
}

static int token_parse(const char *hex, char **page, char **after)
{
    size_t n = strlen(hex);
    if (n == 0 || n % 2 || n > 8192)
        return -1;
    char *raw = xmalloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            free(raw);
            return -1;
        }
        raw[i] = (char)v;
    }
    raw[n / 2] = '\0';
    size_t pl = strlen(raw);
    if (pl >= n / 2) {
        free(raw);
        return -1;
    }
    *page = xstrdup(raw);
    *after = xstrndup(raw + pl + 1, n / 2 - pl - 1);
    free(raw);
    return 0;
}

static void list_finish(struct s3list *l)
{
    struct http_req *r = l->r;
    struct gbuf b = {0};
    const char *root = l->kind == LIST_VERSIONS ? "ListVersionsResult" : "ListBucketResult";
    gbuf_str(&b, XML_HEAD "<");
    gbuf_str(&b, root);
    gbuf_str(&b, " xmlns=\"" S3_NS "\">");
    s3_xml_elem(&b, "Name", l->bucket);
    list_value(l, &b, "Prefix", l->prefix);
    if (l->delim[0])
        list_value(l, &b, "Delimiter", l->delim);
    char num[32];
    snprintf(num, sizeof(num), "%d", l->max_keys);
    s3_xml_elem(&b, "MaxKeys", num);
    if (l->url_enc)
        s3_xml_elem(&b, "EncodingType", "url");
    s3_xml_elem(&b, "IsTruncated", l->truncated ? "true" : "false");
    const char *next = l->truncated && l->next ? l->next : NULL;
    if (l->kind == LIST_V2) {
        snprintf(num, sizeof(num), "%d", l->count);
        s3_xml_elem(&b, "KeyCount", num);
        if (l->token_in)
            s3_xml_elem(&b, "ContinuationToken", l->token_in);
        char sa[OBJNAME_MAX + 1];
        if (http_query_get(r, "start-after", sa, sizeof(sa)) >= 0)
            list_value(l, &b, "StartAfter", sa);
        if (next) {
            char *t = token_make(l->page ? l->page : "", next);
            s3_xml_elem(&b, "NextContinuationToken", t);
            free(t);
        }
    } else if (l->kind == LIST_V1) {
        char mk[OBJNAME_MAX + 1];
        list_value(l, &b, "Marker", http_query_get(r, "marker", mk, sizeof(mk)) >= 0 ? mk : "");
        if (next)
            list_value(l, &b, "NextMarker", next);
    } else {
        char mk[OBJNAME_MAX + 1];
        list_value(l, &b, "KeyMarker",
                   http_query_get(r, "key-marker", mk, sizeof(mk)) >= 0 ? mk : "");
        s3_xml_elem(&b, "VersionIdMarker", "");
        if (next) {
            list_value(l, &b, "NextKeyMarker", next);
            s3_xml_elem(&b, "NextVersionIdMarker", "null");
        }
    }
    gbuf_add(&b, l->items.p, l->items.n);
    gbuf_add(&b, l->cps.p, l->cps.n);
    gbuf_str(&b, "</");
    gbuf_str(&b, root);
    gbuf_str(&b, ">\n");
    reply_xml(r, 200, &b);
    s3list_free(l);
}

static void list_item(struct s3list *l, json_t *o, const char *name)
{
    char date[40], size[24];
    const char *lm = json_string_value(json_object_get(o, "last_modified"));
    if (lm && lm[0])
        snprintf(date, sizeof(date), "%s", lm);
    else
        s3_iso_date((uint64_t)json_integer_value(json_object_get(o, "mtime")), date,
                    sizeof(date));
    snprintf(size, sizeof(size), "%lld", (long long)json_integer_value(json_object_get(o, "size")));
    const char *etag = json_string_value(json_object_get(o, "etag"));
    struct gbuf *b = &l->items;
    gbuf_str(b, l->kind == LIST_VERSIONS ? "<Version>" : "<Contents>");
    list_value(l, b, "Key", name);
    if (l->kind == LIST_VERSIONS) {
        s3_xml_elem(b, "VersionId", "null");
        s3_xml_elem(b, "IsLatest", "true");
    }
    s3_xml_elem(b, "LastModified", date);
    s3_xml_elem(b, "ETag", etag ? etag : "");
    s3_xml_elem(b, "Size", size);
    s3_xml_elem(b, "StorageClass", "STANDARD");
    gbuf_str(b, "<Owner>" S3_OWNER_XML "</Owner>");
    gbuf_str(b, l->kind == LIST_VERSIONS ? "</Version>" : "</Contents>");
}

static void list_next_page(struct s3list *l);

static void set_str(char **dst, const char *s, size_t n)
{
    free(*dst);
    *dst = xstrndup(s, n);
}

static void list_page(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct s3list *l = arg;
    struct http_req *r = l->r;
    json_t *j;
    json_t *objs = page_objects(status, body, len, &j);
    if (!objs) {
        json_decref(j);
        if (status == 404)
            s3_error(r, 404, "NoSuchBucket", "the specified bucket does not exist");
        else
            s3_error(r, status >= 500 || !status ? 503 : status,
                     status >= 500 || !status ? "ServiceUnavailable" : "InvalidRequest",
                     "listing failed: %.200s", status ? body : err);
        s3list_free(l);
        return;
    }
    size_t pl = strlen(l->prefix), dl = strlen(l->delim);
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o) {
        json_t *nj = json_object_get(o, "name");
        const char *name = json_string_value(nj);
        size_t nl = json_string_length(nj);
        if (!name || nl < pl || memcmp(name, l->prefix, pl))
            continue;
        if (l->after && strcmp(name, l->after) <= 0)
            continue;
        const char *d = dl ? memmem(name + pl, nl - pl, l->delim, dl) : NULL;
        if (d) {
            size_t cl = (size_t)(d - name) + dl;
            if (l->last_cp && strlen(l->last_cp) == cl && !memcmp(l->last_cp, name, cl))
                continue;
            if (l->count == l->max_keys) {
                l->truncated = 1;
                break;
            }
            set_str(&l->last_cp, name, cl);
            set_str(&l->next, name, cl);
            gbuf_str(&l->cps, "<CommonPrefixes>");
            char *cp = xstrndup(name, cl);
            list_value(l, &l->cps, "Prefix", cp);
            free(cp);
            gbuf_str(&l->cps, "</CommonPrefixes>");
        } else {
            if (l->count == l->max_keys) {
                l->truncated = 1;
                break;
            }
            list_item(l, o, name);
            set_str(&l->next, name, nl);
        }
        l->count++;
    }
    const char *nt = json_string_value(json_object_get(j, "next"));
    if (!l->truncated && nt && nt[0]) {
        if (++l->pages >= LIST_MAX_PAGES || l->count == l->max_keys) {
            /* stop here; the client resumes from the last name or prefix */
            l->truncated = 1;
        } else if (!l->remote && l->last_cp && !strncmp(nt, l->last_cp, strlen(l->last_cp))) {
            /* the rest of this common prefix is skipped, not read */
            free(l->page);
            l->page = xasprintf("%s\xff", l->last_cp);
            json_decref(j);
            list_next_page(l);
            return;
        } else {
            set_str(&l->page, nt, strlen(nt));
            json_decref(j);
            list_next_page(l);
            return;
        }
    }
    json_decref(j);
    /* A resume point inside a common prefix skips the rest of it. */
    if (l->truncated && l->next && l->last_cp && !strcmp(l->next, l->last_cp)) {
        char *skip = xasprintf("%s\xff", l->last_cp);
        free(l->next);
        l->next = skip;
    }
    if (l->truncated && l->kind != LIST_V2 && l->next && l->last_cp &&
        !strncmp(l->next, l->last_cp, strlen(l->last_cp)))
        set_str(&l->next, l->last_cp, strlen(l->last_cp)); /* V1 markers are names */
    list_finish(l);
}

static void list_next_page(struct s3list *l)
{
    struct http_req *r = l->r;
    char *ep = http_pct_encode(l->prefix, strlen(l->prefix), 0);
    const char *tok = l->page ? l->page : "";
    char *et = http_pct_encode(tok, strlen(tok), 0);
    struct proxy *p = r->w->ctx;
    char *u = node_signed_urlf(&p->node, "GET", p->conf.public_url,
                               "/v1/buckets/%s/objects?prefix=%s&token=%s&limit=%d", l->bucket,
                               ep, et,
                        l->max_keys - l->count + 1 > LIST_MAX_KEYS ? LIST_MAX_KEYS + 1
                                                                   : l->max_keys - l->count + 1);
    hcli_request(proxy_cli(r), "GET", u, NULL, 0, NULL, 60000, list_page, l);
    free(u);
    free(ep);
    free(et);
}

/* Is the bucket's listing a backend's (tokens are the backend's, not names)? */
static int remote_listing(const char *bucket)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = bmd_find(b, BMD_PROVIDER_SHOAL, bucket);
    const char *spec = bk ? json_string_value(json_object_get(bk->props, "backend")) : NULL;
    int remote = spec && !strncmp(spec, "s3://", 5);
    bmd_unref(b);
    return remote;
}

static void list_objects(struct http_req *r, const char *bucket, enum list_kind kind)
{
    char prefix[OBJNAME_MAX + 1] = "", delim[64] = "", mk[16], enc[16];
    char tok[8200], after[OBJNAME_MAX + 1] = "";
    if (http_query_get(r, "prefix", prefix, sizeof(prefix)) == -2 ||
        http_query_get(r, "delimiter", delim, sizeof(delim)) == -2) {
        s3_error(r, 400, "InvalidArgument", "prefix or delimiter too long or badly encoded");
        return;
    }
    struct s3list *l = xcalloc(1, sizeof(*l));
    l->r = r;
    l->kind = kind;
    snprintf(l->bucket, sizeof(l->bucket), "%s", bucket);
    l->max_keys = LIST_MAX_KEYS;
    if (http_query_get(r, "max-keys", mk, sizeof(mk)) >= 0) {
        uint64_t v;
        if (parse_u64(mk, strlen(mk), &v)) {
            free(l);
            s3_error(r, 400, "InvalidArgument", "max-keys must be a non-negative integer");
            return;
        }
        l->max_keys = v > LIST_MAX_KEYS ? LIST_MAX_KEYS : (int)v;
    }
    if (http_query_get(r, "encoding-type", enc, sizeof(enc)) >= 0) {
        if (strcmp(enc, "url")) {
            free(l);
            s3_error(r, 400, "InvalidArgument", "encoding-type must be url");
            return;
        }
        l->url_enc = 1;
    }
    l->prefix = xstrdup(prefix);
    l->delim = xstrdup(delim);
    http_req_ref(r);
    int remote = l->remote = remote_listing(bucket);
    if (kind == LIST_V2 && http_query_get(r, "continuation-token", tok, sizeof(tok)) >= 0) {
        char *page, *aft;
        if (token_parse(tok, &page, &aft)) {
            s3list_free(l);
            s3_error(r, 400, "InvalidArgument", "the continuation token is not valid");
            return;
        }
        l->token_in = xstrdup(tok);
        l->page = remote ? page : xstrdup(aft);
        l->after = aft;
        if (!remote)
            free(page);
    } else {
        const char *arg = kind == LIST_V2 ? "start-after"
                          : kind == LIST_V1 ? "marker"
                                            : "key-marker";
        if (http_query_get(r, arg, after, sizeof(after)) >= 0 && after[0]) {
            l->after = xstrdup(after);
            /* a Shoal bucket's listing starts after a name directly */
            if (!remote)
                l->page = xstrdup(after);
            /* a marker that is a common prefix resumes after all of it */
            size_t al = strlen(after), dl = strlen(delim);
            if (dl && al >= dl && !strcmp(after + al - dl, delim))
                l->last_cp = xstrdup(after);
        }
    }
    if (l->max_keys == 0) {
        list_finish(l);
        return;
    }
    list_next_page(l);
}

/* ---- multipart uploads in progress ------------------------------------------ */

struct ulist {
    struct http_req *r;
    char bucket[64];
    json_t *all;
    int pending;
    int failed;
};

static int upload_cmp(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(json_string_value(json_object_get(x, "name")),
                   json_string_value(json_object_get(y, "name")));
    return c ? c
             : strcmp(json_string_value(json_object_get(x, "upload")),
                      json_string_value(json_object_get(y, "upload")));
}

static void ulist_finish(struct ulist *l)
{
    struct http_req *r = l->r;
    if (l->failed) {
        s3_error(r, 503, "ServiceUnavailable", "a storage target did not answer");
    } else {
        size_t n = json_array_size(l->all);
        json_t **v = xcalloc(n + 1, sizeof(*v));
        for (size_t i = 0; i < n; i++)
            v[i] = json_array_get(l->all, i);
        qsort(v, n, sizeof(*v), upload_cmp);
        struct gbuf b = {0};
        gbuf_str(&b, XML_HEAD "<ListMultipartUploadsResult xmlns=\"" S3_NS "\">");
        s3_xml_elem(&b, "Bucket", l->bucket);
        char pre[OBJNAME_MAX + 1] = "";
        http_query_get(r, "prefix", pre, sizeof(pre));
        s3_xml_elem(&b, "Prefix", pre);
        s3_xml_elem(&b, "KeyMarker", "");
        s3_xml_elem(&b, "UploadIdMarker", "");
        s3_xml_elem(&b, "MaxUploads", "1000");
        s3_xml_elem(&b, "IsTruncated", "false");
        for (size_t i = 0; i < n && i < 1000; i++) {
            char date[40];
            s3_iso_date((uint64_t)json_integer_value(json_object_get(v[i], "initiated")), date,
                        sizeof(date));
            gbuf_str(&b, "<Upload>");
            s3_xml_elem(&b, "Key", json_string_value(json_object_get(v[i], "name")));
            s3_xml_elem(&b, "UploadId", json_string_value(json_object_get(v[i], "upload")));
            gbuf_str(&b, "<Initiator>" S3_OWNER_XML "</Initiator>"
                         "<Owner>" S3_OWNER_XML "</Owner>");
            s3_xml_elem(&b, "StorageClass", "STANDARD");
            s3_xml_elem(&b, "Initiated", date);
            gbuf_str(&b, "</Upload>");
        }
        free(v);
        gbuf_str(&b, "</ListMultipartUploadsResult>\n");
        reply_xml(r, 200, &b);
    }
    json_decref(l->all);
    http_req_unref(r);
    free(l);
}

static void ulist_one(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct ulist *l = arg;
    (void)err;
    json_t *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *ups = j ? json_object_get(j, "uploads") : NULL;
    if (json_is_array(ups))
        json_array_extend(l->all, ups);
    else
        l->failed = 1;
    json_decref(j);
    if (--l->pending == 0)
        ulist_finish(l);
}

static void list_uploads(struct http_req *r, const char *bucket)
{
    char pre[OBJNAME_MAX + 1] = "";
    http_query_get(r, "prefix", pre, sizeof(pre));
    struct ulist *l = xcalloc(1, sizeof(*l));
    l->r = r;
    snprintf(l->bucket, sizeof(l->bucket), "%s", bucket);
    l->all = json_array();
    l->pending = 1;
    http_req_ref(r);
    char *ep = http_pct_encode(pre, strlen(pre), 0);
    struct cmap *m = cmap_current();
    for (int i = 0; m && i < m->n_targets; i++) {
        const struct cmap_node *t = &m->nodes[m->targets[i]];
        char *u = node_signed_urlf(r->w->ctx, "GET", t->url,
                                   "/v1/internal/uploads?bucket=%s&prefix=%s", bucket, ep);
        l->pending++;
        hcli_request(proxy_cli(r), "GET", u, NULL, 0, NULL, 30000, ulist_one, l);
        free(u);
    }
    cmap_unref(m);
    free(ep);
    if (--l->pending == 0)
        ulist_finish(l);
}

/* ---- DeleteObjects ------------------------------------------------------------- */

struct mdel {
    struct http_req *r;
    char bucket[64];
    int quiet;
    int pending;
    char **keys;
    int *status;
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
    d->keys[d->n++] = xstrdup(f[0]);
    return 0;
}

static void mdel_finish(struct mdel *d)
{
    struct gbuf b = {0};
    gbuf_str(&b, XML_HEAD "<DeleteResult xmlns=\"" S3_NS "\">");
    for (int i = 0; i < d->n; i++) {
        int st = d->status[i];
        if (st == 204 || st == 200 || st == 404) {
            if (d->quiet)
                continue;
            gbuf_str(&b, "<Deleted>");
            s3_xml_elem(&b, "Key", d->keys[i]);
            gbuf_str(&b, "</Deleted>");
        } else {
            gbuf_str(&b, "<Error>");
            s3_xml_elem(&b, "Key", d->keys[i]);
            s3_xml_elem(&b, "Code", st == 400 ? "InvalidArgument" : "InternalError");
            s3_xml_elem(&b, "Message", st == 400 ? "the key is not valid"
                                                  : "the storage target could not delete it");
            gbuf_str(&b, "</Error>");
        }
    }
    gbuf_str(&b, "</DeleteResult>\n");
    reply_xml(d->r, 200, &b);
    http_req_unref(d->r);
    for (int i = 0; i < d->n; i++)
        free(d->keys[i]);
    free(d->keys);
    free(d->status);
    free(d);
}

struct mdel_one {
    struct mdel *d;
    int i;
};

static void mdel_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct mdel_one *o = arg;
    (void)body;
    (void)len;
    (void)err;
    o->d->status[o->i] = status;
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
    static const struct s3xml_spec spec = {"Delete", "Object", {"Key", "VersionId"}, 2, "Quiet"};
    char err[300] = "", quiet[16];
    int n = s3xml_records(body, len, &spec, mdel_key, d, quiet, err, sizeof(err));
    if (n <= 0) {
        for (int i = 0; i < d->n; i++)
            free(d->keys[i]);
        free(d->keys);
        free(d);
        s3_error(r, 400, "MalformedXML", "%s", n == 0 ? "no keys to delete" : err);
        return;
    }
    d->quiet = !strcasecmp(quiet, "true");
    d->status = xcalloc((size_t)d->n, sizeof(int));
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
        size_t kl;
        char *ok = node_obj_key("shoal", d->bucket, d->keys[i], &kl);
        const struct cmap_node *owner = m ? cmap_owner(m, ok, kl) : NULL;
        free(ok);
        if (!owner) { /* a map without targets */
            d->status[i] = 503;
            continue;
        }
        char *ek = http_pct_encode(d->keys[i], strlen(d->keys[i]), 1);
        char *path = xasprintf("/v1/objects/%s/%s", d->bucket, ek);
        char *url = node_signed_url(&p->node, "DELETE", owner->url, path, NULL);
        struct mdel_one *o = xcalloc(1, sizeof(*o));
        o->d = d;
        o->i = i;
        d->pending++;
        hcli_request(proxy_cli(r), "DELETE", url, NULL, 0, S3_MODE_HEADER ": 1", 60000,
                     mdel_done, o);
        free(url);
        free(path);
        free(ek);
    }
    cmap_unref(m);
    if (--d->pending == 0)
        mdel_finish(d);
}

/* ---- bucket tagging and ACL ------------------------------------------------------ */

/*
 * A bucket's tags are its "labels" property (free-form string labels,
 * the same idea), changed like any property: a PATCH through this proxy's
 * native bucket API, which the primary commits to the BMD. tags_set makes
 * the labels the set in pairs and answers r.
 */
static void tags_set(struct http_req *r, const char *bucket, const char *pairs, size_t len)
{
    json_t *labels = json_object();
    const char *k, *v;
    size_t off = 0;
    while (s3tag_next(pairs, len, &off, &k, &v))
        json_object_set_new(labels, k, json_string(v));
    char *body = json_dumps(json_pack("{s:o}", "labels", labels), JSON_COMPACT);
    struct bucket_op *o = xcalloc(1, sizeof(*o));
    o->r = r;
    snprintf(o->bucket, sizeof(o->bucket), "%s", bucket);
    o->what = "the change of the bucket's tags";
    http_req_ref(r);
    char *u = self_url(r, "PATCH", "/v1/buckets/%s", bucket);
    hcli_request(proxy_cli(r), "PATCH", u, body, strlen(body), NULL, 30000, change_done, o);
    free(u);
    free(body);
}

static void tags_body(struct http_req *r, void *arg, char *body, size_t len)
{
    char *bucket = arg;
    struct s3tags t = {0};
    const char *code;
    char msg[300];
    if (!s3_check_md5(r, body, len)) {
        int st = s3tag_parse_xml(body, len, S3TAG_BUCKET_MAX, &t, &code, msg, sizeof(msg));
        if (st)
            s3_error(r, st, code, "%s", msg);
        else
            tags_set(r, bucket, t.pairs.p, t.pairs.n);
    }
    s3tags_free(&t);
    free(bucket);
}

static void bucket_tagging(struct http_req *r, const char *bucket)
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
        s3_error(r, 404, "NoSuchTagSet", "the TagSet does not exist");
    } else {
        struct gbuf b = {0};
        s3tag_xml(&b, pairs.p, pairs.n);
        reply_xml(r, 200, &b);
    }
    gbuf_free(&pairs);
}

static void acl_body(struct http_req *r, void *arg, char *body, size_t len)
{
    const char *code;
    char msg[300];
    (void)arg;
    int st = s3sub_acl_check(r, body, len, &code, msg, sizeof(msg));
    if (st)
        s3_error(r, st, code, "%s", msg);
    else /* the ACL asked for is the one it has */
        http_reply(r, 200, NULL, NULL, 0);
}

static void bucket_acl(struct http_req *r)
{
    if (r->method == HTTP_M_PUT) {
        node_read_body(r, BUCKET_BODY_MAX, acl_body, NULL, NULL);
        return;
    }
    struct gbuf b = {0};
    s3sub_acl_xml(&b);
    reply_xml(r, 200, &b);
}

/* ---- dispatch ----------------------------------------------------------------- */

/* A bucket's subresource (sub, served for r's method: s3sub_serves) or,
 * sub NULL, the bucket itself. */
static void bucket_request(struct s3req *q)
{
    struct http_req *r = q->r;
    char b[sizeof(q->bucket)];
    memcpy(b, q->bucket, sizeof(b));
    free(q);
    const struct s3sub *sub = s3sub_find(r);
    if (sub && !s3sub_serves(sub, 0, r->method)) {
        s3sub_refuse(r, sub, 0);
        return;
    }
    if (r->method == HTTP_M_PUT && !sub) {
        if (!bmd_valid_name(b, strlen(b)) || strlen(b) < 3) {
            s3_error(r, 400, "InvalidBucketName", "the specified bucket is not valid");
            return;
        }
        node_read_body(r, BUCKET_BODY_MAX, create_body, free, xstrdup(b));
        return;
    }
    if (!bucket_exists(b)) {
        s3_error(r, 404, "NoSuchBucket", "the specified bucket does not exist");
        return;
    }
    struct gbuf x = {0};
    switch (sub ? sub->id : 0) {
    case S3SUB_LOCATION:
        gbuf_str(&x, XML_HEAD "<LocationConstraint xmlns=\"" S3_NS "\"></LocationConstraint>\n");
        reply_xml(r, 200, &x);
        return;
    case S3SUB_VERSIONING:
        gbuf_str(&x, XML_HEAD "<VersioningConfiguration xmlns=\"" S3_NS "\"/>\n");
        reply_xml(r, 200, &x);
        return;
    case S3SUB_UPLOADS:
        list_uploads(r, b);
        return;
    case S3SUB_DELETE:
        node_read_body(r, DELETE_BODY_MAX, delete_objects_body, free, xstrdup(b));
        return;
    case S3SUB_VERSIONS:
        list_objects(r, b, LIST_VERSIONS);
        return;
    case S3SUB_TAGGING:
        bucket_tagging(r, b);
        return;
    case S3SUB_ACL:
        bucket_acl(r);
        return;
    case 0:
        break;
    default: /* served by the table, unknown here: never the plain operation */
        s3sub_refuse(r, sub, 0);
        return;
    }
    if (r->method == HTTP_M_HEAD) {
        http_resp_header(r, "x-amz-bucket-region", "us-east-1");
        http_reply(r, 200, NULL, NULL, 0);
    } else if (r->method == HTTP_M_DELETE) {
        delete_bucket(r, b);
    } else if (r->method == HTTP_M_GET) {
        char lt[8];
        int v2 = http_query_get(r, "list-type", lt, sizeof(lt)) >= 0 && !strcmp(lt, "2");
        list_objects(r, b, v2 ? LIST_V2 : LIST_V1);
    } else {
        s3_error(r, 501, "NotImplemented", "%s on a bucket is not implemented", r->method_name);
    }
}

/*
 * Redirect mode (s3_redirect): the client is sent to the owning target.
 * Location carries the proxy's signature (the target trusts it instead of
 * the client's SigV4, which named the proxy) and asks for S3 answers; the
 * body is S3's TemporaryRedirect error with the target as <Endpoint>.
 */
static void s3_redirect(struct http_req *r, const char *bucket, const char *key,
                        const char *method, const char *query)
{
    struct cmap *m;
    const struct cmap_node *owner = s3_owner(r, bucket, key, &m);
    if (!owner)
        return;
    struct proxy *p = r->w->ctx;
    char *ek = http_pct_encode(key, strlen(key), 1);
    char *path = xasprintf("/v1/objects/%s/%s", bucket, ek);
    char *q = xasprintf("%s%s%s", S3_MODE_QUERY, query[0] ? "&" : "", query);
    char *url = node_signed_url(&p->node, method, owner->url, path, q);
    free(q);
    http_resp_header(r, "Location", "%s", url);
    __atomic_add_fetch(&p->node.st.redirects, 1, __ATOMIC_RELAXED);
    s3_redirect_reply(r, owner->url, bucket);
    cmap_unref(m);
    free(url);
    free(path);
    free(ek);
}

/* CopyObject's source, "[/]bucket/key[?versionId=...]" percent-encoded,
 * as a header line naming a signed URL on the source's target; NULL when
 * the client was answered (bad or missing source). */
static char *copy_from(struct http_req *r, const char *src)
{
    size_t n = strcspn(src, "?");
    char *dec = xmalloc(n + 1);
    int dl = http_pct_decode(src, n, dec);
    char *s = dec, err[256];
    if (dl > 0 && *s == '/')
        s++, dl--;
    char *slash = dl > 0 ? memchr(s, '/', (size_t)dl) : NULL;
    if (!slash || slash == s || (size_t)(slash - s) >= 64 ||
        objname_valid(slash + 1, (size_t)(dl - (slash + 1 - s)), err, sizeof(err))) {
        free(dec);
        s3_error(r, 400, "InvalidArgument", "x-amz-copy-source must be bucket/key");
        return NULL;
    }
    *slash = '\0';
    if (!bucket_exists(s)) {
        free(dec);
        s3_error(r, 404, "NoSuchBucket", "the copy source bucket does not exist");
        return NULL;
    }
    const char *key = slash + 1;
    struct cmap *m;
    const struct cmap_node *owner = s3_owner(r, s, key, &m);
    char *line = NULL;
    if (owner) {
        struct proxy *p = r->w->ctx;
        char *ek = http_pct_encode(key, strlen(key), 1);
        char *path = xasprintf("/v1/objects/%s/%s", s, ek);
        char *url = node_signed_url(&p->node, "GET", owner->url, path, NULL);
        line = xasprintf("%s: %s", COPY_FROM_HEADER, url);
        free(url);
        free(path);
        free(ek);
    }
    cmap_unref(m);
    free(dec);
    return line;
}

static void object_request(struct s3req *q, const char *key, size_t klen)
{
    struct http_req *r = q->r;
    char err[256];
    const struct s3sub *sub = s3sub_find(r);
    if (sub && !s3sub_serves(sub, 1, r->method)) {
        free(q);
        s3sub_refuse(r, sub, 1);
        return;
    }
    int part = sub && sub->id == S3SUB_UPLOAD_ID;
    if (objname_valid(key, klen, err, sizeof(err))) {
        s3_error(r, 400,
                 klen > OBJNAME_MAX                       ? "KeyTooLongError"
                 : utf8_valid_prefix(key, klen) != klen ? "InvalidObjectName"
                                                          : "InvalidArgument",
                 "%s", err);
        free(q);
        return;
    }
    if (!bucket_exists(q->bucket)) {
        free(q);
        s3_error(r, 404, "NoSuchBucket", "the specified bucket does not exist");
        return;
    }
    const char *method = NULL;
    switch (r->method) {
    case HTTP_M_GET: method = "GET"; break;
    case HTTP_M_HEAD: method = "HEAD"; break;
    case HTTP_M_PUT: method = "PUT"; break;
    case HTTP_M_DELETE: method = "DELETE"; break;
    case HTTP_M_POST: method = "POST"; break; /* multipart create and complete */
    default: break;
    }
    if (!method) {
        free(q);
        s3_error(r, 405, "MethodNotAllowed", "%s is not allowed on an object", r->method_name);
        return;
    }
    /* S3's limit on one PUT (an object, or a part); larger ones are
     * multipart uploads. Refused before any of the body is read. */
    const char *dl = http_req_header(r, "x-amz-decoded-content-length");
    uint64_t declared = 0;
    if (dl && parse_u64(dl, strlen(dl), &declared))
        declared = 0;
    if (r->method == HTTP_M_PUT &&
        ((r->content_length > 0 && (uint64_t)r->content_length > S3_PUT_MAX) ||
         declared > S3_PUT_MAX)) {
        free(q);
        http_resp_close(r);
        s3_error(r, 400, "EntityTooLarge",
                 "your proposed upload exceeds the maximum allowed size of 5 GiB per PUT; "
                 "use a multipart upload");
        return;
    }
    char *k = xstrndup(key, klen);
    char *fq = s3_query_without(r->query, "X-Amz-"); /* presigning */
    char *copy = NULL;
    /* CopyObject, UploadPartCopy */
    const char *src = http_req_header(r, "x-amz-copy-source");
    if (src && r->method == HTTP_M_PUT && (!sub || part) && !(copy = copy_from(r, src))) {
        free(fq);
        free(k);
        free(q);
        return; /* answered */
    }
    struct proxy *p = q->p;
    if (p->conf.s3_redirect && !copy && r->method != HTTP_M_HEAD && r->method != HTTP_M_POST &&
        !part)
        s3_redirect(r, q->bucket, k, method, fq);
    else
        s3_forward(r, q->bucket, k, &q->auth, method, fq, copy);
    free(copy);
    free(fq);
    free(k);
    free(q);
}

/* The bucket a virtual-host style request names in its Host header
 * ("BUCKET.anything"), when that bucket exists; IP literals name none. */
static int vhost_bucket(const struct http_req *r, char *out, size_t n)
{
    const char *h = http_req_header(r, "Host");
    const char *dot = h ? strchr(h, '.') : NULL;
    if (!dot || dot == h || (size_t)(dot - h) >= n)
        return 0;
    size_t hl = strcspn(h, ":");
    if (strspn(h, "0123456789.") >= hl || h[0] == '[')
        return 0;
    memcpy(out, h, (size_t)(dot - h));
    out[dot - h] = '\0';
    return bmd_valid_name(out, strlen(out)) && bucket_exists(out);
}

/* rest: the path after the endpoint's own part ("/s3/" or "/"). */
static void s3_route(struct proxy *p, struct http_req *r, const char *rest, size_t rl)
{
    s3_mode(r);
    const char *code = NULL;
    char msg[300];
    struct s3req *q = xcalloc(1, sizeof(*q));
    q->p = p;
    q->r = r;
    int st = s3auth_check(&p->node.auth.keys, r, time(NULL), &q->auth, &code, msg, sizeof(msg));
    if (st) {
        free(q);
        s3_error(r, st, code, "%s", msg);
        return;
    }
    if (vhost_bucket(r, q->bucket, sizeof(q->bucket))) {
        if (rl == 0)
            bucket_request(q);
        else
            object_request(q, rest, rl);
        return;
    }
    if (rl == 0) {
        free(q);
        if (r->method == HTTP_M_GET)
            list_buckets(r);
        else
            s3_error(r, 405, "MethodNotAllowed", "only GET (ListBuckets) is allowed here");
        return;
    }
    const char *slash = memchr(rest, '/', rl);
    size_t bl = slash ? (size_t)(slash - rest) : rl;
    if (bl == 0 || bl >= sizeof(q->bucket) || memchr(rest, '\0', bl)) {
        free(q);
        s3_error(r, 400, "InvalidBucketName", "the specified bucket is not valid");
        return;
    }
    memcpy(q->bucket, rest, bl);
    q->bucket[bl] = '\0';
    if (!slash || bl + 1 == rl)
        bucket_request(q);
    else
        object_request(q, slash + 1, rl - bl - 1);
}

int s3_handle(struct proxy *p, struct http_req *r)
{
    if (r->path_len < 3 || memcmp(r->path, "/s3", 3) || (r->path_len > 3 && r->path[3] != '/'))
        return 0;
    s3_route(p, r, r->path_len > 4 ? r->path + 4 : "", r->path_len > 4 ? r->path_len - 4 : 0);
    return 1;
}

void s3_handle_root(struct proxy *p, struct http_req *r)
{
    s3_route(p, r, r->path + 1, r->path_len - 1);
}
