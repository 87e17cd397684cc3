/*
 * s3listing: the S3 listings of the proxies: ListObjects (v1), ListObjectsV2,
 * ListObjectVersions (one "null" version per name) and
 * ListMultipartUploads.
 *
 * Object listings read the merged listing (objlist.c) page by page, in
 * process, and cut S3's page from it: names
 * after the marker, rolled up into CommonPrefixes at the delimiter, at
 * most max-keys. A continuation token carries the native page token and
 * the last name returned; a Shoal bucket's native token is a name itself,
 * a backed bucket's is the backend's. Uploads in progress are asked of
 * every target and merged.
 *
 * Thread: the worker's loop; every call answers r, now or later.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "buckets.h"
#include "cmap.h"
#include "nodeclient.h"
#include "http.h"
#include "node.h"
#include "listpage.h"
#include "objname.h"
#include "objlist.h"
#include "proxy.h"
#include "s3.h"
#include "s3own.h"
#include "s3front.h"
#include "s3listing.h"
#include "util.h"
#include "worker.h"

#define LIST_MAX_KEYS 1000
#define LIST_MAX_PAGES 200      /* native pages read for one S3 page, at most */
#define VERSION_MARKER_MAX 24    /* room for a version id */
#define VERSION_ID_LEN 16        /* its hex digits (target/store/store.h), or "null" */

struct listing {
    struct http_req *r;
    enum s3listing_kind kind;
    char bucket[S3_BUCKET_LEN];
    char *prefix, *delim, *after;  /* after: names up to it are skipped */
    char *token_in;                /* the client's continuation token, echoed */
    char *page;                    /* native token of the page being read */
    int max_keys;
    int url_enc;
    int owner;                   /* each item's Owner: v1 and versions, v2 with fetch-owner */
    char owner_id[128];          /* ... the bucket's (s3own.h) */
    int remote;                    /* backend listing: page tokens are not names */
    int stored;                    /* versions of a Shoal bucket: names as stored */
    int pages;
    int count;
    int truncated;
    char *next;                    /* resume point: a name or a common prefix (versions: a
                                    * stored name, objname.h) */
    char *latest_of;               /* versions: the name whose latest version was listed */
    char next_vid[VERSION_MARKER_MAX];  /* versions: the id of the version next is */
    char *last_cp;
    struct gbuf items;             /* <Contents>/<Version> elements */
    struct gbuf cps;               /* <CommonPrefixes> elements */
};

static void listing_free(struct listing *l)
{
    http_req_unref(l->r);
    free(l->prefix);
    free(l->delim);
    free(l->after);
    free(l->token_in);
    free(l->page);
    free(l->next);
    free(l->last_cp);
    free(l->latest_of);
    gbuf_free(&l->items);
    gbuf_free(&l->cps);
    free(l);
}

/* A value in the listing, URL-encoded when the client asked for it. */
static void list_value(struct listing *l, struct gbuf *b, const char *elem, const char *v)
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

static void list_finish(struct listing *l)
{
    struct http_req *r = l->r;
    struct gbuf b = {0};
    const char *root = l->kind == S3LISTING_VERSIONS ? "ListVersionsResult" : "ListBucketResult";
    gbuf_str(&b, S3_XML_HEAD "<");
    gbuf_str(&b, root);
    gbuf_str(&b, " xmlns=\"" S3_NS "\">");
    s3_xml_elem(&b, "Name", l->bucket);
    if (l->kind == S3LISTING_V1)   /* S3 echoes v1's Prefix as sent, encoded or not */
        s3_xml_elem(&b, "Prefix", l->prefix);
    else
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
    if (l->kind == S3LISTING_V2) {
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
    } else if (l->kind == S3LISTING_V1) {
        char mk[OBJNAME_MAX + 1];
        list_value(l, &b, "Marker", http_query_get(r, "marker", mk, sizeof(mk)) >= 0 ? mk : "");
        if (next)
            list_value(l, &b, "NextMarker", next);
    } else {
        char mk[OBJNAME_MAX + 1], vm[VERSION_MARKER_MAX];
        list_value(l, &b, "KeyMarker",
                   http_query_get(r, "key-marker", mk, sizeof(mk)) >= 0 ? mk : "");
        s3_xml_elem(&b, "VersionIdMarker",
                    http_query_get(r, "version-id-marker", vm, sizeof(vm)) >= 0 ? vm : "");
        if (next) {
            size_t nl = strlen(next), bl = l->stored ? objname_base_len(next, nl) : nl;
            char *key = xstrndup(next, bl);
            list_value(l, &b, "NextKeyMarker", key);
            free(key);
            if (bl < nl)         /* a version: resume after it (its stored id) */
                s3_xml_elem(&b, "NextVersionIdMarker", next + bl + 1);
            else if (!l->last_cp || strcmp(next, l->last_cp))
                s3_xml_elem(&b, "NextVersionIdMarker", l->next_vid[0] ? l->next_vid : "null");
        }
    }
    gbuf_add(&b, l->items.p, l->items.n);
    gbuf_add(&b, l->cps.p, l->cps.n);
    gbuf_str(&b, "</");
    gbuf_str(&b, root);
    gbuf_str(&b, ">\n");
    s3front_reply_xml(r, 200, &b);
    listing_free(l);
}

/* A version listing's entry (store_list with versions): its ETag field is
 * "<version id> <D|O> <ETag>". 0, or -1 when it is not one. */
static int version_fields(const struct objlist_ent *e, char *vid, size_t vn, int *marker,
                          char *etag, size_t en)
{
    const char *sp = memchr(e->etag, ' ', e->elen);
    size_t il = sp ? (size_t)(sp - e->etag) : 0;
    if (!sp || il >= vn || e->elen < il + 3 || sp[2] != ' ')
        return -1;
    snprintf(vid, vn, "%.*s", (int)il, e->etag);
    *marker = sp[1] == 'D';
    snprintf(etag, en, "%.*s", (int)(e->elen - il - 3), sp + 3);
    return 0;
}

static void list_item(struct listing *l, const struct objlist_ent *e, const char *name)
{
    char date[40], size[24], etag[LISTPAGE_ETAG_MAX + 1], vid[VERSION_MARKER_MAX];
    int marker = 0;
    if (e->last_modified && e->last_modified[0])
        snprintf(date, sizeof(date), "%s", e->last_modified);
    else
        s3_iso_date(e->mtime_ns, date, sizeof(date));
    snprintf(size, sizeof(size), "%llu", (unsigned long long)e->size);
    if (!l->stored || version_fields(e, vid, sizeof(vid), &marker, etag, sizeof(etag)))
        snprintf(etag, sizeof(etag), "%.*s", (int)e->elen, e->etag), strcpy(vid, "null");
    struct gbuf *b = &l->items;
    const char *elem = l->kind != S3LISTING_VERSIONS ? "Contents"
                       : marker                       ? "DeleteMarker"
                                                      : "Version";
    gbuf_str(b, "<");
    gbuf_str(b, elem);
    gbuf_str(b, ">");
    list_value(l, b, "Key", name);
    if (l->kind == S3LISTING_VERSIONS) {
        /* a name's first entry is its latest version */
        int latest = !l->latest_of || strcmp(l->latest_of, name);
        free(l->latest_of);
        l->latest_of = xstrdup(name);
        s3_xml_elem(b, "VersionId", vid);
        s3_xml_elem(b, "IsLatest", latest ? "true" : "false");
        snprintf(l->next_vid, sizeof(l->next_vid), "%s", vid);
    }
    s3_xml_elem(b, "LastModified", date);
    if (!marker) {
        s3_xml_elem(b, "ETag", etag);
        s3_xml_elem(b, "Size", size);
        s3_xml_elem(b, "StorageClass", "STANDARD");
    }
    if (l->owner) {
        char writer[LISTPAGE_OWNER_MAX + 1];
        snprintf(writer, sizeof(writer), "%.*s", (int)e->olen, e->owner ? e->owner : "");
        gbuf_str(b, "<Owner>");
        s3own_xml(b, writer[0] ? writer : l->owner_id);
        gbuf_str(b, "</Owner>");
    }
    gbuf_str(b, "</");
    gbuf_str(b, elem);
    gbuf_str(b, ">");
}

static void list_next_page(struct listing *l);

static void set_str(char **dst, const char *s, size_t n)
{
    free(*dst);
    *dst = xstrndup(s, n);
}

/* Cut S3's page from one merged page: 1 when the cut is complete (max-keys
 * reached), 0 when the next merged page is wanted. */
static int list_cut(struct listing *l, const struct objlist_page *pg)
{
    size_t pl = strlen(l->prefix), dl = strlen(l->delim);
    for (size_t i = 0; i < pg->n; i++) {
        const struct objlist_ent *e = &pg->v[i];
        const char *name = e->name;
        size_t nl = e->nlen;
        /* a version listing's names are stored names: the key, then its
         * version's id (objname.h) */
        size_t bl = l->stored ? objname_base_len(name, nl) : nl;
        if (bl < pl || memcmp(name, l->prefix, pl))
            continue;
        if (l->after && listpage_name_cmp(name, nl, l->after, strlen(l->after)) <= 0)
            continue;
        const char *d = dl && bl > pl ? memmem(name + pl, bl - pl, l->delim, dl) : NULL;
        size_t cl = d ? (size_t)(d - name) + dl : bl;
        if (d && l->last_cp && strlen(l->last_cp) == cl && !memcmp(l->last_cp, name, cl))
            continue;
        if (l->count == l->max_keys) {
            l->truncated = 1;
            return 1;
        }
        char *shown = xstrndup(name, cl);
        if (d) {
            set_str(&l->last_cp, name, cl);
            gbuf_str(&l->cps, "<CommonPrefixes>");
            list_value(l, &l->cps, "Prefix", shown);
            gbuf_str(&l->cps, "</CommonPrefixes>");
        } else {
            list_item(l, e, shown);
        }
        free(l->next);
        l->next = d ? shown : xstrndup(name, nl);
        if (!d)
            free(shown);
        l->count++;
    }
    return 0;
}

static void list_page(void *arg, struct objlist_page *pg, int status, const char *err)
{
    struct listing *l = arg;
    struct http_req *r = l->r;
    if (!pg) {
        if (status == 404)
            s3_fail(r, S3E_NO_SUCH_BUCKET, "the specified bucket does not exist");
        else if (status == 501)
            s3_fail(r, S3E_NOT_IMPLEMENTED, "%.200s", err);
        else if (status >= 500)
            s3_fail(r, S3E_SERVICE_UNAVAILABLE, "listing failed: %.200s", err);
        else /* objlist's status, passed on */
            s3_fail_status(r, status, S3E_INVALID_REQUEST, "listing failed: %.200s", err);
        listing_free(l);
        return;
    }
    if (pg->absent && !pg->remote) {   /* S3 has no partial listings: fail, not miss keys */
        http_resp_header_str(r, "Retry-After", "5");
        s3_fail(r, S3E_SERVICE_UNAVAILABLE, "targets %s are down: the listing would be incomplete",
                pg->absent);
        objlist_page_free(pg);
        listing_free(l);
        return;
    }
    list_cut(l, pg);
    const char *nt = pg->next;
    if (!l->truncated && nt[0]) {
        if (++l->pages >= LIST_MAX_PAGES || l->count == l->max_keys) {
            /* stop here; the client resumes from the last name or prefix */
            l->truncated = 1;
        } else if (!l->remote && l->last_cp && !strncmp(nt, l->last_cp, strlen(l->last_cp))) {
            /* the rest of this common prefix is skipped, not read */
            free(l->page);
            l->page = xasprintf("%s\xff", l->last_cp);
            objlist_page_free(pg);
            list_next_page(l);
            return;
        } else {
            set_str(&l->page, nt, strlen(nt));
            objlist_page_free(pg);
            list_next_page(l);
            return;
        }
    }
    objlist_page_free(pg);
    /* A resume point inside a common prefix skips the rest of it. */
    if (l->truncated && l->next && l->last_cp && !strcmp(l->next, l->last_cp)) {
        char *skip = xasprintf("%s\xff", l->last_cp);
        free(l->next);
        l->next = skip;
    }
    if (l->truncated && l->kind != S3LISTING_V2 && l->next && l->last_cp &&
        !strncmp(l->next, l->last_cp, strlen(l->last_cp)))
        set_str(&l->next, l->last_cp, strlen(l->last_cp)); /* V1 markers are names */
    list_finish(l);
}

static void list_next_page(struct listing *l)
{
    int want = l->max_keys - l->count + 1; /* one more tells whether there is more */
    if (want > LIST_MAX_KEYS + 1)
        want = LIST_MAX_KEYS + 1;
    objlist_start(l->r, BMD_PROVIDER_SHOAL, l->bucket, l->prefix, l->page ? l->page : "", want,
                  l->stored ? OBJLIST_VERSIONS : 0, list_page, l);
}

/* ListObjectVersions' version-id-marker: with a key-marker, the version
 * of it to resume after (l->latest_of: that key's latest is listed); key
 * its key-marker. 0, or 1 with r answered (and l freed). */
static int version_marker(struct http_req *r, struct listing *l, const char *key)
{
    char vm[VERSION_MARKER_MAX + 1];
    int n = http_query_get(r, "version-id-marker", vm, sizeof(vm));
    if (n == -1 || (n == 0 && !key[0]))
        return 0;
    if (n == 0)
        return 0;                /* an empty one is none */
    int ok = n > 0 && (!strcmp(vm, "null") ||
                       (n <= VERSION_ID_LEN && strspn(vm, "0123456789abcdef") == (size_t)n));
    const char *why = !key[0] ? "A version-id marker cannot be specified without a key marker."
                      : !ok   ? "Invalid version id specified"
                              : NULL;
    if (why) {
        listing_free(l);
        s3_fail(r, S3E_INVALID_ARGUMENT, "%s", why);
        return 1;
    }
    l->latest_of = xasprintf("%s%c%s", key, OBJNAME_VERSION_SEP, vm);
    return 0;
}

/* Where a listing resumes after the marker m: a versions listing after
 * every version of key m, or (latest, from version_marker) after the
 * version it names: the stored name (objname.h); "null" names the key's
 * own record. */
static char *after_key(int stored, const char *m, char *latest)
{
    if (!stored)
        return xstrdup(m);
    if (!latest)
        return xasprintf("%s%c\xff", m, OBJNAME_VERSION_SEP);
    char *sep = strchr(latest, OBJNAME_VERSION_SEP);
    char *a = !strcmp(sep + 1, "null") ? xstrndup(latest, (size_t)(sep - latest))
                                       : xstrdup(latest);
    *sep = '\0';                 /* latest_of: the key */
    return a;
}

void s3listing_objects(struct http_req *r, const char *bucket, enum s3listing_kind kind)
{
    char prefix[OBJNAME_MAX + 1] = "", delim[64] = "", mk[16], enc[16];
    char tok[8200], after[OBJNAME_MAX + 1] = "";
    if (http_query_get(r, "prefix", prefix, sizeof(prefix)) == -2 ||
        http_query_get(r, "delimiter", delim, sizeof(delim)) == -2) {
        s3_fail(r, S3E_INVALID_ARGUMENT, "prefix or delimiter too long or badly encoded");
        return;
    }
    if (!buckets_exist(BMD_PROVIDER_SHOAL, bucket)) {
        s3_fail(r, S3E_NO_SUCH_BUCKET, "the specified bucket does not exist");
        return;
    }
    struct listing *l = xcalloc(1, sizeof(*l));
    l->r = r;
    l->kind = kind;
    snprintf(l->bucket, sizeof(l->bucket), "%s", bucket);
    s3own_of_bucket(bucket, l->owner_id, sizeof(l->owner_id));
    l->max_keys = LIST_MAX_KEYS;
    if (http_query_get(r, "max-keys", mk, sizeof(mk)) >= 0) {
        uint64_t v;
        if (parse_u64(mk, strlen(mk), &v)) {
            free(l);
            s3_fail(r, S3E_INVALID_ARGUMENT, "max-keys must be a non-negative integer");
            return;
        }
        l->max_keys = v > LIST_MAX_KEYS ? LIST_MAX_KEYS : (int)v;
    }
    if (http_query_get(r, "encoding-type", enc, sizeof(enc)) >= 0) {
        if (strcmp(enc, "url")) {
            free(l);
            s3_fail(r, S3E_INVALID_ARGUMENT, "encoding-type must be url");
            return;
        }
        l->url_enc = 1;
    }
    char fo[8];
    l->owner = kind != S3LISTING_V2 ||
               (http_query_get(r, "fetch-owner", fo, sizeof(fo)) >= 0 && !strcmp(fo, "true"));
    l->prefix = xstrdup(prefix);
    l->delim = xstrdup(delim);
    http_req_ref(r);
    int remote = l->remote = objlist_by_backend(BMD_PROVIDER_SHOAL, bucket);
    l->stored = kind == S3LISTING_VERSIONS && !remote;
    /* an empty continuation-token is as none, but echoed as S3 does */
    int tl = kind == S3LISTING_V2 ? http_query_get(r, "continuation-token", tok, sizeof(tok)) : -1;
    if (tl == 0)
        l->token_in = xstrdup("");
    if (tl > 0) {
        char *page, *aft;
        if (token_parse(tok, &page, &aft)) {
            listing_free(l);
            s3_fail(r, S3E_INVALID_ARGUMENT, "the continuation token is not valid");
            return;
        }
        l->token_in = xstrdup(tok);
        l->page = remote ? page : xstrdup(aft);
        l->after = aft;
        if (!remote)
            free(page);
    } else {
        const char *arg = kind == S3LISTING_V2 ? "start-after"
                          : kind == S3LISTING_V1 ? "marker"
                                            : "key-marker";
        if (http_query_get(r, arg, after, sizeof(after)) < 0)
            after[0] = '\0';
        if (l->stored && version_marker(r, l, after))
            return;              /* answered */
        if (after[0]) {
            l->after = after_key(l->stored, after, l->latest_of);
            /* a Shoal bucket's listing starts after a name directly */
            if (!remote)
                l->page = xstrdup(l->after);
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
    char bucket[S3_BUCKET_LEN];
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
        s3_fail(r, S3E_SERVICE_UNAVAILABLE, "a storage target did not answer");
    } else {
        size_t n = json_array_size(l->all);
        json_t **v = xcalloc(n + 1, sizeof(*v));
        for (size_t i = 0; i < n; i++)
            v[i] = json_array_get(l->all, i);
        qsort(v, n, sizeof(*v), upload_cmp);
        /* room for the values as sent: a marker encoded is up to three times its name */
        char pre[3 * OBJNAME_MAX + 1] = "", km[3 * OBJNAME_MAX + 1] = "", um[64] = "", num[16];
        int max = 1000, mn;
        uint64_t mu = 1000;
        if (http_query_get(r, "prefix", pre, sizeof(pre)) == -2 ||
            http_query_get(r, "key-marker", km, sizeof(km)) == -2 ||
            http_query_get(r, "upload-id-marker", um, sizeof(um)) == -2 ||
            (mn = http_query_get(r, "max-uploads", num, sizeof(num))) == -2 ||
            (mn >= 0 && parse_u64(num, strlen(num), &mu))) {
            s3_fail(r, S3E_INVALID_ARGUMENT, "prefix, key-marker, upload-id-marker or "
                                             "max-uploads is not valid");
            goto out;
        }
        if (mu < 1000)
            max = (int)mu;
        /* after the markers: keys past key-marker, and with upload-id-marker
         * that key's uploads past it too */
        size_t first = 0;
        while (first < n && km[0]) {
            int c = strcmp(json_string_value(json_object_get(v[first], "name")), km);
            if (c > 0 || (c == 0 && um[0] &&
                          strcmp(json_string_value(json_object_get(v[first], "upload")), um) > 0))
                break;
            first++;
        }
        size_t end = first + (size_t)max < n ? first + (size_t)max : n;
        char owner[128];
        s3own_of_bucket(l->bucket, owner, sizeof(owner));
        struct gbuf b = {0};
        gbuf_str(&b, S3_XML_HEAD "<ListMultipartUploadsResult xmlns=\"" S3_NS "\">");
        s3_xml_elem(&b, "Bucket", l->bucket);
        s3_xml_elem(&b, "Prefix", pre);
        s3_xml_elem(&b, "KeyMarker", km);
        s3_xml_elem(&b, "UploadIdMarker", um);
        if (end < n && end > first) {
            s3_xml_elem(&b, "NextKeyMarker", json_string_value(json_object_get(v[end - 1], "name")));
            s3_xml_elem(&b, "NextUploadIdMarker",
                        json_string_value(json_object_get(v[end - 1], "upload")));
        }
        snprintf(num, sizeof(num), "%d", max);
        s3_xml_elem(&b, "MaxUploads", num);
        s3_xml_elem(&b, "IsTruncated", end < n && max ? "true" : "false");
        for (size_t i = first; i < end; i++) {
            char date[40];
            s3_iso_date((uint64_t)json_integer_value(json_object_get(v[i], "initiated")), date,
                        sizeof(date));
            gbuf_str(&b, "<Upload>");
            s3_xml_elem(&b, "Key", json_string_value(json_object_get(v[i], "name")));
            s3_xml_elem(&b, "UploadId", json_string_value(json_object_get(v[i], "upload")));
            const char *by = json_string_value(json_object_get(v[i], "initiator"));
            gbuf_str(&b, "<Initiator>");
            s3own_xml(&b, by ? by : owner);
            gbuf_str(&b, "</Initiator><Owner>");
            s3own_xml(&b, by ? by : owner);
            gbuf_str(&b, "</Owner>");
            s3_xml_elem(&b, "StorageClass", "STANDARD");
            s3_xml_elem(&b, "Initiated", date);
            gbuf_str(&b, "</Upload>");
        }
        gbuf_str(&b, "</ListMultipartUploadsResult>\n");
        s3front_reply_xml(r, 200, &b);
    out:
        free(v);
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

void s3listing_uploads(struct http_req *r, const char *bucket)
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
    for (int i = 0; m && i < m->n_members; i++) {
        const struct cmap_node *t = &m->nodes[m->members[i]];
        char *u = node_signed_urlf(r->w->ctx, "GET", t->url,
                                   "/v1/internal/uploads?bucket=%s&prefix=%s", bucket, ep);
        l->pending++;
        nodeclient_request(worker_hc(r), "GET", u, NULL, 0, NULL, 30000, ulist_one, l);
        free(u);
    }
    cmap_unref(m);
    free(ep);
    if (--l->pending == 0)
        ulist_finish(l);
}
