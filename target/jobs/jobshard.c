/*
 * jobshard: the shard and reshard kinds (see jobshard.h): the selection
 * gathered, the shards planned (common/shardplan.h), then each written as
 * a GetBatch streamed into a PUT.
 *
 * Thread: the job's loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "archidx.h"
#include "backend.h"
#include "batchreq.h"
#include "bmd.h"
#include "cmap.h"
#include "hrw.h"
#include "http.h"
#include "jobshard.h"
#include "listpage.h"
#include "log.h"
#include "node.h"
#include "nodeclient.h"
#include "nodesig.h"
#include "objname.h"
#include "shardplan.h"
#include "target.h"
#include "tmpl.h"
#include "util.h"

#define SHARD_PAR 2              /* shards written at once */
#define ARCHLIST_PAR 4           /* a reshard's sources listed at once */
#define ITEMS_MAX 4000000u       /* objects or members one job lays out */
#define LISTED_MAX (2 * ITEMS_MAX)   /* names listed, copies on several targets included */
#define PAGE_MAX 10000           /* names in one page of a target's listing */
#define PIPE_HIGH (8u << 20)     /* a shard's bytes waiting for its PUT: the batch pauses */
#define PIPE_LOW (2u << 20)      /* and goes on again */
#define REQ_TIMEOUT_MS 120000L
#define XFER_TIMEOUT_MS (6L * 3600 * 1000)
#define SHARD_SIZE_DEFAULT (256ull << 20)
#define SHARD_MEMBERS_MAX 100000 /* a shard's members at most: one batch's request */

struct item {
    char *name;                  /* the object */
    char *archpath;              /* a reshard's member of it, or NULL */
    uint64_t size;
};

struct lcur {                    /* one target's listing */
    char *url;
    char *after;                 /* the last name of its last page ("" before the first) */
    int done;
};

struct swr;

enum stage { ST_MAP, ST_LIST, ST_MEMBERS, ST_WRITE, ST_OVER };

struct shardjob {
    int reshard;
    char to_provider[16], to[64];
    char *out_s;                 /* the output template as given */
    struct tmpl out;
    int okind;                   /* archidx kind of the shards */
    uint64_t shard_size;
    int shuffle;
    uint64_t seed;
    /* the selection */
    char **names;                /* sorted, or NULL */
    size_t nnames;
    struct tmpl sel;
    int has_sel;
    char *prefix;                /* what the listing asks for */
    int remote;                  /* listed by the backend */
    /* the run */
    int64_t want_map;
    int map_waits;
    enum stage st;
    int pending;                 /* requests out */
    int failed;                  /* the job stops: its reason is noted */
    char *self;                  /* this target's URL */
    struct lcur *lc;             /* a local listing: one per target */
    int nl;
    char *token;                 /* a backend listing's next page ("" first, NULL done) */
    struct item *v;              /* gathered: the objects (a reshard's: members) */
    size_t n, cap;
    struct item *src;            /* a reshard's sources */
    size_t nsrc, next_src;
    struct shardplan plan;
    size_t planned;              /* plan.nshards, for describe on other workers (atomic) */
    size_t next_shard;
    struct swr *w[SHARD_PAR];
};

static struct shardjob *sj_of(const struct job *j)
{
    return j->kd;
}

static void pump(struct job *j);

static void fail_job(struct job *j, const char *what, const char *why)
{
    job_note_error(j, what, why);
    sj_of(j)->failed = 1;
}

static void add_item(struct shardjob *s, const char *name, size_t nlen, const char *ap,
                     size_t alen, uint64_t size)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = (struct item){xstrndup(name, nlen), ap ? xstrndup(ap, alen) : NULL, size};
}

static void items_free(struct item *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].archpath);
    }
    free(v);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int item_cmp(const void *a, const void *b)
{
    return strcmp(((const struct item *)a)->name, ((const struct item *)b)->name);
}

/* Is name (n bytes) selected? */
static int selected(const struct shardjob *s, const char *name, size_t n)
{
    if (s->has_sel)
        return tmpl_match(&s->sel, name, n);
    if (!s->names)
        return 1;
    char key[OBJNAME_MAX + 1];
    if (n > OBJNAME_MAX)
        return 0;
    memcpy(key, name, n);
    key[n] = '\0';
    const char *k = key;
    return bsearch(&k, s->names, s->nnames, sizeof(*s->names), name_cmp) != NULL;
}

/* ---- gathering the selection -------------------------------------------------------- */

static void list_next(struct job *j);

static void gathered_local(struct job *j, struct lcur *c, const char *body, size_t len)
{
    struct shardjob *s = sj_of(j);
    struct listpage pg;
    char err[256];
    if (listpage_parse(body, len, &pg, err, sizeof(err))) {
        fail_job(j, c->url, err);
        return;
    }
    for (size_t i = 0; i < pg.n && s->n < LISTED_MAX; i++)
        if (selected(s, pg.v[i].name, pg.v[i].nlen))
            add_item(s, pg.v[i].name, pg.v[i].nlen, NULL, 0, pg.v[i].size);
    if (pg.n) {
        free(c->after);
        c->after = xstrndup(pg.v[pg.n - 1].name, pg.v[pg.n - 1].nlen);
    }
    c->done = !pg.more || !pg.n;
    listpage_free(&pg);
}

static void gathered_remote(struct job *j, const char *body, size_t len)
{
    struct shardjob *s = sj_of(j);
    json_error_t je;
    json_t *a = json_loadb(body, len, 0, &je);
    json_t *objs = json_object_get(a, "objects");
    const char *next = json_string_value(json_object_get(a, "next"));
    if (!json_is_array(objs) || !next) {
        json_decref(a);
        fail_job(j, "(the backend's listing)", "a listing page Shoal could not read");
        return;
    }
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o) {
        const char *nm = json_string_value(json_object_get(o, "name"));
        json_int_t sz = json_integer_value(json_object_get(o, "size"));
        if (nm && sz >= 0 && s->n < LISTED_MAX && selected(s, nm, strlen(nm)))
            add_item(s, nm, strlen(nm), NULL, 0, (uint64_t)sz);
    }
    free(s->token);
    s->token = next[0] ? xstrdup(next) : NULL;
    json_decref(a);
}

struct lreq {
    struct job *j;
    struct lcur *c;              /* NULL: the backend's listing */
};

static void listed(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct lreq *q = arg;
    struct job *j = q->j;
    struct shardjob *s = sj_of(j);
    s->pending--;
    if (status != 200) {
        char why[300];
        snprintf(why, sizeof(why), "listing: %s", status ? body : err ? err : "failed");
        fail_job(j, q->c ? q->c->url : "(the backend's listing)", why);
    } else if (q->c) {
        gathered_local(j, q->c, body, len);
    } else {
        gathered_remote(j, body, len);
    }
    free(q);
    if (s->n >= LISTED_MAX && !s->failed)
        fail_job(j, "(the selection)", "more than 4,000,000 names: select fewer");
    pump(j);
}

/* Ask for the next page of each listing not done (one at a time each). */
static void list_next(struct job *j)
{
    struct shardjob *s = sj_of(j);
    char *pre = http_pct_encode(s->prefix, strlen(s->prefix), 0);
    char *bk = http_pct_encode(j->bucket, strlen(j->bucket), 0);
    if (s->remote && s->token && !s->pending) {
        char *tk = http_pct_encode(s->token, strlen(s->token), 0);
        char *url = node_signed_urlf(&j->t->node, "GET", s->self,
                                     "/v1/internal/list-remote?bucket=%s&provider=%s&prefix=%s"
                                     "%s%s&limit=1000", bk, j->provider, pre,
                                     s->token[0] ? "&token=" : "", tk);
        struct lreq *q = xcalloc(1, sizeof(*q));
        q->j = j;
        s->pending++;
        nodeclient_request(j->hc, "GET", url, NULL, 0, NULL, REQ_TIMEOUT_MS, listed, q);
        free(url);
        free(tk);
    }
    int local = !s->remote && !s->pending;   /* a round: every target's next page */
    for (int i = 0; local && i < s->nl; i++) {
        struct lcur *c = &s->lc[i];
        if (c->done)
            continue;
        char *af = http_pct_encode(c->after, strlen(c->after), 0);
        char *url = node_signed_urlf(&j->t->node, "GET", c->url,
                                     "/v1/internal/list?bucket=%s&provider=%s&prefix=%s"
                                     "&after=%s&limit=%d", bk, j->provider, pre, af,
                                     PAGE_MAX);
        struct lreq *q = xcalloc(1, sizeof(*q));
        q->j = j;
        q->c = c;
        s->pending++;
        nodeclient_request(j->hc, "GET", url, NULL, 0, NULL, REQ_TIMEOUT_MS, listed, q);
        free(url);
        free(af);
    }
    free(pre);
    free(bk);
}

static int list_over(const struct shardjob *s)
{
    if (s->remote)
        return !s->token;
    for (int i = 0; i < s->nl; i++)
        if (!s->lc[i].done)
            return 0;
    return 1;
}

/* The listings are in: one item a name (copies on several targets are
 * one), the names asked for that are not there counted as errors. */
static void gathered(struct job *j)
{
    struct shardjob *s = sj_of(j);
    if (s->n)
        qsort(s->v, s->n, sizeof(*s->v), item_cmp);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (k && !strcmp(s->v[k - 1].name, s->v[i].name)) {
            free(s->v[i].name);
            continue;
        }
        s->v[k++] = s->v[i];
    }
    s->n = k;
    if (s->n > ITEMS_MAX)
        fail_job(j, "(the selection)", "more than 4,000,000 names: select fewer");
    for (size_t i = 0; i < s->nnames; i++) {
        struct item key = {s->names[i], NULL, 0};
        if (!s->n || !bsearch(&key, s->v, s->n, sizeof(*s->v), item_cmp))
            job_note_error(j, s->names[i], "no such object");
    }
}

/* ---- a reshard's members --------------------------------------------------------------- */

struct mreq {
    struct job *j;
    size_t i;                    /* the source */
};

static void members_in(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct mreq *q = arg;
    struct job *j = q->j;
    struct shardjob *s = sj_of(j);
    const struct item *src = &s->src[q->i];
    s->pending--;
    json_error_t je;
    json_t *a = status == 200 ? json_loadb(body, len, 0, &je) : NULL;
    json_t *ms = json_object_get(a, "members");
    if (!json_is_array(ms)) {
        char why[300];
        snprintf(why, sizeof(why), "its members: %s",
                 status ? (status == 200 ? "an answer Shoal could not read" : body)
                        : err ? err : "failed");
        fail_job(j, src->name, why);   /* its members would be missing from the shards */
    }
    size_t i;
    json_t *m;
    json_array_foreach(ms, i, m) {
        const char *nm = json_string_value(json_object_get(m, "name"));
        json_int_t sz = json_integer_value(json_object_get(m, "size"));
        if (s->n > ITEMS_MAX) {
            if (!s->failed)
                fail_job(j, "(the selection)", "more than 4,000,000 members: select fewer");
            break;
        }
        if (nm && sz >= 0)
            add_item(s, src->name, strlen(src->name), nm, strlen(nm), (uint64_t)sz);
    }
    json_decref(a);
    free(q);
    pump(j);
}

static void members_next(struct job *j)
{
    struct shardjob *s = sj_of(j);
    struct cmap *m = cmap_current();
    while (m && !s->failed && s->pending < ARCHLIST_PAR && s->next_src < s->nsrc) {
        const struct item *src = &s->src[s->next_src];
        size_t kl;
        char *hk = node_obj_key(j->provider, j->bucket, src->name, &kl);
        const struct cmap_node *o = cmap_owner(m, hk, kl);
        free(hk);
        struct mreq *q = xcalloc(1, sizeof(*q));
        q->j = j;
        q->i = s->next_src++;
        char *en = http_pct_encode(src->name, strlen(src->name), 1);
        char *url = node_signed_urlf(&j->t->node, "GET", o ? o->url : s->self,
                                     "/v1/objects/%s/%s?provider=%s&archlist", j->bucket, en,
                                     j->provider);
        s->pending++;
        nodeclient_request(j->hc, "GET", url, NULL, 0, NULL, REQ_TIMEOUT_MS, members_in, q);
        free(url);
        free(en);
    }
    if (!m) {                    /* not in a map for now: a turn later */
        struct timeval tv = {0, 100000};
        event_add(j->tick, &tv);
    }
    cmap_unref(m);
}

/* ---- writing a shard: a GetBatch of its members into a PUT ------------------------------ */

struct swr {
    struct job *j;
    size_t shard;
    char name[OBJNAME_MAX + 1];
    char *body;                  /* the batch request */
    size_t blen, items;
    struct nodeclient_xfer *get, *put;
    struct evbuffer *pipe;       /* the batch's bytes not yet uploaded */
    int get_status, get_over, get_ok, get_paused, put_over;
    uint64_t bytes;
    char msg[200];               /* the start of an error answer */
    size_t mlen;
};

/* w is over: what of it is under way is cancelled, and it goes. */
static void swr_drop(struct swr *w)
{
    struct shardjob *s = sj_of(w->j);
    for (int i = 0; i < SHARD_PAR; i++)
        if (s->w[i] == w)
            s->w[i] = NULL;
    if (w->get && !w->get_over)
        nodeclient_cancel(w->get);
    if (w->put && !w->put_over)
        nodeclient_cancel(w->put);
    evbuffer_free(w->pipe);
    free(w->body);
    free(w);
}

static void swr_over(struct swr *w)
{
    struct job *j = w->j;
    swr_drop(w);
    pump(j);
}

static void swr_failed(struct swr *w, const char *why)
{
    char what[OBJNAME_MAX + 80];
    snprintf(what, sizeof(what), "%s/%s", sj_of(w->j)->to, w->name);
    job_note_error(w->j, what, why);
}

static void keep_msg(struct swr *w, const char *p, size_t n)
{
    size_t room = sizeof(w->msg) - 1 - w->mlen;
    size_t k = n < room ? n : room;
    memcpy(w->msg + w->mlen, p, k);
    w->mlen += k;
    w->msg[w->mlen] = '\0';
}

static ssize_t put_read(void *arg, char *buf, size_t n)
{
    struct swr *w = arg;
    size_t have = evbuffer_get_length(w->pipe);
    if (!have)
        return w->get_over ? (w->get_ok ? 0 : -1) : NODECLIENT_READ_PAUSE;
    int k = evbuffer_remove(w->pipe, buf, n);
    if (k < 0)
        return -1;
    w->bytes += (uint64_t)k;
    if (w->get_paused && !w->get_over && have - (size_t)k < PIPE_LOW) {
        w->get_paused = 0;
        nodeclient_resume(w->get);
    }
    return k;
}

static int put_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    (void)x;
    keep_msg(arg, p, n);
    return 0;
}

static void put_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct swr *w = arg;
    (void)x;
    w->put_over = 1;
    if (status == 200 || status == 201) {
        job_add(w->j, JC_SHARDS, 1, w->bytes);
        job_add(w->j, JC_DONE, w->items, 0);
    } else if (w->get_over && !w->get_ok) {
        /* the batch's own failure is noted already */
    } else {
        char why[300];
        snprintf(why, sizeof(why), "its PUT %s%d: %s", status ? "answered " : "",
                 status, status ? w->msg : err ? err : "failed");
        swr_failed(w, why);
    }
    swr_over(w);
}

static const struct nodeclient_ops put_ops = {
    .on_data = put_data,
    .on_read = put_read,
    .on_done = put_done,
};

static void put_start(struct swr *w)
{
    struct job *j = w->j;
    struct shardjob *s = sj_of(j);
    struct cmap *m = cmap_current();
    size_t kl;
    char *hk = node_obj_key(s->to_provider, s->to, w->name, &kl);
    const struct cmap_node *o = m ? cmap_owner(m, hk, kl) : NULL;
    free(hk);
    char *en = http_pct_encode(w->name, strlen(w->name), 1);
    char *url = node_signed_urlf(&j->t->node, "PUT", o ? o->url : s->self,
                                 "/v1/objects/%s/%s?provider=%s", s->to, en, s->to_provider);
    cmap_unref(m);
    char ctype[96];
    snprintf(ctype, sizeof(ctype), "Content-Type: %s", archidx_content_type(s->okind));
    const char *hdrs[1] = {ctype};
    w->put = nodeclient_start(j->hc, "PUT", url, hdrs, 1, NODECLIENT_UP_CHUNKED,
                              XFER_TIMEOUT_MS, &put_ops, w);
    free(url);
    free(en);
}

static int get_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct swr *w = arg;
    (void)x;
    w->get_status = status;
    if (status == 200)
        put_start(w);
    return 0;
}

static int get_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct swr *w = arg;
    if (w->get_status != 200) {
        keep_msg(w, p, n);
        return 0;
    }
    evbuffer_add(w->pipe, p, n);
    nodeclient_resume_upload(w->put);
    if (!w->get_paused && evbuffer_get_length(w->pipe) > PIPE_HIGH) {
        w->get_paused = 1;
        nodeclient_pause(x);
    }
    return 0;
}

static void get_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct swr *w = arg;
    (void)x;
    w->get_over = 1;             /* the transfer goes once this returns */
    w->get_paused = 0;
    w->get_ok = status == 200;
    if (!w->get_ok) {
        char why[300];
        snprintf(why, sizeof(why), "reading its members %s%d: %s", status ? "answered " : "",
                 status, status ? w->msg : err ? err : "failed");
        swr_failed(w, why);
    }
    if (!w->put) {
        swr_over(w);
        return;
    }
    nodeclient_resume_upload(w->put);   /* its end: the last chunk, or a failed upload */
}

static const struct nodeclient_ops get_ops = {
    .on_headers = get_headers,
    .on_data = get_data,
    .on_done = get_done,
};

/* The batch request of shard k's members. */
static char *batch_body(const struct job *j, size_t k, size_t *len)
{
    const struct shardjob *s = sj_of(j);
    json_t *es = json_array();
    for (size_t i = s->plan.cut[k]; i < s->plan.cut[k + 1]; i++) {
        const struct item *it = &s->v[s->plan.order[i]];
        json_t *e = json_pack("{s:s, s:s, s:s}", "bucket", j->bucket, "provider", j->provider,
                              "name", it->name);
        if (it->archpath)
            json_object_set_new(e, "archpath", json_string(it->archpath));
        json_array_append_new(es, e);
    }
    json_t *q = json_pack("{s:o, s:s, s:s}", "entries", es, "output",
                          s->okind == ARCHIDX_ZIP ? ".zip" : s->okind == ARCHIDX_TGZ ? ".tar.gz"
                                                                                     : ".tar",
                          "names", s->reshard ? "member-only" : "name-only");
    char *b = json_dumps(q, JSON_COMPACT);
    json_decref(q);
    *len = strlen(b);
    return b;
}

static void swr_start(struct job *j, int slot, size_t k)
{
    struct shardjob *s = sj_of(j);
    struct swr *w = xcalloc(1, sizeof(*w));
    s->w[slot] = w;
    w->j = j;
    w->shard = k;
    w->items = s->plan.cut[k + 1] - s->plan.cut[k];
    w->pipe = evbuffer_new();
    if (tmpl_name(&s->out, k, w->name, sizeof(w->name)) <= 0) {
        snprintf(w->name, sizeof(w->name), "%s #%zu", s->out_s, k);
        swr_failed(w, "the template's name for it is too long");
        swr_over(w);
        return;
    }
    w->body = batch_body(j, k, &w->blen);
    char query[8 + BATCHREQ_DIGEST_LEN] = "digest=";
    batchreq_digest(w->body, w->blen, query + 7);
    char *url = node_signed_url(&j->t->node, "POST", s->self, "/v1/batch", query);
    const char *hdrs[1] = {"Content-Type: application/json"};
    w->get = nodeclient_start_mem(j->hc, "POST", url, hdrs, 1, w->body, w->blen,
                                  XFER_TIMEOUT_MS, &get_ops, w);
    free(url);
}

/* ---- the plan, and the pump -------------------------------------------------------------- */

/* Lay the gathered items out; 0, or -1 (the job fails, noted). */
static int plan(struct job *j)
{
    struct shardjob *s = sj_of(j);
    struct shardplan_item *pv = xcalloc(s->n ? s->n : 1, sizeof(*pv));
    for (size_t i = 0; i < s->n; i++) {
        const char *nm = s->v[i].archpath ? s->v[i].archpath : s->v[i].name;
        pv[i] = (struct shardplan_item){nm, strlen(nm), s->v[i].size};
    }
    int rc = shardplan_make(&s->plan, pv, s->n, s->okind, s->shard_size, SHARD_MEMBERS_MAX,
                            s->shuffle, s->seed);
    free(pv);
    if (rc) {
        fail_job(j, "(the selection)", "too many names to lay out");
        return -1;
    }
    for (size_t i = 0; i < s->plan.ndups; i++) {
        const struct item *it = &s->v[s->plan.dups[i]];
        job_note_error(j, it->archpath ? it->archpath : it->name,
                       "a second member of this name, left out");
    }
    if (!s->plan.n) {
        fail_job(j, "(the selection)", "nothing selected: no shard to make");
        return -1;
    }
    job_set_total(j, s->plan.n, 0);
    __atomic_store_n(&s->planned, s->plan.nshards, __ATOMIC_RELAXED);
    job_add(j, JC_OWNED, s->plan.n, 0);
    if (s->plan.nshards > s->out.count) {
        char why[200];
        snprintf(why, sizeof(why), "the selection makes %zu shards; the template names %llu",
                 s->plan.nshards, (unsigned long long)s->out.count);
        fail_job(j, s->out_s, why);
        return -1;
    }
    return 0;
}

/* The leader: the owner of the job's id in the map, once the map is as
 * new as the proxy's when it started the job. 1 lead, 0 not, -1 later. */
static int leads(struct job *j)
{
    struct shardjob *s = sj_of(j);
    struct cmap *m = job_map_wait(j, s->want_map, &s->map_waits);
    if (!m)
        return -1;
    const struct cmap_node *o = cmap_owner(m, j->id, strlen(j->id));
    const struct cmap_node *me = cmap_find(m, j->t->node.id);
    int lead = o && me && o == me;
    if (lead) {
        s->self = xstrdup(me->url);
        s->nl = m->n_members;
        s->lc = xcalloc(s->nl ? (size_t)s->nl : 1, sizeof(*s->lc));
        for (int i = 0; i < s->nl; i++) {
            s->lc[i].url = xstrdup(m->nodes[m->members[i]].url);
            s->lc[i].after = xstrdup("");
        }
    }
    cmap_unref(m);
    return lead;
}

/* The gathering is over: on to the members, or the plan. */
static void listed_all(struct job *j)
{
    struct shardjob *s = sj_of(j);
    gathered(j);
    if (s->reshard) {
        s->src = s->v;
        s->nsrc = s->n;
        s->v = NULL;
        s->n = s->cap = 0;
        s->st = ST_MEMBERS;
        return;
    }
    s->st = ST_WRITE;
    plan(j);
}

static void pump(struct job *j)
{
    struct shardjob *s = sj_of(j);
    if (s->st == ST_MAP) {
        int l = job_aborted(j) ? 0 : leads(j);
        if (l < 0)
            return;
        s->st = l ? ST_LIST : ST_OVER;
    }
    if (__atomic_load_n(&j->waiting, __ATOMIC_RELAXED) && !job_aborted(j))
        return;                  /* over job_max: job_ended of another job starts it */
    if (s->failed || job_aborted(j))
        for (int i = 0; i < SHARD_PAR; i++)
            if (s->w[i]) {
                struct swr *w = s->w[i];
                swr_failed(w, job_aborted(j) ? "aborted" : "the job failed");
                swr_over(w);     /* cancels what is under way, and pumps again */
                return;
            }
    if (!s->failed && !job_aborted(j) && s->st == ST_LIST) {
        if (list_over(s) && !s->pending)
            listed_all(j);
        else
            list_next(j);
    }
    if (!s->failed && !job_aborted(j) && s->st == ST_MEMBERS) {
        if (s->next_src >= s->nsrc && !s->pending) {
            s->st = ST_WRITE;
            plan(j);
        } else {
            members_next(j);
        }
    }
    int stop = s->failed || job_aborted(j);
    int busy = s->pending;
    for (int i = 0; i < SHARD_PAR; i++) {
        if (!stop && s->st == ST_WRITE && !s->w[i] && s->next_shard < s->plan.nshards)
            swr_start(j, i, s->next_shard++);
        busy |= s->w[i] != NULL;
    }
    stop = stop || s->st == ST_OVER || (s->st == ST_WRITE && s->next_shard >= s->plan.nshards);
    if (stop && !busy && !j->inflight && !j->end_ns) {
        s->st = ST_OVER;
        job_ended(j);
    }
}

/* ---- the kinds ------------------------------------------------------------------------- */

/* The selection of spec into s (the proxy checked its shape): 0, or -1
 * with err. */
static int selection_init(struct job *j, struct shardjob *s, json_t *spec, char *err,
                          size_t errlen)
{
    json_t *names = json_object_get(spec, "names");
    const char *tm = json_string_value(json_object_get(spec, "template"));
    const char *pre = json_string_value(json_object_get(spec, "prefix"));
    if (tm && tmpl_parse(&s->sel, tm, err, errlen))
        return -1;
    s->has_sel = tm != NULL;
    size_t i;
    json_t *v;
    s->nnames = json_array_size(names);
    s->names = s->nnames ? xcalloc(s->nnames, sizeof(*s->names)) : NULL;
    json_array_foreach(names, i, v)
        s->names[i] = xstrdup(json_string_value(v) ? json_string_value(v) : "");
    if (s->names)
        qsort(s->names, s->nnames, sizeof(*s->names), name_cmp);
    size_t pl = 0;               /* the names' common prefix */
    for (i = 0; s->nnames && s->names[0][pl]; pl++) {
        size_t k = 1;
        while (k < s->nnames && s->names[k][pl] == s->names[0][pl])
            k++;
        if (k < s->nnames)
            break;
    }
    s->prefix = tm ? xstrdup(tmpl_prefix(&s->sel)) : s->names ? xstrndup(s->names[0], pl)
                                                              : xstrdup(pre ? pre : "");
    struct backend b;
    if (backend_of(j->t, j->provider, j->bucket, &b)) {
        snprintf(err, errlen, "bucket %s/%s is not known here", j->provider, j->bucket);
        return -1;
    }
    int http = b.kind == BK_HTTP;
    s->remote = b.kind != BK_NONE;
    backend_free(&b);
    if (http) {
        snprintf(err, errlen, "bucket %s reads an HTTP origin, which cannot be listed: "
                              "copy it into a bucket first", j->bucket);
        return -1;
    }
    s->token = xstrdup("");
    return 0;
}

/* The output's options of spec into s: 0, or -1 with err. */
static int output_init(struct job *j, struct shardjob *s, json_t *spec, char *err,
                       size_t errlen)
{
    const char *to = json_string_value(json_object_get(spec, "to"));
    const char *tprov = json_string_value(json_object_get(spec, "to_provider"));
    const char *ot = json_string_value(json_object_get(spec, "output_template"));
    json_t *size = json_object_get(spec, "shard_size");
    json_t *shuffle = json_object_get(spec, "shuffle");
    json_t *seed = json_object_get(spec, "seed");
    snprintf(s->to_provider, sizeof(s->to_provider), "%s", tprov ? tprov : BMD_PROVIDER_SHOAL);
    snprintf(s->to, sizeof(s->to), "%s", to ? to : "");
    struct backend db;
    if (!to || backend_of(j->t, s->to_provider, to, &db)) {
        snprintf(err, errlen, "the destination bucket %s/%s is not known here", s->to_provider,
                 to ? to : "(none)");
        return -1;
    }
    int ro = db.kind == BK_HTTP;
    backend_free(&db);
    if (ro) {
        snprintf(err, errlen, "bucket %s reads a read-only HTTP origin", to);
        return -1;
    }
    if (!ot) {
        snprintf(err, errlen, "a sharding job names its shards: \"output_template\", e.g. "
                              "\"train-{000000..999999}.tar\"");
        return -1;
    }
    if (tmpl_parse(&s->out, ot, err, errlen))
        return -1;
    s->out_s = xstrdup(ot);
    char nm[OBJNAME_MAX + 2];    /* the first and last names: the longest is one of them */
    for (int k = 0; k < 2; k++) {
        int n = tmpl_name(&s->out, k ? s->out.count - 1 : 0, nm, sizeof(nm));
        if (n < 0 || objname_valid(nm, (size_t)n, err, errlen)) {
            if (n < 0)
                snprintf(err, errlen, "output_template: its names are too long");
            return -1;
        }
    }
    s->okind = archidx_kind_of(ot, strlen(ot));
    if (s->okind != ARCHIDX_TAR && s->okind != ARCHIDX_TGZ && s->okind != ARCHIDX_ZIP) {
        snprintf(err, errlen, "output_template ends in .tar, .tar.gz, .tgz or .zip");
        return -1;
    }
    if (size && (!json_is_integer(size) || json_integer_value(size) < 1)) {
        snprintf(err, errlen, "shard_size is a number of bytes");
        return -1;
    }
    s->shard_size = size ? (uint64_t)json_integer_value(size) : SHARD_SIZE_DEFAULT;
    if ((shuffle && !json_is_boolean(shuffle)) ||
        (seed && (!json_is_integer(seed) || json_integer_value(seed) < 0))) {
        snprintf(err, errlen, "shuffle is true or false, and seed a number >= 0");
        return -1;
    }
    s->shuffle = json_is_true(shuffle);
    /* no seed: one of the job's own, the same after a restart */
    s->seed = seed ? (uint64_t)json_integer_value(seed) : hrw_hash(j->id, strlen(j->id));
    s->want_map = json_integer_value(json_object_get(spec, "map_version"));
    return 0;
}

static void shard_free(struct job *j)
{
    struct shardjob *s = j->kd;
    if (!s)
        return;
    for (int i = 0; i < SHARD_PAR; i++)
        if (s->w[i])
            swr_drop(s->w[i]);   /* a target shutting down: the job ends once they are over */
    tmpl_free(&s->out);
    if (s->has_sel)
        tmpl_free(&s->sel);
    for (size_t i = 0; i < s->nnames; i++)
        free(s->names[i]);
    free(s->names);
    free(s->prefix);
    free(s->out_s);
    free(s->self);
    for (int i = 0; i < s->nl; i++) {
        free(s->lc[i].url);
        free(s->lc[i].after);
    }
    free(s->lc);
    free(s->token);
    items_free(s->v, s->n);
    items_free(s->src, s->nsrc);
    shardplan_free(&s->plan);
    free(s);
    j->kd = NULL;
}

static int init_kind(struct job *j, json_t *spec, int reshard, char *err, size_t errlen)
{
    struct shardjob *s = xcalloc(1, sizeof(*s));
    j->kd = s;
    s->reshard = reshard;
    if (output_init(j, s, spec, err, errlen) || selection_init(j, s, spec, err, errlen)) {
        shard_free(j);
        return -1;
    }
    return 0;
}

static int shard_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    return init_kind(j, spec, 0, err, errlen);
}

static int reshard_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    return init_kind(j, spec, 1, err, errlen);
}

static void shard_describe(const struct job *j, json_t *p)
{
    const struct shardjob *s = j->kd;
    if (!s)
        return;                  /* remembered from its record */
    json_object_set_new(p, "to", json_string(s->to));
    json_object_set_new(p, "output_template", json_string(s->out_s));
    size_t planned = __atomic_load_n(&s->planned, __ATOMIC_RELAXED);
    if (planned)
        json_object_set_new(p, "shards_planned", json_integer((json_int_t)planned));
}

const struct job_kind jobshard_shard = {
    .name = "shard",
    .init = shard_init,
    .pump = pump,
    .describe = shard_describe,
    .free = shard_free,
};

const struct job_kind jobshard_reshard = {
    .name = "reshard",
    .init = reshard_init,
    .pump = pump,
    .describe = shard_describe,
    .free = shard_free,
};
