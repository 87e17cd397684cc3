/*
 * job: the framework of a target's batch jobs (see job.h): the kinds'
 * registry, the jobs' registry, their counters, the internal API and the
 * records kept across restarts. A kind's work is in the subsystem that
 * does it (its struct job_kind).
 *
 * The registry keeps running jobs and, for job_ttl_s (config), at most
 * JOB_KEEP ended ones (and JOB_KEEP_OWN of a target's own). At most
 * job_max (config) started jobs run at once on a target; the ones started
 * beyond wait, in order, and begin as others end.
 */
#include <event2/event.h>
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "cmap.h"
#include "err.h"
#include "http.h"
#include "httpbody.h"
#include "iopool.h"
#include "job.h"
#include "log.h"
#include "loopq.h"
#include "node.h"
#include "store.h"
#include "target.h"
#include "targetmetrics.h"
#include "util.h"

#define JOB_KEEP 64              /* ended jobs remembered */
#define JOB_KEEP_OWN 8           /* and ended rounds of a target's own */
#define KINDS_MAX 32

static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct job *jobs;

/* Written at start-up, before any worker runs; read-only after. */
static const struct job_kind *kinds[KINDS_MAX];
static size_t nkinds;

void job_kind_register(const struct job_kind *k)
{
    if (!jobkind_find(k->name) || nkinds == KINDS_MAX) {
        log_error("job kind %s is not in the table of kinds (common/jobkind.c)", k->name);
        abort();
    }
    kinds[nkinds++] = k;
}

/* The runner of the kind named s, or NULL. */
static const struct job_kind *kind_find(const char *s)
{
    for (size_t i = 0; s && i < nkinds; i++)
        if (!strcmp(kinds[i]->name, s))
            return kinds[i];
    return NULL;
}

void job_note_error(struct job *j, const char *name, const char *why)
{
    pthread_mutex_lock(&jobs_mu);
    j->ctr[JC_ERRORS]++;
    if (j->nerrs < JOB_ERRS)
        snprintf(j->errs[j->nerrs++], sizeof(j->errs[0]), "%.200s\n%.100s", name, why);
    pthread_mutex_unlock(&jobs_mu);
    targetmetrics_job_add(j->kind->name, "errors", 1, 0);
}

void job_add(struct job *j, enum job_ctr c, uint64_t n, uint64_t b)
{
    pthread_mutex_lock(&jobs_mu);
    j->ctr[c] += n;
    j->ctr[JC_BYTES] += b;
    pthread_mutex_unlock(&jobs_mu);
    targetmetrics_job_add(j->kind->name, jobkind_ctr_name(c), n, b);
}

void job_set(struct job *j, enum job_ctr c, uint64_t v)
{
    pthread_mutex_lock(&jobs_mu);
    j->ctr[c] = v;
    pthread_mutex_unlock(&jobs_mu);
}

uint64_t job_counter(struct job *j, enum job_ctr c)
{
    pthread_mutex_lock(&jobs_mu);
    uint64_t v = j->ctr[c];
    pthread_mutex_unlock(&jobs_mu);
    return v;
}

void job_set_total(struct job *j, uint64_t total, int unsized)
{
    pthread_mutex_lock(&jobs_mu);
    j->total = total;
    j->unsized = unsized;
    pthread_mutex_unlock(&jobs_mu);
}

int job_aborted(const struct job *j)
{
    return __atomic_load_n(&j->aborted, __ATOMIC_RELAXED);
}

void job_abort_set(struct job *j)
{
    __atomic_store_n(&j->aborted, 1, __ATOMIC_RELAXED);
}

static void job_free(struct job *j)
{
    if (j->kind && j->kind->free)
        j->kind->free(j);
    if (j->tick)
        event_free(j->tick);
    free(j->spec);
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
    int own_ended = 0;           /* a target's own rounds: a few, apart from the others */
    for (struct job **pp = &jobs; *pp;) {
        struct job *j = *pp;
        uint64_t ttl = (uint64_t)j->t->conf.job_ttl_s * 1000000000u;
        int own = !(j->info->flags & JKF_API);
        int over = j->end_ns && (own ? ++own_ended > JOB_KEEP_OWN : ++ended > JOB_KEEP);
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
    int running = 0;             /* started jobs: a target's own (lru, rebalance) do not count */
    for (struct job *o = jobs; o; o = o->next)
        running += o->tick && !o->end_ns && !__atomic_load_n(&o->waiting, __ATOMIC_RELAXED);
    if (j->tick && running >= j->t->conf.job_max)
        __atomic_store_n(&j->waiting, 1, __ATOMIC_RELAXED);
    if (!j->end_ns)
        targetmetrics_job_running(j->kind->name, 1);
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
    targetmetrics_job_running(j->kind->name, -1);
    struct job *next = NULL;     /* the oldest waiting one begins (a started job's place) */
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

struct cmap *job_map_wait(struct job *j, int64_t want, int *waits)
{
    struct cmap *m = cmap_current();
    if (!m || (m->snap.version < want && (*waits)++ < JOB_MAP_WAITS)) {
        cmap_unref(m);
        struct timeval tv = {0, 100000};
        event_add(j->tick, &tv);
        return NULL;
    }
    __atomic_store_n(&j->map_version, m->snap.version, __ATOMIC_RELAXED);
    return m;
}

void job_pump(struct job *j)
{
    if (j->kind->start) {
        if (!j->started && !__atomic_load_n(&j->waiting, __ATOMIC_RELAXED)) {
            j->started = 1;
            j->kind->start(j);
        }
        return;
    }
    if (j->kind->pump)
        j->kind->pump(j);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    job_pump(arg);
}

/* ---- the internal API ---------------------------------------------------------- */

/* A job from its JSON spec, for w's loop; NULL with err set. */
static struct job *job_new(struct target *t, struct http_worker *w, json_t *spec, char *err,
                           size_t errlen)
{
    const char *id = json_string_value(json_object_get(spec, "id"));
    const char *prov = json_string_value(json_object_get(spec, "provider"));
    const char *bucket = json_string_value(json_object_get(spec, "bucket"));
    const char *kname = json_string_value(json_object_get(spec, "kind"));
    const struct jobkind *info = jobkind_find(kname);
    const struct job_kind *kind = kind_find(kname);
    if (!id || !id[0] || strlen(id) >= JOB_ID_MAX || !info || !kind ||
        !(info->flags & JKF_API) || !bucket || !prov) {
        snprintf(err, errlen, "a job needs id, kind (%s), provider and bucket",
                 jobkind_api_names());
        return NULL;
    }
    int every = (info->flags & JKF_EVERY) && !bucket[0];   /* every bucket's */
    if (!every) {
        struct bmd *bm = bmd_current();
        int known = bmd_find(bm, prov, bucket) != NULL;
        bmd_unref(bm);
        if (!known) {
            snprintf(err, errlen, "bucket %s/%s is not known here", prov, bucket);
            return NULL;
        }
    }
    struct job *j = xcalloc(1, sizeof(*j));
    j->kind = kind;
    j->info = info;
    snprintf(j->provider, sizeof(j->provider), "%s", prov);
    snprintf(j->bucket, sizeof(j->bucket), "%s", bucket);
    snprintf(j->id, sizeof(j->id), "%s", id);
    const char *key = json_string_value(json_object_get(spec, "key"));
    snprintf(j->key, sizeof(j->key), "%s", key ? key : "");
    j->t = t;
    struct target_worker *tw = w->local;
    j->cli = tw->cli;
    j->hc = tw->hc;
    j->base = w->base;
    j->q = w->q;
    j->start_ns = wall_ns();
    if (kind->init && kind->init(j, spec, err, errlen)) {
        job_free(j);
        return NULL;
    }
    j->tick = event_new(w->base, -1, 0, tick, j);
    j->spec = json_dumps(spec, JSON_COMPACT);
    return j;
}

struct job *job_local_start(struct target *t, struct http_worker *w,
                            const struct job_kind *kind, const char *id)
{
    struct job *j = xcalloc(1, sizeof(*j));
    unsigned char rnd[16];
    rand_bytes(rnd, sizeof(rnd));
    hex_encode(rnd, sizeof(rnd), j->id);
    if (id)
        snprintf(j->id, sizeof(j->id), "%s", id);
    j->kind = kind;
    j->info = jobkind_find(kind->name);
    j->started = 1;              /* its subsystem runs it */
    j->t = t;
    j->q = w->q;
    j->base = w->base;
    json_t *spec = json_pack("{s:s, s:s}", "id", j->id, "kind", kind->name);
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
    int persist;                 /* a start: the kind's own records first */
    int rc;
    struct http_req *r;          /* answered once the record is written, or NULL */
    struct job *j;
};

static json_t *progress(const struct job *j);

static void save_work(void *arg)
{
    struct saved *sv = arg;
    struct store *st = &sv->t->store;
    if (sv->persist && (sv->rc = sv->j->kind->persist(sv->j)))
        return;
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
    sv->persist = r && j->kind->persist;
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
        job_abort_set(j);
        http_reply_error(sv->r, err_status(sv->rc), "the job could not be recorded: %s",
                         strerror(-sv->rc));
    } else {
        if (j->kind->recorded)
            j->kind->recorded(j);
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
           : j->ctr[JC_ERRORS]                              ? "failed"
                                                            : "finished";
}

static json_t *progress(const struct job *j)
{
    json_t *errs = json_array();
    for (int i = 0; i < j->nerrs; i++) {
        const char *nl = strchr(j->errs[i], '\n');
        json_array_append_new(errs, json_pack("{s:s%, s:s}", "name", j->errs[i],
                                              (size_t)(nl - j->errs[i]), "reason", nl + 1));
    }
    json_t *p = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:I, s:I, s:b}",
                          "id", j->id, "kind", j->kind->name, "state", state_of(j),
                          "provider", j->provider, "bucket", j->bucket,
                          "selected", (json_int_t)(j->unsized ? 0 : j->total),
                          "looked", (json_int_t)__atomic_load_n(&j->pos, __ATOMIC_RELAXED),
                          "error_names", errs, "start_ns", (json_int_t)j->start_ns,
                          "end_ns", (json_int_t)j->end_ns,
                          "waiting", __atomic_load_n(&j->waiting, __ATOMIC_RELAXED));
    for (int c = 0; c < JC_N; c++)   /* the kind's counters */
        if (j->info->ctrs & JC_BIT(c))
            json_object_set_new(p, jobkind_ctr_name(c), json_integer((json_int_t)j->ctr[c]));
    json_object_set_new(p, "map_version",
                        json_integer(__atomic_load_n(&j->map_version, __ATOMIC_RELAXED)));
    if (j->kind->describe)
        j->kind->describe(j, p);
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
                              j->kind->name, "provider", j->provider, "bucket",
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
        job_abort_set(j);
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
    const char *s = json_string_value(json_object_get(p, "kind"));
    const struct job_kind *kind = kind_find(s);
    if (!kind) {
        log_warn("a job record of kind %s, which this target does not run: skipped",
                 s ? s : "(none)");
        return;
    }
    struct job *j = xcalloc(1, sizeof(*j));
    j->kind = kind;
    j->info = jobkind_find(kind->name);
    snprintf(j->id, sizeof(j->id), "%s", (s = json_string_value(json_object_get(spec, "id")))
                                              ? s : "");
    snprintf(j->key, sizeof(j->key), "%s",
             (s = json_string_value(json_object_get(spec, "key"))) ? s : "");
    snprintf(j->provider, sizeof(j->provider), "%s",
             (s = json_string_value(json_object_get(p, "provider"))) ? s : "");
    snprintf(j->bucket, sizeof(j->bucket), "%s",
             (s = json_string_value(json_object_get(p, "bucket"))) ? s : "");
    s = json_string_value(json_object_get(p, "state"));
    j->aborted = s && !strcmp(s, "aborted");
#define NUM(f) ((uint64_t)json_integer_value(json_object_get(p, f)))
    j->total = NUM("selected");
    j->pos = NUM("looked");
    for (int c = 0; c < JC_N; c++)
        j->ctr[c] = NUM(jobkind_ctr_name(c));
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
