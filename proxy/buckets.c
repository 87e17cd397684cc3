/*
 * buckets: the bucket API and object listing on a proxy.
 *
 * Changes (create, patch, destroy) are made by the primary: it builds the
 * next BMD version under p->mu, installs it, pushes it to every node and
 * answers only once the pushes are answered, so a client that creates a
 * bucket can use it on any target at once. Another proxy forwards changes
 * to the primary and relays its answer.
 *
 * Listing asks every target for its next page after the token, merges the
 * pages in name order and cuts at the limit; the token of the next page is
 * the last name returned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buckets.h"
#include "cluster.h"
#include "hcli.h"
#include "http.h"
#include "log.h"
#include "objname.h"
#include "proxy.h"
#include "util.h"
#include "worker.h"

#define LIST_DEFAULT 1000
#define LIST_MAX 10000
#define TOKEN_MAX 2048

/* ---- forwarding to the primary -------------------------------------------- */

struct fwd {
    struct http_req *r;
};

static void fwd_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct fwd *f = arg;
    if (status == 0)
        http_reply_error(f->r, 503, "primary proxy unreachable: %s", err ? err : "?");
    else
        http_reply(f->r, status, len ? "application/json" : NULL, body, len);
    http_req_unref(f->r);
    free(f);
}

static void forward_body(struct http_req *r, json_t *j)
{
    struct proxy *p = r->w->ctx;
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    /* signed as this proxy: it authenticated the client */
    const char *q = strchr(r->target, '?');
    char *path = xstrndup(r->target, q ? (size_t)(q - r->target) : strlen(r->target));
    char *url = node_signed_url(&p->node, r->method_name, p->conf.primary_url, path,
                                q ? q + 1 : NULL);
    free(path);
    struct fwd *f = xcalloc(1, sizeof(*f));
    f->r = r;
    http_req_ref(r);
    hcli_request(worker_cli(r), r->method_name, url, body, strlen(body), NULL, 15000, fwd_done,
                 f);
    free(url);
    free(body);
}

/* ---- changes on the primary ------------------------------------------------ */

struct change {
    struct http_req *r;
    int status;
    json_t *answer;
    void (*cont)(struct http_req *r);  /* instead of answering */
};

static void change_pushed(void *arg, int failures)
{
    struct change *c = arg;
    if (failures)
        log_warn("bucket change reached all but %d nodes; they catch up by keepalive",
                 failures);
    if (c->cont)
        c->cont(c->r);
    else if (c->answer)
        http_reply_json(c->r, c->status, c->answer);
    else
        http_reply(c->r, c->status, NULL, NULL, 0);
    http_req_unref(c->r);
    free(c);
}

/* Install b as the next BMD version and answer r once it is pushed. Call
 * with p->mu held; releases it. Takes b and answer. */
static void commit_bmd_cont(struct proxy *p, struct http_req *r, struct bmd *b, int status,
                            json_t *answer, void (*cont)(struct http_req *r));

static void commit_bmd(struct proxy *p, struct http_req *r, struct bmd *b, int status,
                       json_t *answer)
{
    commit_bmd_cont(p, r, b, status, answer, NULL);
}

static void commit_bmd_cont(struct proxy *p, struct http_req *r, struct bmd *b, int status,
                            json_t *answer, void (*cont)(struct http_req *r))
{
    struct bmd *cur = bmd_current();
    b->snap.version = cur->snap.version + 1;
    bmd_unref(cur);
    json_t *push = json_pack("{s:o}", "bmd", bmd_to_json(b));
    node_set_bmd(&p->node, b);
    pthread_mutex_unlock(&p->mu);
    struct change *c = xcalloc(1, sizeof(*c));
    c->r = r;
    c->status = status;
    c->answer = answer;
    c->cont = cont;
    http_req_ref(r);
    cluster_broadcast(p, worker_cli(r), push, change_pushed, c);
}

struct bucket_req {
    char name[64];
    char provider[16];
};

static int bucket_req_parse(struct http_req *r, const char *rest, size_t len,
                            struct bucket_req *br)
{
    char err[256];
    if (!bmd_valid_name(rest, len)) {
        http_reply_error(r, 400, "invalid bucket name '%.*s' (1..63 of A-Z a-z 0-9 . - _)",
                         (int)(len > 63 ? 63 : len), rest);
        return -1;
    }
    memcpy(br->name, rest, len);
    br->name[len] = '\0';
    if (objname_provider(r, br->provider, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return -1;
    }
    return 0;
}

/*
 * The shared start of a create or a patch on the primary: the bucket from
 * the path and a valid properties object. On bad input answers 400, drops
 * props and returns NULL; else returns a modifiable copy of the current BMD
 * with p->mu held (commit_bmd or unlock_drop releases it).
 */
static struct bmd *change_begin(struct proxy *p, struct http_req *r, json_t *props,
                                struct bucket_req *br)
{
    char err[256];
    size_t pl = strlen("/v1/buckets/");
    if (bucket_req_parse(r, r->path + pl, r->path_len - pl, br)) {
        json_decref(props);
        return NULL;
    }
    if (props && bmd_props_check(props, err, sizeof(err))) {
        json_decref(props);
        http_reply_error(r, 400, "%s", err);
        return NULL;
    }
    pthread_mutex_lock(&p->mu);
    struct bmd *cur = bmd_current();
    struct bmd *b = bmd_clone(cur);
    bmd_unref(cur);
    return b;
}

static void unlock_drop(struct proxy *p, struct bmd *b)
{
    pthread_mutex_unlock(&p->mu);
    bmd_unref(b);
}

static void create_body(struct http_req *r, json_t *props)
{
    struct proxy *p = r->w->ctx;
    struct bucket_req br;
    struct bmd *b = change_begin(p, r, props, &br);
    if (!b)
        return;
    int rc = bmd_add(b, br.provider, br.name, props, (int64_t)time(NULL));
    json_decref(props);
    if (rc) {
        unlock_drop(p, b);
        http_reply_error(r, 409, "bucket '%s' already exists", br.name);
        return;
    }
    commit_bmd(p, r, b, 201, bmd_bucket_json(bmd_find(b, br.provider, br.name)));
}

static void patch_body(struct http_req *r, json_t *patch)
{
    struct proxy *p = r->w->ctx;
    struct bucket_req br;
    struct bmd *b = change_begin(p, r, patch, &br);
    if (!b)
        return;
    int rc = bmd_patch(b, br.provider, br.name, patch);
    json_decref(patch);
    if (rc) {
        unlock_drop(p, b);
        http_reply_error(r, 404, "bucket '%s' not found", br.name);
        return;
    }
    commit_bmd(p, r, b, 200, bmd_bucket_json(bmd_find(b, br.provider, br.name)));
}

static void destroy_body(struct http_req *r, json_t *unused)
{
    struct proxy *p = r->w->ctx;
    struct bucket_req br;
    struct bmd *b = change_begin(p, r, NULL, &br);
    json_decref(unused);
    if (!b)
        return;
    if (bmd_del(b, br.provider, br.name)) {
        unlock_drop(p, b);
        http_reply_error(r, 404, "bucket '%s' not found", br.name);
        return;
    }
    log_info("bucket %s/%s destroyed", br.provider, br.name);
    commit_bmd(p, r, b, 204, NULL);
}

/* ---- remote buckets on first use ---------------------------------------- */

struct ensure {
    struct http_req *r;
    void (*cont)(struct http_req *r);
};

static void ensure_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct ensure *e = arg;
    (void)len;
    if (status == 201 || status == 409)
        e->cont(e->r);
    else if (status == 0)
        http_reply_error(e->r, 503, "primary proxy unreachable: %s", err ? err : "?");
    else
        http_reply(e->r, status, "application/json", body, strlen(body));
    http_req_unref(e->r);
    free(e);
}

void buckets_ensure(struct proxy *p, struct http_req *r, const char *provider,
                    const char *name, void (*cont)(struct http_req *r))
{
    if (!p->node.is_primary) {
        char *url = node_signed_urlf(&p->node, "PUT", p->conf.primary_url,
                                     "/v1/buckets/%s?provider=%s", name, provider);
        struct ensure *e = xcalloc(1, sizeof(*e));
        e->r = r;
        e->cont = cont;
        http_req_ref(r);
        hcli_request(worker_cli(r), "PUT", url, "{}", 2, NULL, 15000, ensure_done, e);
        free(url);
        return;
    }
    pthread_mutex_lock(&p->mu);
    struct bmd *cur = bmd_current();
    struct bmd *b = bmd_clone(cur);
    bmd_unref(cur);
    if (bmd_add(b, provider, name, NULL, (int64_t)time(NULL))) {
        unlock_drop(p, b); /* added meanwhile */
        cont(r);
        return;
    }
    log_info("remote bucket %s://%s added on first use", provider, name);
    commit_bmd_cont(p, r, b, 0, NULL, cont);
}

/* ---- listing ----------------------------------------------------------------- */

json_t *buckets_page_objects(int status, const char *body, size_t len, json_t **j)
{
    *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *objs = *j ? json_object_get(*j, "objects") : NULL;
    return json_is_array(objs) ? objs : NULL;
}

struct list {
    struct http_req *r;
    int pending;
    int limit;
    int failed;
    char err[256];
    int more;
    json_t *all;                 /* every target's entries */
};

static int name_cmp(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_t *nx = json_object_get(x, "name"), *ny = json_object_get(y, "name");
    size_t lx = json_string_length(nx), ly = json_string_length(ny);
    int c = memcmp(json_string_value(nx), json_string_value(ny), lx < ly ? lx : ly);
    return c ? c : (lx > ly) - (lx < ly);
}

static void list_finish(struct list *l)
{
    struct http_req *r = l->r;
    if (l->failed) {
        http_reply_error(r, 503, "listing incomplete: %s", l->err);
    } else {
        size_t n = json_array_size(l->all);
        json_t **v = xcalloc(n + 1, sizeof(*v));
        for (size_t i = 0; i < n; i++)
            v[i] = json_array_get(l->all, i);
        qsort(v, n, sizeof(*v), name_cmp);
        json_t *page = json_array();
        size_t take = n < (size_t)l->limit ? n : (size_t)l->limit;
        for (size_t i = 0; i < take; i++)
            json_array_append(page, v[i]);
        int more = l->more || n > take;
        json_t *next = more && take ? json_copy(json_object_get(v[take - 1], "name"))
                                    : json_string("");
        free(v);
        http_reply_json(r, 200, json_pack("{s:o, s:o}", "objects", page, "next", next));
    }
    json_decref(l->all);
    http_req_unref(r);
    free(l);
}

static void list_one(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct list *l = arg;
    json_t *j;
    json_t *objs = buckets_page_objects(status, body, len, &j);
    if (!objs) {
        if (!l->failed)
            snprintf(l->err, sizeof(l->err), "a target answered %d: %.100s", status,
                     status ? body : (err ? err : "?"));
        l->failed = 1;
    } else {
        json_array_extend(l->all, objs);
        l->more |= json_is_true(json_object_get(j, "more"));
    }
    json_decref(j);
    if (--l->pending == 0)
        list_finish(l);
}

/* ---- listing a backed bucket: the backend's page, marked with what we hold ---- */

struct rlist {
    struct http_req *r;
    struct bucket_req br;
    char prefix[OBJNAME_MAX + 1];
    json_t *objs;                /* the backend's page */
    char *next;
    json_t *cached;              /* object: name -> true, from every target */
    int pending;
    int failed;
    char err[300];
};

static void rlist_finish(struct rlist *l)
{
    if (l->failed) {
        http_reply_error(l->r, 503, "listing incomplete: %s", l->err);
    } else {
        size_t i;
        json_t *o;
        json_array_foreach(l->objs, i, o) {
            const char *name = json_string_value(json_object_get(o, "name"));
            json_object_set_new(o, "cached",
                                json_boolean(name && json_object_get(l->cached, name)));
        }
        http_reply_json(l->r, 200, json_pack("{s:O, s:s}", "objects", l->objs, "next", l->next));
    }
    json_decref(l->objs);
    json_decref(l->cached);
    free(l->next);
    http_req_unref(l->r);
    free(l);
}

static void rlist_local(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct rlist *l = arg;
    json_t *j;
    json_t *objs = buckets_page_objects(status, body, len, &j);
    if (!objs) {
        l->failed = 1;
        snprintf(l->err, sizeof(l->err), "a target answered %d: %.100s", status,
                 status ? body : (err ? err : "?"));
    } else {
        size_t i;
        json_t *o;
        json_array_foreach(objs, i, o) {
            const char *name = json_string_value(json_object_get(o, "name"));
            if (name)
                json_object_set_new(l->cached, name, json_true());
        }
    }
    json_decref(j);
    if (--l->pending == 0)
        rlist_finish(l);
}

static void rlist_remote(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct rlist *l = arg;
    struct http_req *r = l->r;
    json_t *j;
    json_t *objs = buckets_page_objects(status, body, len, &j);
    if (!objs) {
        if (status == 0)
            http_reply_error(r, 503, "target unreachable: %s", err ? err : "?");
        else
            http_reply(r, status, "application/json", body, len);
        json_decref(j);
        http_req_unref(r);
        free(l);
        return;
    }
    l->objs = json_incref(objs);
    l->next = xstrdup(json_string_value(json_object_get(j, "next")) ?: "");
    json_decref(j);
    l->cached = json_object();
    size_t n = json_array_size(l->objs);
    if (n == 0) {
        l->pending = 1;
        rlist_finish(l);
        return;
    }
    const char *first = json_string_value(json_object_get(json_array_get(l->objs, 0), "name"));
    const char *last = json_string_value(json_object_get(json_array_get(l->objs, n - 1), "name"));
    char *ep = http_pct_encode(l->prefix, strlen(l->prefix), 0);
    char *ef = http_pct_encode(first ? first : "", first ? strlen(first) : 0, 0);
    char *el = http_pct_encode(last ? last : "", last ? strlen(last) : 0, 0);
    struct cmap *m = cmap_current();
    l->pending = 1;
    for (int i = 0; i < m->n_targets; i++) {
        const struct cmap_node *t = &m->nodes[m->targets[i]];
        char *url = node_signed_urlf(r->w->ctx, "GET", t->url,
                                     "/v1/internal/list?provider=%s&bucket=%s&prefix=%s&from=%s"
                                     "&until=%s&limit=%d",
                                     l->br.provider, l->br.name, ep, ef, el, LIST_MAX);
        l->pending++;
        hcli_request(worker_cli(r), "GET", url, NULL, 0, NULL, 30000, rlist_local, l);
        free(url);
    }
    cmap_unref(m);
    free(ep);
    free(ef);
    free(el);
    if (--l->pending == 0)
        rlist_finish(l);
}

static void list_remote(struct http_req *r, const struct bucket_req *br, const char *prefix,
                        const char *token, int limit)
{
    struct rlist *l = xcalloc(1, sizeof(*l));
    l->r = r;
    l->br = *br;
    snprintf(l->prefix, sizeof(l->prefix), "%s", prefix);
    char key[128];
    int kn = snprintf(key, sizeof(key), "list/%s/%s", br->provider, br->name);
    struct cmap *m = cmap_current();
    const struct cmap_node *t = cmap_owner(m, key, (size_t)kn);
    if (!t) {
        cmap_unref(m);
        free(l);
        http_reply_error(r, 503, "no storage target is in the cluster");
        return;
    }
    char *ep = http_pct_encode(prefix, strlen(prefix), 0);
    char *et = http_pct_encode(token, strlen(token), 0);
    char *url = node_signed_urlf(r->w->ctx, "GET", t->url,
                                 "/v1/internal/list-remote?provider=%s&bucket=%s&prefix=%s"
                                 "&token=%s&limit=%d",
                                 br->provider, br->name, ep, et, limit > 1000 ? 1000 : limit);
    http_req_ref(r);
    hcli_request(worker_cli(r), "GET", url, NULL, 0, NULL, 60000, rlist_remote, l);
    free(url);
    free(ep);
    free(et);
    cmap_unref(m);
}

int buckets_listed_by_backend(const char *provider, const char *name)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = bmd_find(b, provider, name);
    const char *spec = bk ? json_string_value(json_object_get(bk->props, "backend")) : NULL;
    int remote = bk && (!strcmp(bk->provider, BMD_PROVIDER_S3) ||
                        (spec && !strncmp(spec, "s3://", 5)));
    bmd_unref(b);
    return remote;
}

static void list_objects(struct proxy *p, struct http_req *r, const struct bucket_req *br)
{
    char prefix[OBJNAME_MAX + 1], token[TOKEN_MAX + 1], lim[16];
    int limit = LIST_DEFAULT;
    int pn = http_query_get(r, "prefix", prefix, sizeof(prefix));
    int tn = http_query_get(r, "token", token, sizeof(token));
    if (pn == -2 || tn == -2) {
        http_reply_error(r, 400, "prefix must be at most %d bytes and token %d, well encoded",
                         OBJNAME_MAX, TOKEN_MAX);
        return;
    }
    if (pn < 0)
        prefix[0] = '\0';
    if (tn < 0)
        token[0] = '\0';
    if (http_query_get(r, "limit", lim, sizeof(lim)) >= 0) {
        uint64_t v;
        if (parse_u64(lim, strlen(lim), &v) || v < 1 || v > LIST_MAX) {
            http_reply_error(r, 400, "limit must be 1..%d", LIST_MAX);
            return;
        }
        limit = (int)v;
    }
    char flag[8];
    int cached_only = http_query_get(r, "cached", flag, sizeof(flag)) >= 0 &&
                      strcmp(flag, "false") && strcmp(flag, "0");
    /* Pages read for this proxy's own S3 front end (cluster-signed) are
     * counted there, once per client request. */
    if (node_check_sig(&p->node, r) != 1)
        node_count(&p->node, ST_LIST, 200);
    if (!cached_only && buckets_listed_by_backend(br->provider, br->name)) {
        list_remote(r, br, prefix, token, limit);
        return;
    }
    struct cmap *m = cmap_current();
    struct list *l = xcalloc(1, sizeof(*l));
    l->r = r;
    l->limit = limit;
    l->all = json_array();
    l->pending = 1;
    http_req_ref(r);
    char *ep = http_pct_encode(prefix, strlen(prefix), 0);
    char *et = http_pct_encode(token, strlen(token), 0);
    for (int i = 0; i < m->n_targets; i++) {
        const struct cmap_node *t = &m->nodes[m->targets[i]];
        char *url = node_signed_urlf(r->w->ctx, "GET", t->url,
                                     "/v1/internal/list?provider=%s&bucket=%s&prefix=%s"
                                     "&after=%s&limit=%d",
                                     br->provider, br->name, ep, et, limit);
        l->pending++;
        hcli_request(worker_cli(r), "GET", url, NULL, 0, NULL, 30000, list_one, l);
        free(url);
    }
    free(ep);
    free(et);
    cmap_unref(m);
    if (--l->pending == 0)
        list_finish(l);
}

/* ---- dispatch ----------------------------------------------------------------- */

int buckets_exist(const char *provider, const char *name)
{
    struct bmd *b = bmd_current();
    int found = bmd_find(b, provider, name) != NULL;
    bmd_unref(b);
    return found;
}

static void list_buckets(struct http_req *r)
{
    char provider[16] = "";
    int want = http_query_get(r, "provider", provider, sizeof(provider)) > 0;
    struct bmd *b = bmd_current();
    json_t *arr = json_array();
    for (int i = 0; i < b->n; i++)
        if (!want || !strcmp(b->b[i].provider, provider))
            json_array_append_new(arr, bmd_bucket_json(&b->b[i]));
    bmd_unref(b);
    http_reply_json(r, 200, json_pack("{s:o}", "buckets", arr));
}

static void bucket_api(struct proxy *p, struct http_req *r, const char *rest, size_t rl);

static void list_again(struct http_req *r)
{
    static const char pre[] = "/v1/buckets/";
    bucket_api(r->w->ctx, r, r->path + sizeof(pre) - 1, r->path_len - (sizeof(pre) - 1));
}

/* GET /v1/buckets/BUCKET/objects; other paths under a bucket are 404. */
static void bucket_sub(struct proxy *p, struct http_req *r, const struct bucket_req *br,
                       const char *sub, size_t sl)
{
    if (sl != 8 || memcmp(sub, "/objects", 8) || r->method != HTTP_M_GET) {
        http_reply_error(r, 404, "no such endpoint: %s %.*s", r->method_name, (int)r->path_len,
                         r->path);
        return;
    }
    int exists = buckets_exist(br->provider, br->name);
    if (!exists && strcmp(br->provider, BMD_PROVIDER_SHOAL))
        buckets_ensure(p, r, br->provider, br->name, list_again);
    else if (!exists)
        http_reply_error(r, 404, "bucket '%s' not found", br->name);
    else
        list_objects(p, r, br);
}

/* rest: what follows "/v1/buckets/" ("" for the list of buckets). */
static void bucket_api(struct proxy *p, struct http_req *r, const char *rest, size_t rl)
{
    if (rl == 0) {
        if (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD)
            list_buckets(r);
        else
            http_reply_error(r, 405, "use GET to list buckets");
        return;
    }
    const char *slash = memchr(rest, '/', rl);
    struct bucket_req br;
    if (bucket_req_parse(r, rest, slash ? (size_t)(slash - rest) : rl, &br))
        return;
    if (slash) {
        bucket_sub(p, r, &br, slash, rl - (size_t)(slash - rest));
        return;
    }
    switch (r->method) {
    case HTTP_M_GET:
    case HTTP_M_HEAD: {
        struct bmd *b = bmd_current();
        const struct bmd_bucket *bk = bmd_find(b, br.provider, br.name);
        if (!bk)
            http_reply_error(r, 404, "bucket '%s' not found", br.name);
        else
            http_reply_json(r, 200, bmd_bucket_json(bk));
        bmd_unref(b);
        return;
    }
    case HTTP_M_PUT:
    case HTTP_M_PATCH:
    case HTTP_M_DELETE:
        if (!p->node.is_primary)
            node_read_json(r, forward_body);
        else if (r->method == HTTP_M_PUT)
            node_read_json(r, create_body);
        else if (r->method == HTTP_M_PATCH)
            node_read_json(r, patch_body);
        else
            node_read_json(r, destroy_body);
        return;
    default:
        http_resp_header(r, "Allow", "GET, HEAD, PUT, PATCH, DELETE");
        http_reply_error(r, 405, "method %s not allowed on buckets", r->method_name);
        return;
    }
}

void buckets_route(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    if (node_authenticate(&p->node, r))
        bucket_api(p, r, rest, rlen);
}
