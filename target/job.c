/*
 * job: a target's share of a batch job (see job.h).
 *
 * A job walks its selection by index (a template's names are made, never
 * held), keeps the names this target owns under the current cluster map,
 * and works on job_workers (config) of them at a time; it yields the loop after
 * JOB_BATCH names so that a long run of names owned elsewhere never holds
 * client requests up. The registry keeps running jobs and the last
 * JOB_KEEP ended ones.
 */
#include <event2/event.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bmd.h"
#include "cmap.h"
#include "fetch.h"
#include "http.h"
#include "httpbody.h"
#include "err.h"
#include "iopool.h"
#include "log.h"
#include "job.h"
#include "loopq.h"
#include "node.h"
#include "objname.h"
#include "s3list.h"
#include "store.h"
#include "target.h"
#include "tmpl.h"
#include "util.h"

#define JOB_BATCH 1000           /* names looked at per loop pass */
#define JOB_ERRS 5               /* failed names kept with their reasons */
#define JOB_KEEP 64              /* ended jobs remembered */
#define JOB_ID_MAX 64
#define JOB_KEY_MAX 256

struct job {
    struct job *next;            /* in the registry */
    char id[JOB_ID_MAX];
    char key[JOB_KEY_MAX];       /* the caller's idempotency key, "" for none */
    char provider[16];
    char bucket[64];
    struct target *t;
    struct backend b;
    struct hcli *cli;            /* the loop's backend client */
    struct loopq *q;             /* the loop */
    struct event *tick;          /* the next batch of names, from the loop (NULL: a record) */
    char *spec;                  /* as started (JSON), kept for a restart */
    json_t *names;               /* the selection: a list, */
    struct tmpl tm;              /* or a template */
    int has_tmpl;
    int listed;                  /* or the backend's listing (of prefix), */
    char *prefix;
    char *token;                 /* the next page's, "" before the first */
    struct s3list page;          /* the page being walked */
    int page_i;
    int listing;                 /* a page is on its way */
    int list_end;                /* the last page is in */
    int evict;                   /* the kind: evict, else prefetch */
    uint64_t pos, total;         /* the next index, and the selection's size */
    int inflight;
    int aborted;                 /* set by any worker, read atomically */
    /* progress, under jobs_mu */
    uint64_t owned, present, fetched, evicted, bytes, errors;
    char errs[JOB_ERRS][320];
    int nerrs;
    uint64_t start_ns, end_ns;
};

static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct job *jobs;

static void job_free(struct job *j)
{
    if (j->tick)
        event_free(j->tick);
    free(j->spec);
    backend_free(&j->b);
    json_decref(j->names);
    if (j->has_tmpl)
        tmpl_free(&j->tm);
    s3list_free(&j->page);
    free(j->prefix);
    free(j->token);
    free(j);
}

static void free_on_loop(void *arg)
{
    job_free(arg);
}

struct forget {
    struct target *t;
    char key[JOB_ID_MAX + 1];
};

/* On the I/O pool: the record of a job dropped from the registry. */
static void forget_work(void *arg)
{
    struct forget *f = arg;
    struct store *st = &f->t->store;
    store_kv_del(st, &st->mp[0], f->key, strlen(f->key));
    free(f);
}

/* Drop the oldest ended jobs past JOB_KEEP from the registry; with
 * jobs_mu held. Each is freed on its own loop, after anything already
 * posted to it. */
static void prune(void)
{
    int ended = 0;
    for (struct job **pp = &jobs; *pp;) {
        struct job *j = *pp;
        if (j->end_ns && ++ended > JOB_KEEP) {
            *pp = j->next;
            struct forget *f = xcalloc(1, sizeof(*f));
            f->t = j->t;
            snprintf(f->key, sizeof(f->key), "j%s", j->id);
            iopool_submit(j->t->io, NULL, forget_work, NULL, f);
            loopq_post(j->q, free_on_loop, j);
        } else {
            pp = &j->next;
        }
    }
}

static struct job *find(const char *id, size_t n)
{
    for (struct job *j = jobs; j; j = j->next)
        if (strlen(j->id) == n && !memcmp(j->id, id, n))
            return j;
    return NULL;
}

/* ---- running ------------------------------------------------------------------ */

struct item {
    struct job *j;
    char *name;
    char *mkey;
    size_t klen;
    uint64_t size;               /* evict: the copy's */
    int rc;                      /* evict: store_delete's */
};

static void item_free(struct item *it)
{
    free(it->name);
    free(it->mkey);
    free(it);
}

/* evict, on the I/O pool: the drives and RocksDB block */
static void drop_work(void *arg)
{
    struct item *it = arg;
    struct store *st = &it->j->t->store;
    it->rc = store_delete(st, store_pick(st, it->mkey, it->klen), it->mkey, it->klen);
}

static void pump(struct job *j);
static void save(struct job *j, struct http_req *r, void (*done)(void *));
static void saved_free(void *arg);

static void dropped(void *arg)
{
    struct item *it = arg;
    struct job *j = it->j;
    if (it->rc == 0) {
        pthread_mutex_lock(&jobs_mu);
        j->evicted++;
        j->bytes += it->size;
        pthread_mutex_unlock(&jobs_mu);
    }
    /* a copy gone meanwhile (deleted, evicted by another job) is not an error */
    item_free(it);
    j->inflight--;
    pump(j);
}

static void note_error(struct job *j, const char *name, const char *why)
{
    pthread_mutex_lock(&jobs_mu);
    j->errors++;
    if (j->nerrs < JOB_ERRS)
        snprintf(j->errs[j->nerrs++], sizeof(j->errs[0]), "%.200s\n%.100s", name, why);
    pthread_mutex_unlock(&jobs_mu);
}

static void item_done(void *arg, const struct fetch_result *res)
{
    struct item *it = arg;
    struct job *j = it->j;
    if (res->status == 0) {
        struct ometa m;
        int got = store_get(&j->t->store, store_pick(&j->t->store, it->mkey, it->klen), it->mkey,
                            it->klen, &m) == 0;
        pthread_mutex_lock(&jobs_mu);
        j->fetched++;
        j->bytes += got ? m.size : 0;
        pthread_mutex_unlock(&jobs_mu);
    } else {
        note_error(j, it->name, res->msg[0] ? res->msg : "fetch failed");
    }
    item_free(it);
    j->inflight--;
    pump(j);
}

#define NAME_END (-2)             /* the selection is walked */
#define NAME_WAIT (-3)            /* the next page of the listing is on its way */

/* list_end is read by other workers (progress) under jobs_mu. */
static void set_list_end(struct job *j, int end)
{
    pthread_mutex_lock(&jobs_mu);
    j->list_end = end;
    pthread_mutex_unlock(&jobs_mu);
}

static void page_in(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct job *j = arg;
    char err[300];
    s3list_free(&j->page);
    memset(&j->page, 0, sizeof(j->page));
    j->page_i = 0;
    j->listing = 0;
    j->inflight--;
    if (o->status != 200) {
        backend_status(&j->b, o, err, sizeof(err));
        note_error(j, j->prefix[0] ? j->prefix : "(the listing)", err);
        set_list_end(j, 1);
    } else if (s3list_parse(body, len, &j->page, err, sizeof(err))) {
        note_error(j, j->prefix[0] ? j->prefix : "(the listing)", err);
        set_list_end(j, 1);
    } else {
        const char *next = j->page.truncated && j->page.next_token ? j->page.next_token : "";
        free(j->token);
        j->token = xstrdup(next);
        set_list_end(j, !next[0]);
    }
    pump(j);
}

/* The next name from the backend's listing, a page at a time. */
static int listed_name(struct job *j, char *buf, size_t len)
{
    if (j->page_i < j->page.n) {
        const char *k = j->page.objs[j->page_i++].key;
        size_t n = strlen(k);
        if (n >= len)
            return -1;
        memcpy(buf, k, n + 1);
        return (int)n;
    }
    if (j->list_end)
        return NAME_END;
    if (!j->listing) {
        j->listing = 1;
        j->inflight++;           /* the job ends only once the page is in */
        backend_list(j->cli, &j->b, j->prefix, j->token, 1000, page_in, j);
    }
    return NAME_WAIT;
}

/* The next selected name into buf: its length, -1 when it is too long,
 * NAME_END or NAME_WAIT. */
static int next_name(struct job *j, char *buf, size_t len)
{
    if (j->listed) {
        int n = listed_name(j, buf, len);
        if (n != NAME_WAIT && n != NAME_END)
            __atomic_fetch_add(&j->pos, 1, __ATOMIC_RELAXED);
        if (n == NAME_END) {     /* the size is known once the listing ends */
            pthread_mutex_lock(&jobs_mu);
            j->total = j->pos;
            pthread_mutex_unlock(&jobs_mu);
        }
        return n;
    }
    if (j->pos >= j->total)
        return NAME_END;
    uint64_t i = __atomic_fetch_add(&j->pos, 1, __ATOMIC_RELAXED);
    if (j->has_tmpl)
        return tmpl_name(&j->tm, i, buf, len);
    const char *s = json_string_value(json_array_get(j->names, i));
    size_t n = s ? strlen(s) : 0;
    if (!s || n >= len)
        return -1;
    memcpy(buf, s, n + 1);
    return (int)n;
}

/* Start work on name, when this target owns it and does not hold it. */
static void consider(struct job *j, const struct cmap *m, const char *name, size_t n)
{
    size_t kl;
    char *hkey = node_obj_key(j->provider, j->bucket, name, &kl);
    const struct cmap_node *owner = m ? cmap_owner(m, hkey, kl) : NULL;
    free(hkey);
    if (!owner || strcmp(owner->id, j->t->node.id))
        return;
    struct item *it = xcalloc(1, sizeof(*it));
    it->j = j;
    it->name = xstrndup(name, n);
    it->mkey = store_mkey(j->provider, j->bucket, name, n, &it->klen);
    struct ometa held;
    int present = store_get(&j->t->store, store_pick(&j->t->store, it->mkey, it->klen), it->mkey,
                            it->klen, &held) == 0;
    pthread_mutex_lock(&jobs_mu);
    j->owned++;
    j->present += present;
    pthread_mutex_unlock(&jobs_mu);
    if (j->evict && present) {
        it->size = held.size;
        j->inflight++;
        iopool_submit(j->t->io, j->q, drop_work, dropped, it);
        return;
    }
    if (present || j->evict) {   /* nothing to do for this one */
        item_free(it);
        return;
    }
    struct fetch_req fr = {j->t, j->cli, j->q, &j->b, it->name, it->mkey, it->klen};
    j->inflight++;
    fetch_get(&fr, NULL, NULL, item_done, it);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pump(arg);
}

/* Take names while there is room; end the job when all are done. */
static void pump(struct job *j)
{
    char name[OBJNAME_MAX + 1];
    struct cmap *m = cmap_current();
    int looked = 0, n = 0;
    while (!__atomic_load_n(&j->aborted, __ATOMIC_RELAXED) &&
           j->inflight < j->t->conf.job_workers) {
        if (++looked > JOB_BATCH) {
            event_active(j->tick, EV_TIMEOUT, 0);   /* the rest after other work */
            cmap_unref(m);
            return;
        }
        n = next_name(j, name, sizeof(name));
        if (n == NAME_END || n == NAME_WAIT)
            break;
        char err[256];
        if (n < 0 || objname_valid(name, (size_t)n, err, sizeof(err)))
            note_error(j, n < 0 ? "(too long)" : name, n < 0 ? "name too long" : err);
        else
            consider(j, m, name, (size_t)n);
    }
    cmap_unref(m);
    int over = n == NAME_END || (!j->listed && j->pos >= j->total) ||
               __atomic_load_n(&j->aborted, __ATOMIC_RELAXED);
    if (over && j->inflight == 0 && !j->end_ns) {
        pthread_mutex_lock(&jobs_mu);
        j->end_ns = wall_ns();
        pthread_mutex_unlock(&jobs_mu);
        save(j, NULL, saved_free);  /* a copy of what is needed: j may go first */
    }
}

/* ---- the internal API ---------------------------------------------------------- */

/* A job from its JSON spec, for r's loop; NULL with err set. */
static struct job *job_new(struct target *t, struct http_worker *w, json_t *spec, char *err,
                           size_t errlen)
{
    const char *id = json_string_value(json_object_get(spec, "id"));
    const char *kind = json_string_value(json_object_get(spec, "kind"));
    const char *prov = json_string_value(json_object_get(spec, "provider"));
    const char *bucket = json_string_value(json_object_get(spec, "bucket"));
    json_t *names = json_object_get(spec, "names");
    const char *tmpl = json_string_value(json_object_get(spec, "template"));
    const char *prefix = json_string_value(json_object_get(spec, "prefix"));
    if (!id || !id[0] || strlen(id) >= JOB_ID_MAX || !kind || !bucket || !prov) {
        snprintf(err, errlen, "a job needs id, kind, provider and bucket");
        return NULL;
    }
    if (strcmp(kind, "prefetch") && strcmp(kind, "evict")) {
        snprintf(err, errlen, "kind '%s' is not one a target runs", kind);
        return NULL;
    }
    struct bmd *bm = bmd_current();
    const struct bmd_bucket *bk = bmd_find(bm, prov, bucket);
    struct job *j = xcalloc(1, sizeof(*j));
    if (bk)
        backend_resolve(t, bk, &j->b);
    bmd_unref(bm);
    if (!bk || j->b.kind == BK_NONE) {
        snprintf(err, errlen, "bucket %s/%s %s", prov, bucket,
                 bk ? "has no backend: Shoal's copy is the only one" : "is not known here");
        job_free(j);
        return NULL;
    }
    if (tmpl && tmpl_parse(&j->tm, tmpl, err, errlen) == 0) {
        j->has_tmpl = 1;
        j->total = j->tm.count;
    } else if (!tmpl && json_is_array(names)) {
        j->names = json_incref(names);
        j->total = json_array_size(names);
    } else if (!tmpl && !names && j->b.kind == BK_S3) {
        j->listed = 1;           /* a prefix, or the whole bucket */
        j->prefix = xstrdup(prefix ? prefix : "");
        j->token = xstrdup("");
    } else {
        if (!tmpl)
            snprintf(err, errlen, "%s", !names && j->b.kind != BK_S3
                                            ? "this bucket's backend cannot be listed: select "
                                              "its objects by names or a template"
                                            : "a job selects its objects with names, a template "
                                              "or a prefix");
        job_free(j);
        return NULL;
    }
    snprintf(j->id, sizeof(j->id), "%s", id);
    const char *key = json_string_value(json_object_get(spec, "key"));
    snprintf(j->key, sizeof(j->key), "%s", key ? key : "");
    j->evict = !strcmp(kind, "evict");
    snprintf(j->provider, sizeof(j->provider), "%s", prov);
    snprintf(j->bucket, sizeof(j->bucket), "%s", bucket);
    j->t = t;
    j->cli = ((struct target_worker *)w->local)->cli;
    j->q = w->q;
    j->tick = event_new(w->base, -1, 0, tick, j);
    j->spec = json_dumps(spec, JSON_COMPACT);
    j->start_ns = wall_ns();
    return j;
}

/* ---- kept across restarts ------------------------------------------------------- */

/* A job's record, "j" + id in the first mountpath's store: its spec, and
 * once it ended its progress. A target that restarts runs the jobs that
 * had not ended again (what it holds already counts as present) and
 * remembers the ended ones. */
struct saved {
    struct target *t;
    char *key;
    char *val;
    int rc;
    struct http_req *r;          /* answered once the record is written, or NULL */
    struct job *j;
};

static json_t *progress(const struct job *j);

static void save_work(void *arg)
{
    struct saved *sv = arg;
    struct store *st = &sv->t->store;
    sv->rc = store_kv_put(st, &st->mp[0], sv->key, strlen(sv->key), sv->val, strlen(sv->val));
}

/* Write j's record (with its progress once it ended); done, if any, runs
 * on j's loop after. */
static void save(struct job *j, struct http_req *r, void (*done)(void *))
{
    struct saved *sv = xcalloc(1, sizeof(*sv));
    sv->t = j->t;
    sv->key = xasprintf("j%s", j->id);
    json_t *rec = json_pack("{s:s}", "spec", j->spec);
    if (j->end_ns) {
        pthread_mutex_lock(&jobs_mu);
        json_object_set_new(rec, "progress", progress(j));
        pthread_mutex_unlock(&jobs_mu);
    }
    sv->val = json_dumps(rec, JSON_COMPACT);
    json_decref(rec);
    sv->r = r;
    sv->j = j;
    iopool_submit(j->t->io, j->q, save_work, done, sv);
}

static void saved_free(void *arg)
{
    struct saved *sv = arg;
    if (sv->rc)
        log_warn("job %s: its record could not be written: %s", sv->key + 1, strerror(-sv->rc));
    free(sv->key);
    free(sv->val);
    free(sv);
}

static void started_saved(void *arg)
{
    struct saved *sv = arg;
    struct job *j = sv->j;
    if (sv->rc) {                /* not kept: not started (a retry starts it anew) */
        __atomic_store_n(&j->aborted, 1, __ATOMIC_RELAXED);
        http_reply_error(sv->r, err_status(sv->rc), "the job could not be recorded: %s",
                         strerror(-sv->rc));
    } else {
        http_reply_json(sv->r, 201, json_pack("{s:s}", "id", j->id));
    }
    http_req_unref(sv->r);
    j->inflight--;
    event_active(j->tick, EV_TIMEOUT, 0);   /* ends at once when aborted */
    saved_free(sv);
}

static void start_body(struct http_req *r, json_t *spec)
{
    struct target *t = r->w->ctx;
    char err[300];
    struct job *j = job_new(t, r->w, spec, err, sizeof(err));
    json_decref(spec);
    if (!j) {
        http_reply_error(r, 400, "%s", err);
        return;
    }
    pthread_mutex_lock(&jobs_mu);
    struct job *old = find(j->id, strlen(j->id));
    if (!old) {
        j->next = jobs;
        jobs = j;
        prune();
    }
    pthread_mutex_unlock(&jobs_mu);
    if (old) {                   /* the proxy asked twice: one job (the same id) */
        http_reply_json(r, 200, json_pack("{s:s}", "id", j->id));
        job_free(j);
        return;
    }
    http_req_ref(r);
    j->inflight++;               /* the job cannot end (or go) before its record is in */
    save(j, r, started_saved);   /* acknowledged once it would survive a restart */
}

void job_start(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    node_read_json(r, start_body);
}

static json_t *progress(const struct job *j)
{
    const char *state = !j->end_ns                                      ? "running"
                        : __atomic_load_n(&j->aborted, __ATOMIC_RELAXED) ? "aborted"
                                                                          : "finished";
    json_t *errs = json_array();
    for (int i = 0; i < j->nerrs; i++) {
        const char *nl = strchr(j->errs[i], '\n');
        json_array_append_new(errs, json_pack("{s:s%, s:s}", "name", j->errs[i],
                                              (size_t)(nl - j->errs[i]), "reason", nl + 1));
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, "
                     "s:I, s:I}",
                     "id", j->id, "kind", j->evict ? "evict" : "prefetch", "state", state,
                     "provider", j->provider, "bucket", j->bucket,
                     "selected", (json_int_t)(j->listed && !j->list_end ? 0 : j->total),
                     "looked", (json_int_t)__atomic_load_n(&j->pos, __ATOMIC_RELAXED),
                     "owned", (json_int_t)j->owned, "present", (json_int_t)j->present,
                     "fetched", (json_int_t)j->fetched, "evicted", (json_int_t)j->evicted,
                     "bytes", (json_int_t)j->bytes,
                     "errors", (json_int_t)j->errors, "error_names", errs,
                     "start_ns", (json_int_t)j->start_ns, "end_ns", (json_int_t)j->end_ns);
}

/* GET /v1/internal/jobs[?key=K]: the jobs this target knows (running and
 * the last ended ones), so that a proxy can rebuild its list. */
void job_list(struct http_req *r, const char *rest, size_t rlen)
{
    char key[JOB_KEY_MAX];
    (void)rest;
    (void)rlen;
    int kn = http_query_get(r, "key", key, sizeof(key));
    if (kn == -2 || kn == 0) {
        http_reply_error(r, 400, "a job key is 1..%d bytes", JOB_KEY_MAX - 1);
        return;
    }
    json_t *arr = json_array();
    pthread_mutex_lock(&jobs_mu);
    for (struct job *j = jobs; j; j = j->next) {
        if (kn >= 0 && strcmp(key, j->key))
            continue;
        json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "id", j->id, "kind",
                              j->evict ? "evict" : "prefetch", "provider", j->provider, "bucket",
                              j->bucket, "start_ns", (json_int_t)j->start_ns, "state",
                              !j->end_ns                                        ? "running"
                              : __atomic_load_n(&j->aborted, __ATOMIC_RELAXED) ? "aborted"
                                                                                : "finished");
        if (j->key[0])
            json_object_set_new(e, "key", json_string(j->key));
        json_array_append_new(arr, e);
    }
    pthread_mutex_unlock(&jobs_mu);
    http_reply_json(r, 200, json_pack("{s:o}", "jobs", arr));
}

void job_show(struct http_req *r, const char *rest, size_t rlen)
{
    pthread_mutex_lock(&jobs_mu);
    struct job *j = find(rest, rlen);
    json_t *p = j ? progress(j) : NULL;
    pthread_mutex_unlock(&jobs_mu);
    if (!p)
        http_reply_error(r, 404, "no job %.*s here", (int)(rlen > 64 ? 64 : rlen), rest);
    else
        http_reply_json(r, 200, p);
}

/* On the job's loop: stop taking names; the job ends once what is in
 * flight is done. */
static void abort_on_loop(void *arg)
{
    pump(arg);
}

void job_abort(struct http_req *r, const char *rest, size_t rlen)
{
    pthread_mutex_lock(&jobs_mu);
    struct job *j = find(rest, rlen);
    if (j && !j->end_ns) {
        __atomic_store_n(&j->aborted, 1, __ATOMIC_RELAXED);
        loopq_post(j->q, abort_on_loop, j);     /* before any free of it (prune) */
    }
    pthread_mutex_unlock(&jobs_mu);
    if (!j)
        http_reply_error(r, 404, "no job %.*s here", (int)(rlen > 64 ? 64 : rlen), rest);
    else
        http_reply(r, 204, NULL, NULL, 0);
}

/* ---- after a restart ------------------------------------------------------------ */

struct resume {
    struct target *t;
    struct http_worker *w;
    json_t *spec;                /* until the job is made */
    char id[JOB_ID_MAX];
};

static void add_unless_known(struct job *j)
{
    pthread_mutex_lock(&jobs_mu);
    int known = find(j->id, strlen(j->id)) != NULL;
    if (!known) {
        j->next = jobs;
        jobs = j;
    }
    pthread_mutex_unlock(&jobs_mu);
    if (known)
        job_free(j);
}

static void resume_on_loop(void *arg);

static void resume_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    resume_on_loop(arg);
}

/* On the worker's loop: the job is known at once (it answers for its
 * progress), and runs again once this target is in a cluster map
 * (ownership needs it; asked every half second until then). */
static void resume_on_loop(void *arg)
{
    struct resume *rs = arg;
    if (rs->spec) {
        char err[300];
        struct job *j = job_new(rs->t, rs->w, rs->spec, err, sizeof(err));
        json_decref(rs->spec);
        rs->spec = NULL;
        if (!j) {
            log_warn("a job kept across the restart cannot run again: %s", err);
            free(rs);
            return;
        }
        snprintf(rs->id, sizeof(rs->id), "%s", j->id);
        add_unless_known(j);
    }
    struct cmap *m = cmap_current();
    int placed = m && cmap_find(m, rs->t->node.id);
    cmap_unref(m);
    if (!placed) {
        struct timeval later = {0, 500000};
        event_base_once(rs->w->base, -1, EV_TIMEOUT, resume_later, rs, &later);
        return;
    }
    pthread_mutex_lock(&jobs_mu);
    struct job *j = find(rs->id, strlen(rs->id));
    pthread_mutex_unlock(&jobs_mu);
    if (j && j->q == rs->w->q && !j->end_ns) {
        log_info("job %s runs again after the restart", j->id);
        event_active(j->tick, EV_TIMEOUT, 0);
    }
    free(rs);
}

static struct target *base_target(struct http_worker *w)
{
    return w->ctx;
}

/* An ended job, remembered from its record. */
static void remember(struct http_worker *w, json_t *spec, json_t *p)
{
    struct job *j = xcalloc(1, sizeof(*j));
    const char *s;
    snprintf(j->id, sizeof(j->id), "%s", (s = json_string_value(json_object_get(spec, "id")))
                                              ? s : "");
    snprintf(j->key, sizeof(j->key), "%s",
             (s = json_string_value(json_object_get(spec, "key"))) ? s : "");
    snprintf(j->provider, sizeof(j->provider), "%s",
             (s = json_string_value(json_object_get(p, "provider"))) ? s : "");
    snprintf(j->bucket, sizeof(j->bucket), "%s",
             (s = json_string_value(json_object_get(p, "bucket"))) ? s : "");
    s = json_string_value(json_object_get(p, "kind"));
    j->evict = s && !strcmp(s, "evict");
    s = json_string_value(json_object_get(p, "state"));
    j->aborted = s && !strcmp(s, "aborted");
#define NUM(f) ((uint64_t)json_integer_value(json_object_get(p, f)))
    j->total = NUM("selected");
    j->pos = NUM("looked");
    j->owned = NUM("owned");
    j->present = NUM("present");
    j->fetched = NUM("fetched");
    j->evicted = NUM("evicted");
    j->bytes = NUM("bytes");
    j->errors = NUM("errors");
    j->start_ns = NUM("start_ns");
    j->end_ns = NUM("end_ns") ? NUM("end_ns") : 1;
#undef NUM
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(p, "error_names"), i, e) {
        if (j->nerrs == JOB_ERRS)
            break;
        const char *n = json_string_value(json_object_get(e, "name"));
        const char *why = json_string_value(json_object_get(e, "reason"));
        snprintf(j->errs[j->nerrs++], sizeof(j->errs[0]), "%.200s\n%.100s", n ? n : "",
                 why ? why : "");
    }
    j->q = w->q;                 /* prune frees it there */
    j->t = base_target(w);
    add_unless_known(j);
}

static int resume_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct resume *base = arg;
    json_t *rec = json_loadb(v, vl, 0, NULL);
    const char *ss = json_string_value(json_object_get(rec, "spec"));
    json_t *spec = ss ? json_loads(ss, 0, NULL) : NULL;
    json_t *p = json_object_get(rec, "progress");
    if (!spec) {
        log_warn("job record %.*s is unreadable; skipped", (int)kl, k);
    } else if (p) {
        remember(base->w, spec, p);
        json_decref(spec);
    } else {
        struct resume *rs = xcalloc(1, sizeof(*rs));
        *rs = *base;
        rs->spec = spec;
        loopq_post(base->w->q, resume_on_loop, rs);
    }
    json_decref(rec);
    return 0;
}

void job_resume(struct target *t, struct http_worker *w)
{
    struct resume base = {t, w, NULL, ""};
    store_kv_scan(&t->store, &t->store.mp[0], "j", 1, resume_one, &base);
    pthread_mutex_lock(&jobs_mu);
    prune();                     /* the records of more ended jobs than are kept */
    pthread_mutex_unlock(&jobs_mu);
}
