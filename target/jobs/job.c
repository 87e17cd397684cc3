/*
 * job: a target's share of a batch job (see job.h): the registry, the
 * internal API and the records kept across restarts; the work itself is
 * in jobrun.c and jobcopy.c (jobint.h).
 *
 * The registry keeps running jobs and, for job_ttl_s (config), at most
 * JOB_KEEP ended ones. At most job_max (config) jobs run at once on a
 * target; the ones started beyond wait, in order, and begin as others end.
 */
#include <event2/event.h>
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bmd.h"
#include "cmap.h"
#include "http.h"
#include "httpbody.h"
#include "err.h"
#include "iopool.h"
#include "log.h"
#include "job.h"
#include "jobint.h"
#include "loopq.h"
#include "node.h"
#include "pin.h"
#include "store.h"
#include "target.h"
#include "tmet.h"
#include "util.h"

#define JOB_KEEP 64              /* ended jobs remembered */
#define JOB_KEEP_LRU 8           /* and ended eviction rounds */

pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct job *jobs;

static const char *const kind_names[] = {"prefetch", "evict", "copy", "download", "lru",
                                         "flush", "rebalance", "resilver", "scrub",
                                         "ec-encode"};

const char *job_kind_name(enum job_kind k)
{
    return kind_names[k];
}

int job_kind_parse(const char *s)
{
    for (int k = 0; k < (int)(sizeof(kind_names) / sizeof(kind_names[0])); k++)
        if (s && !strcmp(s, kind_names[k]))
            return k;
    return -1;
}

void job_note_error(struct job *j, const char *name, const char *why)
{
    pthread_mutex_lock(&jobs_mu);
    j->errors++;
    if (j->nerrs < JOB_ERRS)
        snprintf(j->errs[j->nerrs++], sizeof(j->errs[0]), "%.200s\n%.100s", name, why);
    pthread_mutex_unlock(&jobs_mu);
    tmet_job_add(kind_names[j->kind], "errors", 1, 0);
}

/* The name of one of j's counters, for the metrics. */
static const char *counter_name(const struct job *j, const uint64_t *c)
{
    return c == &j->owned        ? "owned"
           : c == &j->present    ? "present"
           : c == &j->fetched    ? "fetched"
           : c == &j->evicted    ? "evicted"
           : c == &j->copied     ? "copied"
           : c == &j->downloaded ? "downloaded"
           : c == &j->moved      ? "moved"
           : c == &j->found      ? "found"
           : c == &j->fixed      ? "fixed"
           : c == &j->lost       ? "lost"
           : c == &j->errors     ? "errors"
           : c == &j->done       ? "done"
                                 : "other";
}

void job_add(struct job *j, uint64_t *counter, uint64_t n, uint64_t b)
{
    pthread_mutex_lock(&jobs_mu);
    *counter += n;
    j->bytes += b;
    pthread_mutex_unlock(&jobs_mu);
    tmet_job_add(kind_names[j->kind], counter_name(j, counter), n, b);
}

static void job_free(struct job *j)
{
    if (j->tick)
        event_free(j->tick);
    cmap_unref(j->map);
    free(j->spec);
    free(j->pin);
    backend_free(&j->b);
    json_decref(j->names);
    json_decref(j->dnames);
    if (j->has_tmpl)
        tmpl_free(&j->tm);
    s3list_free(&j->page);
    for (int i = 0; i < j->ln; i++)
        free(j->lnames[i]);
    free(j->lnames);
    free(j->prefix);
    free(j->token);
    free(j->prepend);
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

/* Drop ended jobs older than job_ttl_s, and the oldest past JOB_KEEP,
 * from the registry; with jobs_mu held. Each is freed on its own loop,
 * after anything already posted to it. */
static void prune(void)
{
    int ended = 0;
    uint64_t now = wall_ns();
    int lru_ended = 0;           /* a target's own rounds: a few, apart from the others */
    for (struct job **pp = &jobs; *pp;) {
        struct job *j = *pp;
        uint64_t ttl = (uint64_t)j->t->conf.job_ttl_s * 1000000000u;
        int own = j->kind == JK_LRU || j->kind == JK_REBALANCE || j->kind == JK_RESILVER;
        int over = j->end_ns && (own ? ++lru_ended > JOB_KEEP_LRU : ++ended > JOB_KEEP);
        if (j->end_ns && (over || j->end_ns + ttl < now)) {
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

/* Add j to the registry, waiting when job_max jobs run already; with
 * jobs_mu held. */
static void registry_add(struct job *j)
{
    int running = 0;             /* batch jobs: a target's own (lru, rebalance) do not count */
    for (struct job *o = jobs; o; o = o->next)
        running += o->tick && !o->end_ns && !__atomic_load_n(&o->waiting, __ATOMIC_RELAXED);
    if (j->tick && running >= j->t->conf.job_max)
        __atomic_store_n(&j->waiting, 1, __ATOMIC_RELAXED);
    if (!j->end_ns)
        tmet_job_running(kind_names[j->kind], 1);
    j->next = jobs;
    jobs = j;
}

static void tick_on_loop(void *arg)
{
    struct job *j = arg;
    event_active(j->tick, EV_TIMEOUT, 0);
}

static void save(struct job *j, struct http_req *r, void (*done)(void *));
static void saved_free(void *arg);

void job_ended(struct job *j)
{
    pthread_mutex_lock(&jobs_mu);
    j->end_ns = wall_ns();
    tmet_job_running(kind_names[j->kind], -1);
    struct job *next = NULL;     /* the oldest waiting one begins (a batch job's place) */
    for (struct job *o = jobs; j->tick && o; o = o->next)
        if (!o->end_ns && __atomic_load_n(&o->waiting, __ATOMIC_RELAXED))
            next = o;
    if (next) {
        __atomic_store_n(&next->waiting, 0, __ATOMIC_RELAXED);
        loopq_post(next->q, tick_on_loop, next);
    }
    pthread_mutex_unlock(&jobs_mu);
    save(j, NULL, saved_free);   /* a copy of what is needed: j may go first */
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    job_pump(arg);
}

/* ---- the internal API ---------------------------------------------------------- */

/* j's selection from spec: 0, or -1 with err set. */
static int job_select(struct job *j, json_t *spec, char *err, size_t errlen)
{
    json_t *names = json_object_get(spec, j->kind == JK_DOWNLOAD ? "urls" : "names");
    const char *tmpl = json_string_value(json_object_get(spec, "template"));
    const char *prefix = json_string_value(json_object_get(spec, "prefix"));
    if (tmpl) {
        if (tmpl_parse(&j->tm, tmpl, err, errlen))
            return -1;
        j->has_tmpl = 1;
        j->total = j->tm.count;
        return 0;
    }
    if (json_is_array(names)) {
        j->names = json_incref(names);
        j->total = json_array_size(names);
        json_t *dn = json_object_get(spec, "names");
        if (j->kind == JK_DOWNLOAD && json_is_array(dn))
            j->dnames = json_incref(dn);
        return 0;
    }
    if (j->kind == JK_DOWNLOAD) {
        snprintf(err, errlen, "a download names its \"urls\" or a URL \"template\"");
        return -1;
    }
    if (j->b.kind == BK_HTTP) {
        snprintf(err, errlen, "this bucket's backend cannot be listed: select its objects by "
                              "names or a template");
        return -1;
    }
    /* a prefix, or the whole bucket: the backend's listing, or the drives' */
    j->listed = j->b.kind == BK_S3 ? JL_BACKEND : JL_LOCAL;
    j->prefix = xstrdup(prefix ? prefix : "");
    j->token = xstrdup("");
    return 0;
}

/* The kind's own fields of spec, checked against the buckets: 0, or -1
 * with err set. */
static int job_options(struct target *t, struct job *j, json_t *spec, const struct bmd *bm,
                       char *err, size_t errlen)
{
    const char *to = json_string_value(json_object_get(spec, "to"));
    const char *tprov = json_string_value(json_object_get(spec, "to_provider"));
    const char *prepend = json_string_value(json_object_get(spec, "prepend"));
    j->latest = json_is_true(json_object_get(spec, "latest"));
    j->dry_run = json_is_true(json_object_get(spec, "dry_run"));
    j->prepend = xstrdup(prepend ? prepend : "");
    if ((j->kind == JK_PREFETCH || j->kind == JK_EVICT) && j->b.kind == BK_NONE) {
        snprintf(err, errlen, "bucket %s/%s has no backend: Shoal's copy is the only one",
                 j->provider, j->bucket);
        return -1;
    }
    if (j->kind == JK_DOWNLOAD) {
        j->to_backed = j->b.kind == BK_S3;
        if (j->b.kind == BK_HTTP) {
            snprintf(err, errlen, "bucket %s reads a read-only HTTP origin", j->bucket);
            return -1;
        }
    }
    if (j->kind == JK_FLUSH && !j->b.write_back) {
        snprintf(err, errlen, "bucket %s does not write back: nothing to flush", j->bucket);
        return -1;
    }
    if (j->kind != JK_COPY)
        return 0;
    snprintf(j->to_provider, sizeof(j->to_provider), "%s", tprov ? tprov : BMD_PROVIDER_SHOAL);
    snprintf(j->to, sizeof(j->to), "%s", to ? to : "");
    const struct bmd_bucket *dst = to ? bmd_find(bm, j->to_provider, to) : NULL;
    if (!dst) {
        snprintf(err, errlen, "the destination bucket %s/%s is not known here", j->to_provider,
                 to ? to : "(none)");
        return -1;
    }
    struct backend db;
    backend_resolve(t, dst, &db);
    int ro = db.kind == BK_HTTP;
    backend_free(&db);
    if (ro) {
        snprintf(err, errlen, "bucket %s reads a read-only HTTP origin", to);
        return -1;
    }
    return 0;
}

/* A job from its JSON spec, for w's loop; NULL with err set. */
static struct job *job_new(struct target *t, struct http_worker *w, json_t *spec, char *err,
                           size_t errlen)
{
    const char *id = json_string_value(json_object_get(spec, "id"));
    const char *prov = json_string_value(json_object_get(spec, "provider"));
    const char *bucket = json_string_value(json_object_get(spec, "bucket"));
    int kind = job_kind_parse(json_string_value(json_object_get(spec, "kind")));
    if (!id || !id[0] || strlen(id) >= JOB_ID_MAX || kind < 0 || kind == JK_LRU ||
        kind == JK_REBALANCE || kind == JK_RESILVER || !bucket || !prov) {
        snprintf(err, errlen, "a job needs id, kind (prefetch, evict, copy, download, flush, "
                              "scrub, ec-encode), provider and bucket");
        return NULL;
    }
    struct bmd *bm = bmd_current();
    const struct bmd_bucket *bk = bmd_find(bm, prov, bucket);
    struct job *j = xcalloc(1, sizeof(*j));
    j->kind = (enum job_kind)kind;
    snprintf(j->provider, sizeof(j->provider), "%s", prov);
    snprintf(j->bucket, sizeof(j->bucket), "%s", bucket);
    int every = kind == JK_SCRUB && !bucket[0];   /* a scrub of every bucket */
    if (bk)
        backend_resolve(t, bk, &j->b);
    else if (!every)
        snprintf(err, errlen, "bucket %s/%s is not known here", prov, bucket);
    struct bmd_ec ec;
    if (bk && kind == JK_ECENCODE && !bmd_ec(bk, &ec) && bmd_copies(bk) == 1) {
        snprintf(err, errlen, "bucket %s is neither erasure coded nor mirrored", bucket);
        bk = NULL;
    }
    if (kind == JK_SCRUB || kind == JK_ECENCODE) {   /* they walk the drives (scrub.c) */
        const char *prefix = json_string_value(json_object_get(spec, "prefix"));
        j->prefix = xstrdup(prefix ? prefix : "");
    }
    int bad = (!bk && !every) || job_options(t, j, spec, bm, err, errlen) ||
              (j->kind != JK_FLUSH && j->kind != JK_SCRUB && j->kind != JK_ECENCODE &&
               job_select(j, spec, err, errlen));
    bmd_unref(bm);
    if (bad) {
        job_free(j);
        return NULL;
    }
    snprintf(j->id, sizeof(j->id), "%s", id);
    const char *key = json_string_value(json_object_get(spec, "key"));
    snprintf(j->key, sizeof(j->key), "%s", key ? key : "");
    j->t = t;
    struct target_worker *tw = w->local;
    j->cli = tw->cli;
    j->hc = tw->hc;
    j->base = w->base;
    j->q = w->q;
    j->tick = event_new(w->base, -1, 0, tick, j);
    j->spec = json_dumps(spec, JSON_COMPACT);
    j->start_ns = wall_ns();
    if (j->kind == JK_PREFETCH)
        j->pin = pin_record(spec, j->start_ns);
    j->want_map = json_integer_value(json_object_get(spec, "map_version"));
    return j;
}

struct job *job_local_start(struct target *t, struct http_worker *w, enum job_kind kind,
                            const char *id)
{
    struct job *j = xcalloc(1, sizeof(*j));
    unsigned char rnd[16];
    rand_bytes(rnd, sizeof(rnd));
    hex_encode(rnd, sizeof(rnd), j->id);
    if (id)
        snprintf(j->id, sizeof(j->id), "%s", id);
    j->kind = kind;
    j->t = t;
    j->q = w->q;
    j->base = w->base;
    json_t *spec = json_pack("{s:s, s:s}", "id", j->id, "kind", job_kind_name(kind));
    j->spec = json_dumps(spec, JSON_COMPACT);    /* its record once it ended */
    json_decref(spec);
    j->start_ns = wall_ns();
    pthread_mutex_lock(&jobs_mu);
    prune();
    registry_add(j);             /* no tick: never waits behind job_max */
    pthread_mutex_unlock(&jobs_mu);
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
    char *pin;                   /* a start's pin record (pin.h), written first */
    int rc;
    struct http_req *r;          /* answered once the record is written, or NULL */
    struct job *j;
};

static json_t *progress(const struct job *j);

static void save_work(void *arg)
{
    struct saved *sv = arg;
    struct store *st = &sv->t->store;
    if (sv->pin) {
        char *nk = xasprintf("n%s", sv->key + 1);
        sv->rc = store_kv_put(st, &st->mp[0], nk, strlen(nk), sv->pin, strlen(sv->pin));
        free(nk);
        if (sv->rc)
            return;
    }
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
    if (r && j->pin)
        sv->pin = xstrdup(j->pin);
    iopool_submit(j->t->io, j->q, save_work, done, sv);
}

static void saved_free(void *arg)
{
    struct saved *sv = arg;
    if (sv->rc)
        log_warn("job %s: its record could not be written: %s", sv->key + 1, strerror(-sv->rc));
    free(sv->key);
    free(sv->val);
    free(sv->pin);
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
        if (j->pin)
            pin_add(j->id, j->pin);
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
        prune();
        registry_add(j);
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

/* A job's state; with jobs_mu held. */
static const char *state_of(const struct job *j)
{
    return !j->end_ns                                       ? "running"
           : __atomic_load_n(&j->aborted, __ATOMIC_RELAXED) ? "aborted"
           : j->errors                                      ? "failed"
                                                            : "finished";
}

/* The progress counters, by their names in a job's JSON: written by
 * progress, read back from an ended job's record by remember. */
static const struct {
    const char *name;
    size_t off;
} counters[] = {
    {"owned", offsetof(struct job, owned)},     {"present", offsetof(struct job, present)},
    {"fetched", offsetof(struct job, fetched)}, {"evicted", offsetof(struct job, evicted)},
    {"done", offsetof(struct job, done)},       {"copied", offsetof(struct job, copied)},
    {"moved", offsetof(struct job, moved)},     {"found", offsetof(struct job, found)},
    {"fixed", offsetof(struct job, fixed)},     {"lost", offsetof(struct job, lost)},
    {"downloaded", offsetof(struct job, downloaded)},
    {"bytes", offsetof(struct job, bytes)},     {"errors", offsetof(struct job, errors)},
    {"start_ns", offsetof(struct job, start_ns)},
};

static json_t *progress(const struct job *j)
{
    json_t *errs = json_array();
    for (int i = 0; i < j->nerrs; i++) {
        const char *nl = strchr(j->errs[i], '\n');
        json_array_append_new(errs, json_pack("{s:s%, s:s}", "name", j->errs[i],
                                              (size_t)(nl - j->errs[i]), "reason", nl + 1));
    }
    json_t *p = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:I, s:b}",
                          "id", j->id, "kind", job_kind_name(j->kind), "state", state_of(j),
                          "provider", j->provider, "bucket", j->bucket,
                          "selected", (json_int_t)(j->listed && !j->list_end ? 0 : j->total),
                          "looked", (json_int_t)__atomic_load_n(&j->pos, __ATOMIC_RELAXED),
                          "error_names", errs, "end_ns", (json_int_t)j->end_ns,
                          "waiting", __atomic_load_n(&j->waiting, __ATOMIC_RELAXED));
    for (size_t i = 0; i < ARRAY_LEN(counters); i++)
        json_object_set_new(p, counters[i].name,
                            json_integer((json_int_t) * (const uint64_t *)((const char *)j +
                                                                           counters[i].off)));
    json_object_set_new(p, "map_version",
                        json_integer(__atomic_load_n(&j->map_version, __ATOMIC_RELAXED)));
    if (j->kind == JK_COPY)
        json_object_set_new(p, "to", json_string(j->to));
    if (j->dry_run)
        json_object_set_new(p, "dry_run", json_true());
    return p;
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
    prune();
    for (struct job *j = jobs; j; j = j->next) {
        if (kn >= 0 && strcmp(key, j->key))
            continue;
        json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "id", j->id, "kind",
                              job_kind_name(j->kind), "provider", j->provider, "bucket",
                              j->bucket, "start_ns", (json_int_t)j->start_ns, "state",
                              state_of(j));
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
    prune();
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
    job_pump(arg);
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

/* PATCH /v1/internal/jobs/ID {"pin": false}: the job's pin goes (its
 * record too); the objects may be evicted from now on. */
static void patch_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct target *t = r->w->ctx;
    char *id = arg;
    json_t *j = json_loadb(body, len, 0, NULL);   /* body stays the reader's */
    if (!json_is_false(json_object_get(j, "pin")) || json_object_size(j) != 1) {
        http_reply_error(r, 400, "a job is changed with {\"pin\": false} only");
    } else if (pin_drop(id) == 0) {
        char *nk = xasprintf("n%s", id);
        store_kv_del(&t->store, &t->store.mp[0], nk, strlen(nk));
        free(nk);
        http_reply_json(r, 200, json_pack("{s:s, s:b}", "id", id, "pinned", 0));
    } else {
        http_reply_error(r, 404, "no pin of job %s here", id);
    }
    json_decref(j);
    free(id);
}

void job_patch(struct http_req *r, const char *rest, size_t rlen)
{
    node_read_body(r, 4096, patch_body, free, xstrndup(rest, rlen > 63 ? 63 : rlen));
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
    if (!known)
        registry_add(j);
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
    int kind = job_kind_parse(json_string_value(json_object_get(p, "kind")));
    j->kind = kind < 0 ? JK_PREFETCH : (enum job_kind)kind;
    s = json_string_value(json_object_get(p, "state"));
    j->aborted = s && !strcmp(s, "aborted");
#define NUM(f) ((uint64_t)json_integer_value(json_object_get(p, f)))
    j->total = NUM("selected");
    j->pos = NUM("looked");
    for (size_t k = 0; k < ARRAY_LEN(counters); k++)
        *(uint64_t *)((char *)j + counters[k].off) = NUM(counters[k].name);
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
    pin_load(&t->store);
    struct resume base = {t, w, NULL, ""};
    store_kv_scan(&t->store, &t->store.mp[0], "j", 1, resume_one, &base);
    pthread_mutex_lock(&jobs_mu);
    prune();                     /* the records of more ended jobs than are kept */
    pthread_mutex_unlock(&jobs_mu);
}
