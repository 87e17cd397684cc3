/*
 * objlist: a bucket's object listing, one page at a time, merged in the
 * proxy (see objlist.h).
 *
 * Targets answer local pages in the compact format of common/listpage.h; the
 * bodies are kept and the entries point into them, so a page of ten
 * thousand names costs one copy of each body and no per-name allocation.
 * Each target's page is already in name order, so the merge walks the
 * pages' heads; a name that two targets both hold (a copy not yet
 * removed) is listed once, with its newest version.
 *
 * Thread: the worker's loop.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "cmap.h"
#include "nodeclient.h"
#include "http.h"
#include "listpage.h"
#include "node.h"
#include "objlist.h"
#include "backlog.h"
#include "util.h"
#include "worker.h"

#define LIST_TIMEOUT_MS 30000
#define REMOTE_TIMEOUT_MS 60000
#define REMOTE_MAX 1000          /* keys in one backend page (S3's limit) */

/* What a page's entries point into. */
struct own {
    char **bodies;               /* targets' compact pages */
    struct listpage *pages;      /* parsed, one per body */
    int n, cap;
    json_t *remote;              /* the backend's page (remote listings) */
};

struct objlist {
    struct http_req *r;
    objlist_done_fn done;
    void *arg;
    int limit;
    int pending;
    int status;                  /* 200 until something fails */
    char err[300];
    struct own *own;
    struct objlist_page *pg;     /* the page being made */
    char *base;                  /* "provider=..&bucket=..&prefix=.." */
    int wb;                      /* a write-back bucket: pages go by name */
    char *after;                 /* wb: the token, the last name of the page before */
    int remote_more;             /* wb: the backend has names after this page */
    char *del_query;             /* wb: the targets' deletes in the page's range */
    json_t *deleted;             /* wb: their names, as a set */
    void (*then)(struct objlist *l); /* once every target's page is in */
};

static void own_free(struct own *o)
{
    for (int i = 0; i < o->n; i++) {
        free(o->bodies[i]);
        listpage_free(&o->pages[i]);
    }
    free(o->bodies);
    free(o->pages);
    json_decref(o->remote);
    free(o);
}

void objlist_page_free(struct objlist_page *pg)
{
    if (!pg)
        return;
    free(pg->v);
    free(pg->next);
    free(pg->absent);
    if (pg->own)
        own_free(pg->own);
    free(pg);
}

static void fail(struct objlist *l, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct objlist *l, int status, const char *fmt, ...)
{
    if (l->status != 200)
        return;               /* the first failure is the one reported */
    l->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->err, sizeof(l->err), fmt, ap);
    va_end(ap);
}

/* Keep a target's answer: a compact page, or the failure. */
static void keep_page(struct objlist *l, int status, const char *body, size_t len,
                      const char *err)
{
    char why[128];
    if (status != 200) {
        fail(l, 503, "a target answered %d: %.100s", status, status ? body : (err ? err : "?"));
        return;
    }
    struct own *o = l->own;
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 4;
        o->bodies = xrealloc(o->bodies, (size_t)o->cap * sizeof(*o->bodies));
        o->pages = xrealloc(o->pages, (size_t)o->cap * sizeof(*o->pages));
    }
    char *copy = xmalloc(len + 1);
    memcpy(copy, body, len);
    if (listpage_parse(copy, len, &o->pages[o->n], why, sizeof(why))) {
        free(copy);
        fail(l, 503, "a target sent a bad page: %s", why);
        return;
    }
    o->bodies[o->n++] = copy;
}

static void finish(struct objlist *l)
{
    struct objlist_page *pg = l->pg;
    if (l->status == 200) {
        pg->own = l->own;
        l->done(l->arg, pg, 200, NULL);
    } else {
        l->pg = NULL;
        objlist_page_free(pg);
        own_free(l->own);
        l->done(l->arg, NULL, l->status, l->err);
    }
    http_req_unref(l->r);
    free(l->base);
    free(l->after);
    free(l->del_query);
    json_decref(l->deleted);
    free(l);
}

static int ent_cmp(const struct listpage_ent *a, const struct listpage_ent *b)
{
    return listpage_name_cmp(a->name, a->nlen, b->name, b->nlen);
}

/* The next entry in name order across the pages' heads, or -1 when they
 * are all done. Of equal names the newest version wins; the others are
 * passed. */
static int next_head(const struct own *o, size_t *head)
{
    int best = -1;
    for (int i = 0; i < o->n; i++) {
        if (head[i] >= o->pages[i].n)
            continue;
        if (best < 0) {
            best = i;
            continue;
        }
        const struct listpage_ent *e = &o->pages[i].v[head[i]];
        const struct listpage_ent *b = &o->pages[best].v[head[best]];
        int c = ent_cmp(e, b);
        if (c < 0) {
            best = i;
        } else if (c == 0 && e->version > b->version) {
            head[best]++;
            best = i;
        } else if (c == 0) {
            head[i]++;
        }
    }
    return best;
}

/* A target's entry as a page's: held, and dirty as said (write-back). */
static struct objlist_ent local_ent(const struct listpage_ent *e, int dirty)
{
    return (struct objlist_ent){.name = e->name, .nlen = e->nlen, .etag = e->etag,
                                .elen = e->elen, .owner = e->owner, .olen = e->olen,
                                .size = e->size, .cksum = e->cksum, .version = e->version,
                                .mtime_ns = e->mtime_ns, .cached = 1, .dirty = dirty};
}

static void merge(struct objlist *l)
{
    struct own *o = l->own;
    struct objlist_page *pg = l->pg;
    size_t *head = xcalloc((size_t)o->n + 1, sizeof(*head));
    int more = 0;
    for (int i = 0; i < o->n; i++)
        more |= o->pages[i].more;
    pg->v = xmalloc((size_t)l->limit * sizeof(*pg->v));
    int i;
    while (pg->n < (size_t)l->limit && (i = next_head(o, head)) >= 0) {
        const struct listpage_ent *e = &o->pages[i].v[head[i]++];
        pg->v[pg->n++] = local_ent(e, 0);
    }
    /* what is left, less copies of the last name taken, is the next page */
    const struct objlist_ent *last = pg->n ? &pg->v[pg->n - 1] : NULL;
    for (int k = 0; k < o->n && !more; k++)
        for (size_t h = head[k]; h < o->pages[k].n && !more; h++)
            more = !last || listpage_name_cmp(o->pages[k].v[h].name, o->pages[k].v[h].nlen,
                                              last->name, last->nlen);
    pg->next = more && last ? xstrndup(last->name, last->nlen) : xstrdup("");
    free(head);
}

/* One answer (or the hold ask_targets keeps while it sends) is in; after
 * the last, then() makes the page from them all and it is reported. */
static void settle(struct objlist *l)
{
    if (--l->pending)
        return;
    if (l->status == 200)
        l->then(l);
    finish(l);
}

static void page_one(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct objlist *l = arg;
    keep_page(l, status, body, len, err);
    settle(l);
}

/* A target's names deleted there and not yet in the backend (wb). */
static void deletes_one(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct objlist *l = arg;
    json_t *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *names = json_object_get(j, "deleted");
    if (!json_is_array(names)) {
        fail(l, 503, "a target's deletes: %s", status ? "bad answer" : (err ? err : "?"));
    } else {
        size_t i;
        json_t *n;
        json_array_foreach(names, i, n)
            if (json_is_string(n))
                json_object_set_new(l->deleted, json_string_value(n), json_true());
    }
    json_decref(j);
    settle(l);
}

/* Ask every target for its page (the query after "/v1/internal/list?"),
 * then then(l). */
static void ask_targets(struct objlist *l, const char *query, void (*then)(struct objlist *l))
{
    struct http_req *r = l->r;
    struct cmap *m = cmap_current();
    l->then = then;
    l->pending = 1;
    struct gbuf down = {0};
    for (int i = 0; i < m->n_all; i++) {
        const struct cmap_node *t = &m->nodes[m->all[i]];
        if (!(t->flags & CMAP_FLAG_DOWN))
            continue;
        if (down.n)
            gbuf_add(&down, ",", 1);
        gbuf_str(&down, t->id);
    }
    if (down.n)
        l->pg->absent = xstrndup(down.p, down.n);
    gbuf_free(&down);
    for (int i = 0; i < m->n_members; i++) {
        const struct cmap_node *t = &m->nodes[m->members[i]];
        char *url = node_signed_urlf(r->w->ctx, "GET", t->url, "/v1/internal/list?%s", query);
        l->pending++;
        nodeclient_request(worker_hc(r), "GET", url, NULL, 0, NULL, LIST_TIMEOUT_MS, page_one, l);
        free(url);
        if (!l->del_query)
            continue;
        url = node_signed_urlf(r->w->ctx, "GET", t->url, "/v1/internal/wbq?%s", l->del_query);
        l->pending++;
        nodeclient_request(worker_hc(r), "GET", url, NULL, 0, NULL, LIST_TIMEOUT_MS, deletes_one,
                           l);
        free(url);
    }
    cmap_unref(m);
    settle(l);                   /* the hold taken above */
}

/* ---- a bucket listed by its backend --------------------------------------- */

static int page_has(const struct listpage *p, const char *name, size_t nl)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = listpage_name_cmp(p->v[mid].name, p->v[mid].nlen, name, nl);
        if (c == 0)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* The backend's page, each name marked when a target's page holds it. */
static void mark_cached(struct objlist *l)
{
    struct objlist_page *pg = l->pg;
    for (size_t i = 0; i < pg->n; i++)
        for (int k = 0; k < l->own->n && !pg->v[i].cached; k++)
            pg->v[i].cached = page_has(&l->own->pages[k], pg->v[i].name, pg->v[i].nlen);
}

static void wb_ask_targets(struct objlist *l);

/* The backend's page as JSON entries of objlist_ent, pointing into j. */
static void remote_entries(struct objlist_page *pg, json_t *objs)
{
    size_t i, n = json_array_size(objs);
    json_t *o;
    pg->v = xcalloc(n + 1, sizeof(*pg->v));
    json_array_foreach(objs, i, o) {
        json_t *nj = json_object_get(o, "name"), *ej = json_object_get(o, "etag");
        if (!json_string_length(nj))
            continue;
        struct objlist_ent *e = &pg->v[pg->n++];
        e->name = json_string_value(nj);
        e->nlen = json_string_length(nj);
        e->etag = json_string_value(ej) ?: "";
        e->elen = json_string_length(ej);
        e->last_modified = json_string_value(json_object_get(o, "last_modified"));
        e->size = (uint64_t)json_integer_value(json_object_get(o, "size"));
    }
}

static void remote_page(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct objlist *l = arg;
    json_t *j = status ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *objs = j ? json_object_get(j, "objects") : NULL;
    if (status != 200 || !json_is_array(objs)) {
        const char *msg = json_string_value(json_object_get(j, "error"));
        if (!status)
            fail(l, 503, "target unreachable: %s", err ? err : "?");
        else if (status != 200)
            fail(l, status, "%s", msg ? msg : "the backend listing failed");
        else
            fail(l, 503, "a target answered %d: %.100s", status, body);
        json_decref(j);
        finish(l);
        return;
    }
    struct objlist_page *pg = l->pg;
    l->own->remote = j;
    remote_entries(pg, objs);
    pg->next = xstrdup(json_string_value(json_object_get(j, "next")) ?: "");
    if (l->wb) {
        wb_ask_targets(l);
        return;
    }
    if (pg->n == 0) {
        finish(l);
        return;
    }
    const struct objlist_ent *first = &pg->v[0], *last = &pg->v[pg->n - 1];
    char *ef = http_pct_encode(first->name, first->nlen, 0);
    char *el = http_pct_encode(last->name, last->nlen, 0);
    char *query = xasprintf("%s&from=%s&until=%s&limit=%d", l->base, ef, el, OBJLIST_MAX);
    ask_targets(l, query, mark_cached);
    free(query);
    free(ef);
    free(el);
}

/* ---- a write-back bucket: the backend's names and those not yet in it ------- */

static void wb_merge(struct objlist *l);

static int deleted(const struct objlist *l, const struct objlist_ent *e)
{
    char *name = xstrndup(e->name, e->nlen);
    int gone = json_object_get(l->deleted, name) != NULL;
    free(name);
    return gone;
}

/* The targets' names in the backend page's range, (after, its last name],
 * or all after when the backend has no more. */
static void wb_ask_targets(struct objlist *l)
{
    struct objlist_page *pg = l->pg;
    l->remote_more = pg->next[0] != 0;
    char *ea = http_pct_encode(l->after, strlen(l->after), 0);
    char *eu = l->remote_more && pg->n
                   ? http_pct_encode(pg->v[pg->n - 1].name, pg->v[pg->n - 1].nlen, 0)
                   : xstrdup("");
    char *query = xasprintf("%s&after=%s&until=%s&limit=%d", l->base, ea, eu, l->limit);
    l->del_query = xasprintf("%s&deletes&after=%s&until=%s", l->base, ea, eu);
    l->deleted = json_object();
    ask_targets(l, query, wb_merge);
    free(query);
    free(ea);
    free(eu);
}

/* The backend's page and the targets' names together, in name order: a
 * name only a target has is held and not yet written back (dirty). */
static void wb_merge(struct objlist *l)
{
    mark_cached(l);
    struct own *o = l->own;
    struct objlist_page *pg = l->pg;
    size_t *head = xcalloc((size_t)o->n + 1, sizeof(*head));
    struct objlist_ent *v = xcalloc((size_t)l->limit + 1, sizeof(*v));
    size_t n = 0, ri = 0;
    int li = next_head(o, head), local_more = 0;
    for (int i = 0; i < o->n; i++)
        local_more |= o->pages[i].more;
    while (n < (size_t)l->limit && (ri < pg->n || li >= 0)) {
        const struct listpage_ent *e = li >= 0 ? &o->pages[li].v[head[li]] : NULL;
        int c = !e ? -1 : ri >= pg->n ? 1
                        : listpage_name_cmp(pg->v[ri].name, pg->v[ri].nlen, e->name, e->nlen);
        if (c < 0 && deleted(l, &pg->v[ri]))
            ri++;                /* deleted here, the backend not yet told */
        else if (c <= 0)
            v[n++] = pg->v[ri++];
        else
            v[n++] = local_ent(e, 1);
        if (c >= 0) {            /* the target's entry is used (or is the backend's) */
            head[li]++;
            li = next_head(o, head);
        }
    }
    int cut = ri < pg->n || li >= 0;
    /* where the next page starts: after the last name given, or (all of
     * this page's left out) after the backend page's last */
    const struct objlist_ent *last = n ? &v[n - 1] : pg->n ? &pg->v[pg->n - 1] : NULL;
    char *next = (cut || l->remote_more || local_more) && last
                     ? xstrndup(last->name, last->nlen)
                     : xstrdup("");
    free(pg->v);
    pg->v = v;
    pg->n = n;
    free(pg->next);
    pg->next = next;
    free(head);
}

static void list_remote(struct objlist *l, const char *provider, const char *bucket,
                        const char *token)
{
    struct http_req *r = l->r;
    char key[128];
    int kn = snprintf(key, sizeof(key), "list/%s/%s", provider, bucket);
    struct cmap *m = cmap_current();
    const struct cmap_node *t = cmap_owner(m, key, (size_t)kn);
    if (!t) {
        cmap_unref(m);
        fail(l, 503, "no storage target is in the cluster");
        finish(l);
        return;
    }
    char *et = http_pct_encode(token, strlen(token), 0);
    char *url = node_signed_urlf(r->w->ctx, "GET", t->url,
                                 "/v1/internal/list-remote?%s&%s=%s&limit=%d", l->base,
                                 l->wb ? "after" : "token", et,
                                 l->limit > REMOTE_MAX ? REMOTE_MAX : l->limit);
    nodeclient_request(worker_hc(r), "GET", url, NULL, 0, NULL, REMOTE_TIMEOUT_MS, remote_page, l);
    free(url);
    free(et);
    cmap_unref(m);
}

void objlist_start(struct http_req *r, const char *provider, const char *bucket,
                   const char *prefix, const char *token, int limit, int flags,
                 objlist_done_fn done, void *arg)
{
    struct objlist *l = xcalloc(1, sizeof(*l));
    l->r = r;
    l->done = done;
    l->arg = arg;
    l->limit = limit;
    l->status = 200;
    l->own = xcalloc(1, sizeof(*l->own));
    l->pg = xcalloc(1, sizeof(*l->pg));
    http_req_ref(r);
    if (!(flags & OBJLIST_CACHED_ONLY) && objlist_http_origin(provider, bucket)) {
        fail(l, 501, "bucket '%s' reads an HTTP origin, which has no listing: not "
                     "implemented (cached=true lists what Shoal holds of it)", bucket);
        finish(l);
        return;
    }
    char *ep = http_pct_encode(prefix, strlen(prefix), 0);
    l->base = xasprintf("provider=%s&bucket=%s&prefix=%s%s", provider, bucket, ep,
                        flags & OBJLIST_VERSIONS ? "&versions=1" : "");
    free(ep);
    if (!(flags & OBJLIST_CACHED_ONLY) && objlist_by_backend(provider, bucket)) {
        l->pg->remote = 1;
        l->wb = backlog_write_back(provider, bucket);
        l->after = xstrdup(token);
        list_remote(l, provider, bucket, token);
    } else {
        char *et = http_pct_encode(token, strlen(token), 0);
        char *query = xasprintf("%s&after=%s&limit=%d", l->base, et, limit);
        ask_targets(l, query, merge);
        free(query);
        free(et);
    }
}

/* The kind of provider/name's backend (bmd_backend_scheme: a literal), or
 * NULL without one or when it is not in the BMD. */
static const char *scheme_of(const char *provider, const char *name)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = bmd_find(b, provider, name);
    const char *scheme = bk ? bmd_backend_scheme(bk, NULL) : NULL;
    bmd_unref(b);
    return scheme;
}

int objlist_http_origin(const char *provider, const char *name)
{
    const char *scheme = scheme_of(provider, name);
    return scheme && !strcmp(scheme, "http");
}

int objlist_by_backend(const char *provider, const char *name)
{
    const char *scheme = scheme_of(provider, name);
    return scheme && strcmp(scheme, "http");   /* every kind but an origin lists */
}
