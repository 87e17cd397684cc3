/*
 * list: a target's share of a bucket listing, for the proxy that merges
 * every target's pages into one.
 *
 * Local pages come from the mountpaths' RocksDB, where metadata keys sort
 * by bucket then name; store_list merges the mountpaths on the I/O pool
 * and stops after limit names, saying whether more follow. They go out in
 * the compact page format of common/listpage.h, not JSON: the proxy reads
 * them by the ten thousand. A bucket with
 * an S3 backend is also listed remotely: one ListObjectsV2 page of the
 * backend, asked by one target on the proxy's behalf and handed back as
 * JSON with the continuation token.
 *
 * Threads: the request's worker; store_list on the I/O pool.
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "http.h"
#include "iopool.h"
#include "list.h"
#include "listpage.h"
#include "objname.h"
#include "s3list.h"
#include "target.h"
#include "util.h"

#define LIST_MAX 10000           /* names in one local page */
#define LIST_REMOTE_MAX 1000     /* keys in one backend page (S3's limit) */

/* The limit query parameter, 1..max (default when absent): 0, or -1 when
 * it is out of bounds. */
static int query_limit(struct http_req *r, int max, int *limit)
{
    char lim[16];
    if (http_query_get(r, "limit", lim, sizeof(lim)) <= 0)
        return 0;
    uint64_t v;
    if (parse_u64(lim, strlen(lim), &v) || v < 1 || v > (uint64_t)max)
        return -1;
    *limit = (int)v;
    return 0;
}

/* ---- local ------------------------------------------------------------------ */

struct list {
    struct target *t;
    struct http_req *r;
    char provider[16], bucket[64], prefix[OBJNAME_MAX + 1], after[OBJNAME_STORED_MAX + 1],
        until[OBJNAME_MAX + 1], from[OBJNAME_MAX + 1];
    int limit, rc;
    int versions;                /* ?versions: every version kept, as stored */
    struct gbuf page;            /* the compact page (common/listpage.h) */
};

static void list_work(void *arg)
{
    struct list *l = arg;
    l->rc = store_list(&l->t->store, l->provider, l->bucket, l->prefix, l->after, l->from,
                       l->until, l->limit, l->versions, &l->page);
}

static void list_done(void *arg)
{
    struct list *l = arg;
    if (l->rc)
        http_reply_error(l->r, 500, "cannot list: %s", strerror(-l->rc));
    else
        http_reply(l->r, 200, LISTPAGE_CTYPE, l->page.p, l->page.n);
    gbuf_free(&l->page);
    http_req_unref(l->r);
    free(l);
}

void list_local(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    struct list *l = xcalloc(1, sizeof(*l));
    char err[256];
    (void)rest;
    (void)rlen;
    l->t = t;
    l->r = r;
    l->limit = 1000;
    if (http_query_get(r, "bucket", l->bucket, sizeof(l->bucket)) < 1 ||
        !bmd_valid_name(l->bucket, strlen(l->bucket)) ||
        objname_provider(r, l->provider, err, sizeof(err)) ||
        http_query_get(r, "prefix", l->prefix, sizeof(l->prefix)) == -2 ||
        http_query_get(r, "after", l->after, sizeof(l->after)) == -2 ||
        http_query_get(r, "until", l->until, sizeof(l->until)) == -2 ||
        http_query_get(r, "from", l->from, sizeof(l->from)) == -2) {
        free(l);
        http_reply_error(r, 400, "bad list request");
        return;
    }
    char flag[4];
    l->versions = http_query_get(r, "versions", flag, sizeof(flag)) >= 0;
    if (query_limit(r, LIST_MAX, &l->limit)) {
        free(l);
        http_reply_error(r, 400, "limit must be 1..%d", LIST_MAX);
        return;
    }
    http_req_ref(r);
    iopool_submit(t->io, r->w->q, list_work, list_done, l);
}

/* ---- one page of a backend's listing ------------------------------------------ */

struct rlist {
    struct target *t;
    struct http_req *r;
    struct backend b;
};

static void rlist_done(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct rlist *l = arg;
    struct http_req *r = l->r;
    struct s3list sl;
    char err[300];
    if (o->status != 200) {
        int st = backend_status(&l->b, o, err, sizeof(err));
        http_reply_error(r, st, "%s", err);
    } else if (backend_list_parse(&l->b, body, len, &sl, err, sizeof(err))) {
        http_reply_error(r, 502, "backend %s sent a bad listing: %s", l->b.label, err);
    } else {
        json_t *arr = json_array();
        for (int i = 0; i < sl.n; i++)
            json_array_append_new(
                arr, json_pack("{s:s, s:I, s:s, s:s}", "name", sl.objs[i].key, "size",
                               (json_int_t)sl.objs[i].size, "etag",
                               sl.objs[i].etag ? sl.objs[i].etag : "", "last_modified",
                               sl.objs[i].last_modified ? sl.objs[i].last_modified : ""));
        const char *next = sl.truncated && sl.next_token ? sl.next_token : "";
        http_reply_json(r, 200, json_pack("{s:o, s:s}", "objects", arr, "next", next));
        s3list_free(&sl);
    }
    backend_free(&l->b);
    http_req_unref(r);
    free(l);
}

void list_remote(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    char bucket[64], provider[16], prefix[OBJNAME_MAX + 1] = "", token[2048] = "";
    char after[OBJNAME_MAX + 1] = "";
    char err[256];
    int limit = 1000;
    (void)rest;
    (void)rlen;
    if (http_query_get(r, "bucket", bucket, sizeof(bucket)) < 1 ||
        objname_provider(r, provider, err, sizeof(err)) ||
        http_query_get(r, "prefix", prefix, sizeof(prefix)) == -2 ||
        http_query_get(r, "token", token, sizeof(token)) == -2 ||
        http_query_get(r, "after", after, sizeof(after)) == -2) {
        http_reply_error(r, 400, "bad remote list request");
        return;
    }
    if (query_limit(r, LIST_REMOTE_MAX, &limit)) {
        http_reply_error(r, 400, "limit must be 1..%d for a backend listing", LIST_REMOTE_MAX);
        return;
    }
    struct rlist *l = xcalloc(1, sizeof(*l));
    int known = backend_of(t, provider, bucket, &l->b) == 0;
    if (!backend_listable(&l->b) || (after[0] && !backend_lists_by_name(&l->b))) {
        backend_free(&l->b);
        free(l);
        http_reply_error(r, known ? 400 : 404, known ? "bucket '%s' has no listable backend"
                                                     : "bucket '%s' not found", bucket);
        return;
    }
    l->t = t;
    l->r = r;
    http_req_ref(r);
    if (after[0])                /* a write-back bucket's pages go by name (objlist.c) */
        backend_list_after(target_cli(r), &l->b, prefix, after, limit, rlist_done, l);
    else
        backend_list(target_cli(r), &l->b, prefix, token, limit, rlist_done, l);
}
