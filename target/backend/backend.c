/*
 * backend: the target's client of remote buckets (S3 and S3-compatible
 * stores, Azure Blob containers, and read-only HTTP origins), on the
 * worker's curlclient (libcurl multi on the loop). What differs between
 * kinds (URLs, signing, listing queries and pages) is one table, kinds[]. Every operation here re-signs and retries by itself on
 * 5xx, throttling (503 SlowDown) and connection errors, with exponential
 * backoff; the streaming GET that lands an object in the store lives in
 * fetch.c and uses backend_get_req() and the same retry rules.
 *
 * Thread: the loop of the curlclient given (a worker's, target_cli()).
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "azblock.h"
#include "backend.h"
#include "bprof.h"
#include "curlclient.h"
#include "log.h"
#include "nativelist.h"
#include "s3list.h"
#include "sigv4.h"
#include "target.h"
#include "util.h"

static const char *prop_str(const json_t *props, const char *k)
{
    const char *v = json_string_value(json_object_get(props, k));
    return v && v[0] ? v : NULL;
}

/* ---- the kinds ------------------------------------------------------------- */

static time_t now_s(void)
{
    return (time_t)(wall_ns() / 1000000000u);
}

static void s3_build(const struct backend *b, const char *method, const char *key,
                     const char *query, const char *payload_hash, const char *const *extra,
                     int n_extra, struct s3_req *out)
{
    s3_req_build(out, &b->s3, method, b->bucket, key, query, payload_hash, extra, n_extra,
                 now_s());
}

static void az_build(const struct backend *b, const char *method, const char *key,
                     const char *query, const char *payload_hash, const char *const *extra,
                     int n_extra, struct s3_req *out)
{
    (void)payload_hash;
    az_req_build(out, &b->az, method, b->bucket, key, query, extra, n_extra, now_s());
}

/* Another Shoal cluster's native API: objects under /v1/objects, a
 * bucket's listing under /v1/buckets, signed with SigV4 as its clients
 * sign (the profile's endpoint is one of its proxies, which redirects
 * object requests to their owners: followed, see kinds[]). */
static void shoal_build(const struct backend *b, const char *method, const char *key,
                        const char *query, const char *payload_hash, const char *const *extra,
                        int n_extra, struct s3_req *out)
{
    struct s3_cfg c = b->s3;
    c.endpoint = xasprintf("%s%s", b->s3.endpoint, key ? "/v1/objects" : "/v1/buckets");
    c.vhost = 0;
    char *q = !b->rprov ? xstrdup(query)
              : query[0] ? xasprintf("%s&provider=%s", query, b->rprov)
                         : xasprintf("provider=%s", b->rprov);
    /* its one bucket-level request is the listing, /v1/buckets/B/objects */
    s3_req_build(out, &c, method, b->bucket, key ? key : "objects", q, payload_hash, extra,
                 n_extra, now_s());
    free(q);
    free(c.endpoint);
}

static void http_build(const struct backend *b, const char *method, const char *key,
                       const char *query, const char *payload_hash, const char *const *extra,
                       int n_extra, struct s3_req *out)
{
    (void)method;
    (void)query;
    (void)payload_hash;
    memset(out, 0, sizeof(*out));
    if (key && key[0]) {
        char *ek = sigv4_uri_encode(key, strlen(key), 1);
        out->url = xasprintf("%s/%s", b->base_url, ek);
        free(ek);
    } else {                     /* the URL whole (a download job's) */
        out->url = xstrdup(b->base_url);
    }
    for (int i = 0; i < n_extra; i++)
        out->hdrs[out->n++] = xstrdup(extra[i]);
}

/* One listing page's query: prefix, and token (a continuation) or after
 * (a name to start after), both percent-encoded. */
static char *s3_list_query(const char *ep, const char *et, int after, int limit)
{
    return xasprintf("list-type=2&max-keys=%d&prefix=%s%s%s", limit, ep,
                     et[0] ? (after ? "&start-after=" : "&continuation-token=") : "", et);
}

static char *shoal_list_query(const char *ep, const char *et, int after, int limit)
{
    (void)after;                 /* its token is the last name given */
    return xasprintf("limit=%d&prefix=%s%s%s", limit, ep, et[0] ? "&token=" : "", et);
}

static char *az_list_query(const char *ep, const char *et, int after, int limit)
{
    (void)after;                 /* refused before: markers are opaque */
    return xasprintf("restype=container&comp=list&maxresults=%d&prefix=%s%s%s", limit, ep,
                     et[0] ? "&marker=" : "", et);
}

static int s3_parse(const char *body, size_t len, struct s3list *out, char *err, size_t errlen)
{
    return s3list_parse_as(&s3list_s3, body, len, out, err, errlen);
}

static int az_parse(const char *body, size_t len, struct s3list *out, char *err, size_t errlen)
{
    return s3list_parse_as(&s3list_azure, body, len, out, err, errlen);
}

/* What differs between kinds of store; the rest of this file is theirs
 * in common. */
static const struct kind {
    const char *scheme;          /* of labels: "s3://bucket" */
    int writable;
    int by_name;                 /* a listing can start after a name (write-back's pages) */
    int multipart;               /* takes S3's multipart uploads (backendmpu.h) */
    int follow;                  /* redirects to follow */
    void (*build)(const struct backend *b, const char *method, const char *key,
                  const char *query, const char *payload_hash, const char *const *extra,
                  int n_extra, struct s3_req *out);
    char *(*list_query)(const char *ep, const char *et, int after, int limit);
    int (*list_parse)(const char *body, size_t len, struct s3list *out, char *err,
                      size_t errlen);
    void (*err_code)(const char *body, size_t len, char *out, size_t n);
    const char *put_hdr;         /* a whole object's PUT adds it, or NULL */
} kinds[] = {
    [BK_NONE] = {"", 0, 0, 0, 0, http_build, NULL, NULL, s3list_err_code, NULL},
    [BK_S3] = {"s3", 1, 1, 1, 0, s3_build, s3_list_query, s3_parse, s3list_err_code, NULL},
    [BK_HTTP] = {"http", 0, 0, 0, 0, http_build, NULL, NULL, s3list_err_code, NULL},
    [BK_AZURE] = {"azure", 1, 0, 0, 0, az_build, az_list_query, az_parse, s3list_err_code,
                  "x-ms-blob-type: BlockBlob"},
    [BK_SHOAL] = {"shoal", 1, 1, 0, 3, shoal_build, shoal_list_query, nativelist_parse,
                  nativelist_err, NULL},
};

/* The metrics' provider label. */
static const char *provider(const struct backend *b)
{
    return b->kind == BK_NONE ? "http" : kinds[b->kind].scheme;
}

int backend_writable(const struct backend *b)
{
    return kinds[b->kind].writable;
}

int backend_listable(const struct backend *b)
{
    return kinds[b->kind].list_parse != NULL;
}

int backend_lists_by_name(const struct backend *b)
{
    return kinds[b->kind].by_name;
}

int backend_multipart(const struct backend *b)
{
    return kinds[b->kind].multipart;
}

int backend_list_parse(const struct backend *b, const char *body, size_t len,
                       struct s3list *out, char *err, size_t errlen)
{
    if (!kinds[b->kind].list_parse) {
        memset(out, 0, sizeof(*out));
        snprintf(err, errlen, "backend %s has no listing", b->label);
        return -1;
    }
    return kinds[b->kind].list_parse(body, len, out, err, errlen);
}

/* ---- a bucket's backend ------------------------------------------------------ */

/* b's store and credentials from profile name (bprof.h) of the current
 * BMD: its settings alone (s3_cfg_make, az_cfg_make), never the default
 * profile's. A profile that is gone (a bucket is never left naming one)
 * signs nothing, which fails visibly. */
static void profile_cfg(const char *name, struct backend *b)
{
    struct bmd *bm = bmd_current();
    const json_t *p = bm ? bmd_profile(bm, name) : NULL;
    if (b->kind == BK_AZURE)
        az_cfg_make(&b->az, bprof_str(p, "endpoint"), bprof_str(p, "account"),
                    bprof_str(p, "account_key"), bprof_str(p, "sas"));
    else if (b->kind == BK_SHOAL)   /* no default endpoint: none fails, unreachable */
        s3_cfg_make(&b->s3, bprof_str(p, "endpoint") ?: "http://profile-missing.invalid",
                    NULL, "path", bprof_str(p, "access_key"), bprof_str(p, "secret_key"),
                    NULL);
    else
        s3_cfg_make(&b->s3, bprof_str(p, "endpoint"), bprof_str(p, "region"),
                    bprof_str(p, "addressing"), bprof_str(p, "access_key"),
                    bprof_str(p, "secret_key"), bprof_str(p, "session_token"));
    bmd_unref(bm);
}

/* A bucket's own endpoint, region and addressing over its S3 profile's. */
static void s3_props(const struct bmd_bucket *bk, struct backend *b)
{
    const char *ep = prop_str(bk->props, "endpoint");
    const char *rg = prop_str(bk->props, "region");
    const char *ad = prop_str(bk->props, "addressing");
    if (ep) {
        free(b->s3.endpoint);
        b->s3.endpoint = xstrdup(ep);
        b->s3.vhost = 0;
    }
    if (rg) {
        free(b->s3.region);
        b->s3.region = xstrdup(rg);
    }
    if (ad)
        b->s3.vhost = !strcmp(ad, "virtual");
}

void backend_resolve(const struct target *t, const struct bmd_bucket *bk, struct backend *b)
{
    memset(b, 0, sizeof(*b));
    const char *remote = NULL;
    const char *scheme = bmd_backend_scheme(bk, &remote);
    b->kind = BK_NONE;
    for (size_t i = 1; scheme && i < ARRAY_LEN(kinds); i++)
        if (!strcmp(scheme, kinds[i].scheme))
            b->kind = (enum backend_kind)i;
    b->validate_warm_get = json_is_true(json_object_get(bk->props, "validate_warm_get"));
    b->write_back = bmd_write_back(bk);
    b->retries = t->conf.backend_retries;
    b->timeout_s = t->conf.backend_timeout_s;
    if (b->kind == BK_NONE)
        return;
    if (b->kind == BK_HTTP) {
        b->base_url = xstrdup(remote);
        size_t n = strlen(b->base_url);
        while (n > 0 && b->base_url[n - 1] == '/')
            b->base_url[--n] = '\0';
        b->label = xstrdup(b->base_url);
        return;
    }
    const char *slash = b->kind == BK_SHOAL ? strchr(remote, '/') : NULL;
    b->rprov = slash ? xstrndup(remote, (size_t)(slash - remote)) : NULL;
    b->bucket = xstrdup(slash ? slash + 1 : remote);
    const char *pname = prop_str(bk->props, "profile");
    if (pname || b->kind == BK_SHOAL) {  /* another cluster is only ever a profile's */
        b->label = xasprintf("%s://%s (profile %s)", kinds[b->kind].scheme, remote,
                             pname ? pname : "none");
        profile_cfg(pname ? pname : "", b);
    } else {
        b->label = xasprintf("%s://%s", kinds[b->kind].scheme, b->bucket);
        if (b->kind == BK_AZURE)
            az_cfg_copy(&b->az, &t->az);
        else
            s3_cfg_copy(&b->s3, &t->s3);
    }
    if (b->kind == BK_S3 && !pname)   /* a profile's keys go only where it says */
        s3_props(bk, b);
}

int backend_of(const struct target *t, const char *provider, const char *name,
               struct backend *b)
{
    struct bmd *bm = bmd_current();
    const struct bmd_bucket *bk = bm ? bmd_find(bm, provider, name) : NULL;
    if (bk)
        backend_resolve(t, bk, b);
    else
        memset(b, 0, sizeof(*b));
    bmd_unref(bm);
    return bk ? 0 : -ENOENT;
}

void backend_copy(struct backend *d, const struct backend *s)
{
    *d = *s;
    d->label = s->label ? xstrdup(s->label) : NULL;
    d->bucket = s->bucket ? xstrdup(s->bucket) : NULL;
    d->base_url = s->base_url ? xstrdup(s->base_url) : NULL;
    d->rprov = s->rprov ? xstrdup(s->rprov) : NULL;
    if (s->kind == BK_S3 || s->kind == BK_SHOAL)
        s3_cfg_copy(&d->s3, &s->s3);
    if (s->kind == BK_AZURE)
        az_cfg_copy(&d->az, &s->az);
}

void backend_free(struct backend *b)
{
    free(b->label);
    free(b->bucket);
    free(b->base_url);
    free(b->rprov);
    if (b->kind == BK_S3 || b->kind == BK_SHOAL)
        s3_cfg_free(&b->s3);
    if (b->kind == BK_AZURE)
        az_cfg_free(&b->az);
    memset(b, 0, sizeof(*b));
}

static void build(const struct backend *b, const char *method, const char *key,
                  const char *query, const char *payload_hash, const char *const *extra,
                  int n_extra, struct s3_req *out)
{
    kinds[b->kind].build(b, method, key, query, payload_hash, extra, n_extra, out);
}

void backend_get_req(const struct backend *b, const char *key, const char *range,
                     struct s3_req *out)
{
    char line[300];
    const char *extra[1] = {line};
    if (range)
        snprintf(line, sizeof(line), "Range: %.280s", range);
    build(b, "GET", key, "", SIGV4_EMPTY_SHA256, extra, range ? 1 : 0, out);
}

struct curlclient_xfer *backend_get_start(struct curlclient *cli, const struct backend *b,
                                          const char *key, const char *range,
                                          const struct curlclient_ops *ops, void *arg)
{
    struct s3_req q;
    backend_get_req(b, key, range, &q);
    struct curlclient_opt opt = {-1, (long)b->timeout_s * 1000, kinds[b->kind].follow,
                                 provider(b)};
    struct curlclient_xfer *x =
        curlclient_start(cli, "GET", q.url, (const char *const *)q.hdrs, q.n, &opt, ops, arg);
    s3_req_free(&q);
    return x;
}

static void copy_hdr(char *dst, size_t n, const char *v)
{
    snprintf(dst, n, "%s", v ? v : "");
}

void backend_obj_from(struct backend_obj *o, struct curlclient_xfer *x, int status, const char *err)
{
    memset(o, 0, sizeof(*o));
    o->status = status;
    o->size = -1;
    if (err)
        snprintf(o->err, sizeof(o->err), "%s", err);
    if (!x)
        return;
    const char *cl = curlclient_header(x, "Content-Length");
    uint64_t v;
    if (cl && !parse_u64(cl, strlen(cl), &v))
        o->size = (int64_t)v;
    copy_hdr(o->etag, sizeof(o->etag), curlclient_header(x, "ETag"));
    copy_hdr(o->version, sizeof(o->version), curlclient_header(x, "x-amz-version-id"));
    copy_hdr(o->last_modified, sizeof(o->last_modified), curlclient_header(x, "Last-Modified"));
    /* An origin without ETags (a web server's "etag off") is validated by
     * its Last-Modified, kept as a weak entity tag. */
    if (!o->etag[0] && o->last_modified[0])
        snprintf(o->etag, sizeof(o->etag), "W/\"%s\"", o->last_modified);
}

int backend_retryable(int status)
{
    return status == 0 || status == 500 || status == 502 || status == 503 || status == 504 ||
           status == 429;
}

/* Delay before attempt n (1-based), milliseconds. */
static int backoff_ms(int attempt)
{
    int ms = 100;
    for (int i = 1; i < attempt && ms < 5000; i++)
        ms *= 3;
    return ms;
}

int backend_retry_later(struct curlclient *cli, int attempt, struct event **timer,
                        event_callback_fn fn, void *arg)
{
    int ms = backoff_ms(attempt);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    if (!*timer)
        *timer = evtimer_new(curlclient_base(cli), fn, arg);
    evtimer_add(*timer, &tv);
    return ms;
}

int backend_status(const struct backend *b, const struct backend_obj *o, char *msg, size_t len)
{
    if (o->status == 404) {
        snprintf(msg, len, "object not found in backend %s", b->label);
        return 404;
    }
    if (o->status == 401 || o->status == 403) {
        snprintf(msg, len, "backend %s denied access (%d)%s%.120s", b->label, o->status,
                 o->err[0] ? ": " : "", o->err);
        return 403;
    }
    if (o->status == 0) {
        snprintf(msg, len, "backend %s unreachable: %s", b->label, o->err[0] ? o->err : "?");
        return 502;
    }
    if (o->status == 503 || o->status == 429) {
        snprintf(msg, len, "backend %s is throttling or unavailable (%d)", b->label, o->status);
        return 503;
    }
    snprintf(msg, len, "backend %s answered %d%s%.120s", b->label, o->status,
             o->err[0] ? ": " : "", o->err);
    return 502;
}

/* ---- one retried operation ------------------------------------------------ */

struct bop {
    struct curlclient *cli;
    struct backend b;
    char *method, *key;          /* key NULL: a bucket-level request */
    char *query;
    backend_list_fn list_cb;     /* keep the whole body and hand it over */
    struct gbuf resp;
    int fd;                      /* PUT source, or -1 */
    int64_t base;                /* where in fd the body starts */
    char *mem;                   /* or the body from memory (size bytes), or NULL */
    int64_t size, off;
    int attempt;
    struct event *timer;
    backend_done_fn cb;
    void *arg;
    char body[512];              /* start of an error body, for messages */
    size_t body_len;
    int whole_put;               /* a whole object's PUT (the kind's put_hdr) */
};

static void bop_start(struct bop *o);

static int bop_data(void *arg, struct curlclient_xfer *x, const char *p, size_t n)
{
    struct bop *o = arg;
    (void)x;
    if (o->list_cb) {
        if (o->resp.n + n > S3LIST_MAX_DOC)
            return -1;
        gbuf_add(&o->resp, p, n);
    }
    size_t room = sizeof(o->body) - 1 - o->body_len;
    size_t k = n < room ? n : room;
    memcpy(o->body + o->body_len, p, k);
    o->body_len += k;
    o->body[o->body_len] = '\0';
    return 0;
}

static ssize_t bop_read(void *arg, char *buf, size_t n)
{
    struct bop *o = arg;
    if (o->off >= o->size)
        return 0;
    size_t want = (size_t)(o->size - o->off) < n ? (size_t)(o->size - o->off) : n;
    if (o->mem) {
        memcpy(buf, o->mem + o->off, want);
        o->off += (int64_t)want;
        return (ssize_t)want;
    }
    ssize_t r = pread(o->fd, buf, want, o->base + o->off);
    if (r <= 0)
        return -1;
    o->off += r;
    return r;
}

static void bop_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bop_start(arg);
}

void backend_err_code(const struct backend *b, const char *body, char *out, size_t n)
{
    kinds[b->kind].err_code(body, strlen(body), out, n);
}

static void bop_done(void *arg, struct curlclient_xfer *x, int status, const char *err)
{
    struct bop *o = arg;
    if (backend_retryable(status) && o->attempt <= o->b.retries) {
        int ms = backend_retry_later(o->cli, o->attempt, &o->timer, bop_retry_cb, o);
        log_info("backend %s: %s %s: %s; retry in %d ms", o->b.label, o->method,
                 o->key ? o->key : "(bucket)",
                 status ? "server error" : (err ? err : "?"), ms);
        return;
    }
    struct backend_obj r;
    backend_obj_from(&r, x, status, err);
    if (status >= 300 && o->body_len)
        backend_err_code(&o->b, o->body, r.err, sizeof(r.err));
    if (o->list_cb)
        o->list_cb(o->arg, &r, o->resp.p ? o->resp.p : "", o->resp.n);
    else
        o->cb(o->arg, &r);
    if (o->timer)
        event_free(o->timer);
    backend_free(&o->b);
    free(o->method);
    free(o->key);
    free(o->query);
    free(o->mem);
    gbuf_free(&o->resp);
    free(o);
}

static int bop_rewind(void *arg)
{
    struct bop *o = arg;
    o->off = 0;
    return 0;
}

static const struct curlclient_ops bop_ops = {NULL, bop_data, bop_read, bop_done, bop_rewind};

static void bop_start(struct bop *o)
{
    struct s3_req q;
    char len_hdr[64];
    const char *extra[2];
    int n_extra = 0;
    o->attempt++;
    o->off = 0;
    o->body_len = 0;
    gbuf_free(&o->resp);
    int body = o->fd >= 0 || o->mem;
    if (body) {
        snprintf(len_hdr, sizeof(len_hdr), "Content-Length: %lld", (long long)o->size);
        extra[n_extra++] = len_hdr;
    }
    if (o->whole_put && kinds[o->b.kind].put_hdr)
        extra[n_extra++] = kinds[o->b.kind].put_hdr;
    build(&o->b, o->method, o->key, o->query ? o->query : "",
          body ? SIGV4_UNSIGNED : SIGV4_EMPTY_SHA256, extra, n_extra, &q);
    struct curlclient_opt opt = {body ? o->size : -1, (long)o->b.timeout_s * 1000,
                                 kinds[o->b.kind].follow, provider(&o->b)};
    curlclient_start(o->cli, o->method, q.url, (const char *const *)q.hdrs, q.n, &opt,
                     &bop_ops, o);
    s3_req_free(&q);
}

static struct bop *bop_make(struct curlclient *cli, const struct backend *b, const char *method,
                            const char *key, int fd, int64_t size, backend_done_fn cb, void *arg);

static void list_start(struct curlclient *cli, const struct backend *b, const char *prefix,
                       const char *value, int after, int limit, backend_list_fn cb, void *arg)
{
    char *ep = sigv4_uri_encode(prefix, strlen(prefix), 0);
    char *et = sigv4_uri_encode(value, strlen(value), 0);
    struct bop *o = bop_make(cli, b, "GET", NULL, -1, 0, NULL, arg);
    o->query = kinds[b->kind].list_query ? kinds[b->kind].list_query(ep, et, after, limit)
                                         : xstrdup("");
    o->list_cb = cb;
    free(ep);
    free(et);
    bop_start(o);
}

void backend_call(struct curlclient *cli, const struct backend *b, const struct backend_req *rq,
                  backend_list_fn cb, void *arg)
{
    struct bop *o = bop_make(cli, b, rq->method, rq->key, rq->fd, rq->size, NULL, arg);
    o->base = rq->off;
    if (rq->mem) {
        o->mem = xmalloc(rq->mem_len + 1);
        memcpy(o->mem, rq->mem, rq->mem_len);
        o->size = (int64_t)rq->mem_len;
    }
    o->query = xstrdup(rq->query);
    o->list_cb = cb;
    bop_start(o);
}

void backend_list(struct curlclient *cli, const struct backend *b, const char *prefix,
                  const char *token, int limit, backend_list_fn cb, void *arg)
{
    list_start(cli, b, prefix, token, 0, limit, cb, arg);
}

void backend_list_after(struct curlclient *cli, const struct backend *b, const char *prefix,
                        const char *after, int limit, backend_list_fn cb, void *arg)
{
    list_start(cli, b, prefix, after, 1, limit, cb, arg);
}

static void bop_new(struct curlclient *cli, const struct backend *b, const char *method,
                    const char *key, int fd, int64_t size, backend_done_fn cb, void *arg)
{
    bop_start(bop_make(cli, b, method, key, fd, size, cb, arg));
}

static struct bop *bop_make(struct curlclient *cli, const struct backend *b, const char *method,
                            const char *key, int fd, int64_t size, backend_done_fn cb, void *arg)
{
    struct bop *o = xcalloc(1, sizeof(*o));
    o->cli = cli;
    backend_copy(&o->b, b);
    o->method = xstrdup(method);
    o->key = key ? xstrdup(key) : NULL;
    o->fd = fd;
    o->size = size;
    o->cb = cb;
    o->arg = arg;
    return o;
}

void backend_head(struct curlclient *cli, const struct backend *b, const char *key,
                  backend_done_fn cb, void *arg)
{
    bop_new(cli, b, "HEAD", key, -1, 0, cb, arg);
}

void backend_put(struct curlclient *cli, const struct backend *b, const char *key, int fd,
                 int64_t size, backend_done_fn cb, void *arg)
{
    if (b->kind == BK_AZURE && size >= (int64_t)AZBLOCK_FROM) {
        azblock_put(cli, b, key, fd, size, cb, arg);
        return;
    }
    struct bop *o = bop_make(cli, b, "PUT", key, fd, size, cb, arg);
    o->whole_put = 1;
    bop_start(o);
}

void backend_delete(struct curlclient *cli, const struct backend *b, const char *key,
                    backend_done_fn cb, void *arg)
{
    bop_new(cli, b, "DELETE", key, -1, 0, cb, arg);
}
