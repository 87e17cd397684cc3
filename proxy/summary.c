/*
 * summary: a bucket's presence in Shoal (see summary.h), counted over
 * objlist's pages: for a bucket listed by its backend each entry says
 * whether a target holds it; a Shoal-only bucket's names are all held. A
 * template (common/tmpl.h) is counted over the listing of its literal
 * start, keeping the names it matches. A write-back bucket's summary adds
 * what its objects still owe the backend (backlog.h).
 *
 * Thread: the worker's loop; each page's callback asks for the next.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "objname.h"
#include "objlist.h"
#include "backlog.h"
#include "summary.h"
#include "tmpl.h"
#include "util.h"

struct summary {
    struct http_req *r;
    char provider[16];
    char bucket[64];
    char *prefix;
    struct tmpl t;                      /* the names to count, when given */
    int has_tmpl;
    uint64_t objects, bytes;            /* listed */
    uint64_t present, present_bytes;    /* held by Shoal */
    int remote;
    int pages;
    int flags;                   /* objlist_start's */
    json_t *reply;               /* the answer, while the debts are asked */
};

static void summary_free(struct summary *s)
{
    http_req_unref(s->r);
    if (s->has_tmpl)
        tmpl_free(&s->t);
    json_decref(s->reply);
    free(s->prefix);
    free(s);
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 100.0;
}

static void with_owed(struct http_req *r, json_t *owed, void *arg)
{
    struct summary *s = arg;
    json_object_set_new(s->reply, "dirty", owed);
    http_reply_json(r, 200, s->reply);
    s->reply = NULL;
    summary_free(s);
}

/* Answer, then free s (perhaps later: a write-back bucket's debts first). */
static void reply(struct summary *s)
{
    json_t *j = json_pack("{s:s, s:s, s:s, s:b, s:{s:I, s:I}, s:{s:I, s:I}, s:f, s:f}",
                          "bucket", s->bucket, "provider", s->provider, "prefix", s->prefix,
                          "backed", s->remote,
                          "objects", "present", (json_int_t)s->present, "total",
                          (json_int_t)s->objects,
                          "bytes", "present", (json_int_t)s->present_bytes, "total",
                          (json_int_t)s->bytes,
                          "cached_pct", pct(s->present_bytes, s->bytes),
                          "objects_cached_pct", pct(s->present, s->objects));
    if (s->has_tmpl)
        json_object_set_new(j, "selected", json_integer((json_int_t)s->t.count));
    if (backlog_write_back(s->provider, s->bucket)) { /* and what is not yet in the backend */
        s->reply = j;
        backlog_ask(s->r, s->provider, s->bucket, with_owed, s);
        return;
    }
    http_reply_json(s->r, 200, j);   /* takes j */
    summary_free(s);
}

static void page_in(void *arg, struct objlist_page *pg, int status, const char *err)
{
    struct summary *s = arg;
    if (!pg) {
        http_reply_error(s->r, status, "summary after %d pages: %s", s->pages, err);
        summary_free(s);
        return;
    }
    s->pages++;
    s->remote |= pg->remote;
    for (size_t i = 0; i < pg->n; i++) {
        const struct objlist_ent *e = &pg->v[i];
        if (s->has_tmpl && !tmpl_match(&s->t, e->name, e->nlen))
            continue;
        s->objects++;
        s->bytes += e->size;
        if (e->cached || !pg->remote) {
            s->present++;
            s->present_bytes += e->size;
        }
    }
    if (!pg->next[0] || !s->r->conn) {  /* the last page, or nobody to tell */
        objlist_page_free(pg);
        reply(s);
        return;
    }
    char *next = xstrdup(pg->next);
    objlist_page_free(pg);
    objlist_start(s->r, s->provider, s->bucket, s->prefix, next, OBJLIST_MAX, s->flags, page_in,
                  s);
    free(next);
}

void summary_bucket(struct http_req *r, const char *provider, const char *bucket)
{
    char prefix[OBJNAME_MAX + 1], tq[OBJNAME_MAX + 1], err[256];
    int pn = http_query_get(r, "prefix", prefix, sizeof(prefix));
    int tn = http_query_get(r, "template", tq, sizeof(tq));
    if (pn == -2 || tn == -2) {
        http_reply_error(r, 400, "prefix and template must be at most %d bytes, well encoded",
                         OBJNAME_MAX);
        return;
    }
    if (pn >= 0 && tn >= 0) {
        http_reply_error(r, 400, "give a prefix or a template, not both");
        return;
    }
    struct tmpl t;
    if (tn >= 0 && tmpl_parse(&t, tq, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return;
    }
    struct summary *s = xcalloc(1, sizeof(*s));
    if (tn >= 0) {                       /* listed from its literal start */
        s->t = t;
        s->has_tmpl = 1;
        snprintf(prefix, sizeof(prefix), "%s", tmpl_prefix(&t));
        pn = 0;
    }
    s->r = r;
    http_req_ref(r);
    snprintf(s->provider, sizeof(s->provider), "%s", provider);
    snprintf(s->bucket, sizeof(s->bucket), "%s", bucket);
    s->prefix = xstrdup(pn < 0 ? "" : prefix);
    /* an HTTP origin has no listing: what Shoal holds of it is all there is to count */
    s->flags = objlist_http_origin(provider, bucket) ? OBJLIST_CACHED_ONLY : 0;
    objlist_start(r, s->provider, s->bucket, s->prefix, "", OBJLIST_MAX, s->flags, page_in, s);
}
