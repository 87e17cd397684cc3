/*
 * jobs: the batch job API (see jobs.h). Each target keeps its share of a
 * job (and its key), which a GET gathers from all of them (fan) and adds
 * up; the proxy remembers the jobs it met (id, key, kind, bucket, spec) to
 * answer a repeated key without asking.
 *
 * Thread: any worker; the registry is shared under jobs_mu.
 */
#include <event2/event.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "authz.h"
#include "bmd.h"
#include "buckets.h"
#include "cmap.h"
#include "fan.h"
#include "nodeclient.h"
#include "http.h"
#include "httpbody.h"
#include "jobkind.h"
#include "jobs.h"
#include "jobsum.h"
#include "node.h"
#include "nodeauth.h"
#include "objname.h"
#include "objlist.h"
#include "proxy.h"
#include "tmpl.h"
#include "util.h"
#include "worker.h"
#include "xform.h"

#define JOBS_KEEP 256            /* jobs remembered, newest first */
#define JOB_WAIT_MAX_S 3600      /* ?wait, at most */
#define JOB_POLL_MS 200          /* how often a waiting GET asks again */

struct pjob {
    struct pjob *next;
    char id[33];
    char *key;                   /* the caller's idempotency key, or NULL */
    char kind[16];
    char provider[16];
    char bucket[64];
    char to_provider[16];        /* a copy's destination */
    char to[64];
    uint64_t created_ns;
    char *spec;                  /* what the targets are sent (JSON) */
    json_t *started_on;          /* the ids of the targets it started on */
};

static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pjob *pjobs;

/* ---- asking every target ----------------------------------------------------- */

/* Did every target answer 404 (none knows the job)? */
static int nobody_knows(json_t *answers)
{
    size_t i;
    json_t *a;
    json_array_foreach(answers, i, a)
        if (json_integer_value(json_object_get(a, "status")) != 404)
            return 0;
    return json_array_size(answers) > 0;
}

/* ---- start ---------------------------------------------------------------------- */

static struct pjob *find_key(const char *key)
{
    for (struct pjob *pj = pjobs; pj; pj = pj->next)
        if (pj->key && !strcmp(pj->key, key))
            return pj;
    return NULL;
}

static void pjob_free(struct pjob *pj)
{
    free(pj->key);
    free(pj->spec);
    json_decref(pj->started_on);
    free(pj);
}

/* Remember pj (the registry owns it from now on). */
static void registry_add(struct pjob *pj)
{
    pthread_mutex_lock(&jobs_mu);
    pj->next = pjobs;
    pjobs = pj;
    int n = 0;
    for (struct pjob **pp = &pjobs; *pp;) {
        if (++n > JOBS_KEEP) {
            struct pjob *drop = *pp;
            *pp = drop->next;
            pjob_free(drop);
        } else {
            pp = &(*pp)->next;
        }
    }
    pthread_mutex_unlock(&jobs_mu);
}

/* The targets the job id started on, as this proxy saw it start (a new
 * reference), or NULL when it was not started here. */
static json_t *registry_started_on(const char *id)
{
    json_t *on = NULL;
    pthread_mutex_lock(&jobs_mu);
    for (struct pjob *pj = pjobs; pj && !on; pj = pj->next)
        if (!strcmp(pj->id, id) && pj->started_on)
            on = json_incref(pj->started_on);
    pthread_mutex_unlock(&jobs_mu);
    return on;
}

/* The id of the job key names here, copied into id; 0 when none. */
static int registry_key(const char *key, char id[33])
{
    pthread_mutex_lock(&jobs_mu);
    struct pjob *pj = find_key(key);
    if (pj)
        snprintf(id, 33, "%s", pj->id);
    pthread_mutex_unlock(&jobs_mu);
    return pj != NULL;
}

/* A job that did not start everywhere is stopped where it did. */
static void abort_everywhere(struct http_req *r, const char *id)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/internal/jobs/%s", id);
    fan_start(r, "DELETE", path, NULL, fan_free, NULL);   /* the answers do not matter */
}

/* The targets' answers to a start: the job is remembered here only when
 * it started everywhere; else it is stopped where it did start. */
static void started(struct fan *f)
{
    struct pjob *pj = f->ctx;
    size_t i;
    json_t *a;
    int failed = 0;
    json_t *refusal = NULL;      /* a target's 4xx: the request's fault */
    json_array_foreach(f->answers, i, a) {
        json_int_t st = json_integer_value(json_object_get(a, "status"));
        failed += st != 201 && st != 200;
        if (st >= 400 && st < 500 && !refusal)
            refusal = a;
    }
    if (failed)
        abort_everywhere(f->r, pj->id);
    if (refusal) {
        const char *msg = json_string_value(json_object_get(json_object_get(refusal, "body"),
                                                            "error"));
        http_reply_error(f->r, (int)json_integer_value(json_object_get(refusal, "status")),
                         "%s", msg ? msg : "a target refused the job");
    } else if (failed) {
        http_reply_json(f->r, 503, json_pack("{s:s, s:O}", "error",
                                             "the job did not start on every target (stopped "
                                             "where it did)", "targets", f->answers));
    } else {
        http_reply_json(f->r, 201, json_pack("{s:s}", "id", pj->id));
        pj->started_on = json_array();
        json_array_foreach(f->answers, i, a)
            json_array_append(pj->started_on, json_object_get(a, "target"));
        registry_add(pj);
        pj = NULL;
    }
    if (pj)
        pjob_free(pj);
    fan_free(f);
}

static int bad(struct http_req *r, const char *msg)
{
    http_reply_error(r, 400, "%s", msg);
    return 400;
}

/* A transform job's transform (registered), its "args" and renaming
 * ("ext": {".from": ".to", ...}); none for the other kinds: 0, or 400
 * (404) answered. */
static int xform_check_job(struct http_req *r, json_t *j, const struct jobkind *kind)
{
    json_t *xf = json_object_get(j, "transform"), *ext = json_object_get(j, "ext");
    if (!(kind->flags & JKF_XFORM))
        return xf || ext || json_object_get(j, "args")
                   ? bad(r, "only a transform job takes \"transform\", \"args\" and \"ext\"")
                   : 0;
    const char *name = json_string_value(xf);
    if (!name || !xform_valid_name(name, strlen(name)))
        return bad(r, "a transform job names its transform: \"transform\"");
    struct bmd *b = bmd_current();
    int known = b && bmd_transform(b, name);
    bmd_unref(b);
    if (!known) {
        http_reply_error(r, 404, "transform '%s' not found", name);
        return 404;
    }
    json_t *args = json_object_get(j, "args");
    if (args && (!json_is_string(args) ||
                 !xform_args_ok(json_string_value(args), json_string_length(args))))
        return bad(r, "\"args\" is the transform's arguments, URL-encoded (\"a=1&b=2\"), "
                      "at most 1024 bytes");
    const char *from;
    json_t *to;
    if (ext && (!json_is_object(ext) || json_object_size(ext) > 16))
        return bad(r, "\"ext\" maps up to 16 extensions to others: {\".jpg\": \".png\"}");
    json_object_foreach(ext, from, to) {
        if (from[0] != '.' || strlen(from) > 32 || !json_is_string(to) ||
            json_string_length(to) > 32 || strchr(json_string_value(to), '/') ||
            strchr(from + 1, '/'))
            return bad(r, "\"ext\" maps an extension (\".jpg\") to another (\".png\", or "
                          "\"\" to drop it), at most 32 bytes each, without '/'");
    }
    return 0;
}

/* A download's URLs (and the names given for them), a copy's destination,
 * the flags: 0, or 400 answered. */
static int kind_check(struct http_req *r, json_t *j, const struct jobkind *kind)
{
    json_t *urls = json_object_get(j, "urls");
    json_t *names = json_object_get(j, "names");
    json_t *to = json_object_get(j, "to");
    static const char *const flags[] = {"latest", "dry_run", "pin"};
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_object_get(j, flags[i]);
        if (f && !json_is_boolean(f))
            return bad(r, "\"latest\", \"dry_run\" and \"pin\" are true or false");
    }
    json_t *ttl = json_object_get(j, "pin_ttl_s");
    if (ttl && (!json_is_integer(ttl) || json_integer_value(ttl) < 1))
        return bad(r, "\"pin_ttl_s\" is a number of seconds");
    if ((json_object_get(j, "pin") || ttl) && !(kind->flags & JKF_PIN))
        return bad(r, "only a prefetch job pins what it selects");
    json_t *cc = json_object_get(j, "concurrency");
    if (cc && (!json_is_integer(cc) || json_integer_value(cc) < 1 ||
               json_integer_value(cc) > 256))
        return bad(r, "\"concurrency\" is a number of objects at once per target, 1..256");
    if (xform_check_job(r, j, kind))
        return 400;
    if (kind->flags & JKF_TO) {
        json_t *pre = json_object_get(j, "prepend");
        if (!json_is_string(to) || !bmd_valid_name(json_string_value(to), json_string_length(to)))
            return bad(r, "a copy, sharding or transform job names its destination bucket: "
                          "\"to\"");
        if (pre && (!json_is_string(pre) || json_string_length(pre) > OBJNAME_MAX))
            return bad(r, "\"prepend\" is a string");
        return 0;
    }
    if (!(kind->flags & JKF_URLS))
        return 0;
    int tm = json_object_get(j, "template") != NULL;
    if (tm == (urls != NULL))
        return bad(r, "a download takes \"urls\" (a list) or a URL \"template\"");
    if (urls && (!json_is_array(urls) || json_array_size(urls) == 0))
        return bad(r, "\"urls\" must be a non-empty list");
    size_t i;
    json_t *v;
    json_array_foreach(urls, i, v) {
        const char *u = json_string_value(v);
        if (!u || (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) || strlen(u) > 4000)
            return bad(r, "every URL is an http:// or https:// URL of at most 4000 bytes");
    }
    if (names && (!urls || !json_is_array(names) || json_array_size(names) != json_array_size(urls)))
        return bad(r, "a download's \"names\" are one per URL in \"urls\"");
    char err[256];
    json_array_foreach(names, i, v) {
        const char *s = json_string_value(v);
        if (!s || objname_valid(s, strlen(s), err, sizeof(err))) {
            http_reply_error(r, 400, "names[%zu]: %s", i, s ? err : "not a string");
            return 400;
        }
    }
    return 0;
}

/* The spec's checks; 0, or the status answered. */
static int spec_check(struct http_req *r, json_t *j, struct pjob *pj)
{
    const char *kname = json_string_value(json_object_get(j, "kind"));
    const struct jobkind *kind = jobkind_find(kname);
    const char *bucket = json_string_value(json_object_get(j, "bucket"));
    const char *prov = json_string_value(json_object_get(j, "provider"));
    json_t *names = json_object_get(j, "names");
    const char *tm = json_string_value(json_object_get(j, "template"));
    char err[256];
    json_t *key = json_object_get(j, "key");
    int every = kind && (kind->flags & JKF_EVERY) && !json_object_get(j, "bucket");
    if (every) {                 /* a scrub of every bucket, of every provider */
        json_object_set_new(j, "bucket", json_string(""));
        json_object_del(j, "provider");
        bucket = "";
        prov = NULL;
    }
    if (!kname || !bucket) {
        http_reply_error(r, 400, "a job needs \"kind\" and \"bucket\"");
        return 400;
    }
    if (key && (!json_is_string(key) || json_string_length(key) < 1 ||
                json_string_length(key) > 255)) {
        http_reply_error(r, 400, "\"key\" is a string of 1..255 bytes");
        return 400;
    }
    if (!kind || !(kind->flags & JKF_API)) {
        http_reply_error(r, 400, "unknown job kind '%.32s' (%s)", kname, jobkind_api_names());
        return 400;
    }
    if ((kind->flags & JKF_DRIVES) &&
        (names || tm || (every && json_object_get(j, "prefix"))))
        return bad(r, "a scrub or ec-encode takes every object of a bucket, or those of a "
                      "\"prefix\" in it (a scrub: every bucket too)");
    if (kind_check(r, j, kind))
        return 400;
    json_t *prefix = json_object_get(j, "prefix");
    int download = (kind->flags & JKF_URLS) != 0;
    if (download)
        names = NULL;            /* a download's names go with its urls (kind_check) */
    if ((names != NULL) + (tm != NULL) + (prefix != NULL) > 1) {
        http_reply_error(r, 400, "give one of \"names\", \"template\" or \"prefix\" (none: "
                                 "the whole bucket)");
        return 400;
    }
    if (prefix && (!json_is_string(prefix) || json_string_length(prefix) > OBJNAME_MAX)) {
        http_reply_error(r, 400, "\"prefix\" must be a string of at most %d bytes",
                         OBJNAME_MAX);
        return 400;
    }
    if (names) {
        size_t i;
        json_t *v;
        if (!json_is_array(names) || json_array_size(names) == 0) {
            http_reply_error(r, 400, "\"names\" must be a non-empty list of object names");
            return 400;
        }
        json_array_foreach(names, i, v) {
            const char *s = json_string_value(v);
            if (!s || objname_valid(s, strlen(s), err, sizeof(err))) {
                http_reply_error(r, 400, "names[%zu]: %s", i, s ? err : "not a string");
                return 400;
            }
        }
    }
    struct tmpl t;
    if (tm && tmpl_parse(&t, tm, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return 400;
    }
    if (tm)
        tmpl_free(&t);
    snprintf(pj->kind, sizeof(pj->kind), "%s", kind->name);
    snprintf(pj->bucket, sizeof(pj->bucket), "%s", bucket);
    snprintf(pj->provider, sizeof(pj->provider), "%s", prov ? prov : BMD_PROVIDER_SHOAL);
    const char *to = json_string_value(json_object_get(j, "to"));
    const char *tprov = json_string_value(json_object_get(j, "to_provider"));
    snprintf(pj->to, sizeof(pj->to), "%s", to ? to : "");
    snprintf(pj->to_provider, sizeof(pj->to_provider), "%s", tprov ? tprov : BMD_PROVIDER_SHOAL);
    const char *pre = json_string_value(json_object_get(j, "prepend"));
    if (to && !strcmp(to, bucket) && !strcmp(pj->to_provider, pj->provider) &&
        (!pre || !pre[0]) && !(kind->flags & JKF_PACK) &&
        !json_object_size(json_object_get(j, "ext"))) {
        http_reply_error(r, 400, "a copy onto itself: give another bucket or a \"prepend\"");
        return 400;
    }
    if ((!every && !bmd_valid_name(bucket, strlen(bucket))) ||
        strlen(bucket) >= sizeof(pj->bucket)) {
        http_reply_error(r, 400, "invalid bucket name");
        return 400;
    }
    return 0;
}

static void launch(struct http_req *r);
static void key_checked(struct fan *f);
static void ensure_and_launch(struct http_req *r, struct pjob *pj);

static void start_body(struct http_req *r, json_t *j)
{
    struct pjob *pj = xcalloc(1, sizeof(*pj));
    if (spec_check(r, j, pj)) {
        json_decref(j);
        pjob_free(pj);
        return;
    }
    const char *key = json_string_value(json_object_get(j, "key"));
    if (key)
        pj->key = xstrdup(key);
    unsigned char rnd[16];
    rand_bytes(rnd, sizeof(rnd));
    hex_encode(rnd, sizeof(rnd), pj->id);
    pj->created_ns = wall_ns();
    json_object_set_new(j, "id", json_string(pj->id));
    json_object_set_new(j, "provider", json_string(pj->provider));
    struct cmap *m = cmap_current();   /* every target judges ownership by this map or newer */
    json_object_set_new(j, "map_version", json_integer(m ? m->snap.version : 0));
    cmap_unref(m);
    pj->spec = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    char id[33];
    if (pj->key && registry_key(pj->key, id)) {
        http_reply_json(r, 200, json_pack("{s:s, s:b}", "id", id, "existing", 1));
        pjob_free(pj);
        return;
    }
    if (pj->key) {               /* perhaps started before this proxy's restart, or by another */
        char *ek = http_pct_encode(pj->key, strlen(pj->key), 0);
        char *path = xasprintf("/v1/internal/jobs?key=%s", ek);
        fan_start(r, "GET", path, NULL, key_checked, pj);
        free(path);
        free(ek);
        return;
    }
    ensure_and_launch(r, pj);
}

/* The job a key names on some target, or NULL (the answers of a fan). */
static const char *id_for_key(json_t *answers)
{
    size_t i, k;
    json_t *a, *e;
    json_array_foreach(answers, i, a)
        json_array_foreach(json_object_get(json_object_get(a, "body"), "jobs"), k, e) {
            const char *id = json_string_value(json_object_get(e, "id"));
            if (id)
                return id;
        }
    return NULL;
}

static void key_checked(struct fan *f)
{
    struct pjob *pj = f->ctx;
    const char *id = id_for_key(f->answers);
    if (id) {                    /* that job, remembered here from now on */
        snprintf(pj->id, sizeof(pj->id), "%s", id);
        http_reply_json(f->r, 200, json_pack("{s:s, s:b}", "id", pj->id, "existing", 1));
        registry_add(pj);
    } else {
        ensure_and_launch(f->r, pj);
    }
    fan_free(f);
}

static void ensure_to(struct http_req *r);

/* pj is the request's (r->data) until it started everywhere. */
static void ensure_and_launch(struct http_req *r, struct pjob *pj)
{
    r->data = pj;
    /* a bucket of a cloud store joins the BMD on first use, as for a GET */
    if (strcmp(pj->provider, BMD_PROVIDER_SHOAL) && !buckets_exist(pj->provider, pj->bucket))
        buckets_ensure(r, pj->provider, pj->bucket, ensure_to);
    else
        ensure_to(r);
}

/* The same for a copy's destination. */
static void ensure_to(struct http_req *r)
{
    struct pjob *pj = r->data;
    if (pj->to[0] && strcmp(pj->to_provider, BMD_PROVIDER_SHOAL) &&
        !buckets_exist(pj->to_provider, pj->to))
        buckets_ensure(r, pj->to_provider, pj->to, launch);
    else
        launch(r);
}

/* A job reads and writes as its starter (authz.h): a prefetch or a copy
 * reads every object it selects, so its starter must be able to read the
 * whole source bucket (a public-read object alone does not do); a copy
 * writes its destination; the other kinds change the bucket they name; a
 * scrub of every bucket needs an admin key where there are any. 1, or 0
 * with r answered. */
static int job_allowed(struct http_req *r, const struct pjob *pj)
{
    struct proxy *p = r->w->ctx;
    struct authz_who who;
    if (!node_identify(&p->node, r, &who))
        return 0;
    if (!who.enforced || who.admin)
        return 1;
    const char *denied = NULL;
    const struct jobkind *kind = jobkind_find(pj->kind);
    int reads = kind && (kind->flags & JKF_READS);
    /* a bucket that does not exist (-1) is answered 404 further on */
    int v = pj->bucket[0] ? authz_decide_named(pj->provider, pj->bucket, &who,
                                               reads ? AUTHZ_READ : AUTHZ_OWN)
                          : AUTHZ_ALLOW;   /* every bucket: admin_keys decide, below */
    int to = pj->to[0] ? authz_decide_named(pj->to_provider, pj->to, &who, AUTHZ_WRITE) : -1;
    if (!pj->bucket[0] && p->conf.n_admin_keys)
        denied = "a scrub of every bucket needs an admin key";
    else if (v == AUTHZ_DENY || v == AUTHZ_IF_OBJECT)
        denied = reads ? "the job's starter may not read every object of its bucket"
                       : "the job's starter may not change its bucket";
    else if (to == AUTHZ_DENY || to == AUTHZ_IF_OBJECT)
        denied = "the job's starter may not write its destination bucket";
    if (!denied)
        return 1;
    http_reply_error(r, 403, "access denied: %s", denied);
    return 0;
}

/* May who (job_who) see, abort or unpin a job of bucket (provider, ""
 * for every bucket), as a target describes it (e): when it may change
 * that bucket, as the job's starter could (job_allowed); an admin key or
 * another node, any; a job of every bucket (a target's own rebalance or
 * eviction, a scrub of all), an admin key where there are any, else any
 * signed key. */
static int job_theirs(const struct proxy *p, const struct authz_who *who, json_t *e)
{
    const char *provider = json_string_value(json_object_get(e, "provider"));
    const char *bucket = json_string_value(json_object_get(e, "bucket"));
    if (!who->enforced || who->admin)
        return 1;
    if (!bucket || !bucket[0])
        return !p->conf.n_admin_keys;
    return authz_decide_named(provider && provider[0] ? provider : BMD_PROVIDER_SHOAL, bucket,
                              who, AUTHZ_OWN) == AUTHZ_ALLOW;
}

/* Who asks r, once per answer (jobs_route authenticated r already, so
 * this never answers it). */
static void job_who(struct http_req *r, struct authz_who *who)
{
    struct proxy *p = r->w->ctx;
    if (!node_identify(&p->node, r, who))
        *who = (struct authz_who){NULL, 0, 1, 0};
}

static void launch(struct http_req *r)
{
    struct pjob *pj = r->data;
    r->data = NULL;
    if (!job_allowed(r, pj)) {
        pjob_free(pj);
        return;
    }
    int backed = objlist_by_backend(pj->provider, pj->bucket);
    const struct jobkind *kind = jobkind_find(pj->kind);   /* spec_check found it */
    if (!pj->bucket[0]) {        /* a scrub of every bucket */
        fan_start(r, "POST", "/v1/internal/jobs", pj->spec, started, pj);
        return;
    }
    if (!buckets_exist(pj->provider, pj->bucket) ||
        (pj->to[0] && !buckets_exist(pj->to_provider, pj->to))) {
        http_reply_error(r, 404, "bucket '%s' not found",
                         buckets_exist(pj->provider, pj->bucket) ? pj->to : pj->bucket);
    } else if (!backed && kind->unbacked) {
        http_reply_error(r, 400, "bucket '%s' %s", pj->bucket, kind->unbacked);
    } else {
        fan_start(r, "POST", "/v1/internal/jobs", pj->spec, started, pj);
        return;
    }
    pjob_free(pj);
}

/* ---- show, wait, abort, list ------------------------------------------------------ */

struct show {
    struct http_req *r;          /* referenced until the answer */
    char id[33];
    uint64_t deadline_ns;        /* ?wait: ask again until then */
    struct event *again;
};

static void ask(struct http_req *r, struct show *sh);

static void show_free(struct show *sh)
{
    event_free(sh->again);
    http_req_unref(sh->r);
    free(sh);
}

static void shown(struct fan *f)
{
    struct show *sh = f->ctx;
    struct http_req *r = f->r;
    const char *state;
    if (nobody_knows(f->answers)) {
        http_reply_error(r, 404, "no job %s on any target", sh->id);
        show_free(sh);
        fan_free(f);
        return;
    }
    json_t *on = registry_started_on(sh->id);
    json_t *j = jobsum_aggregate(sh->id, f->answers, on, &state);
    json_decref(on);
    int unreached = (int)json_integer_value(json_object_get(j, "unreached_targets"));
    if ((!strcmp(state, "running") || unreached) && wall_ns() < sh->deadline_ns && r->conn) {
        json_decref(j);
        fan_free(f);
        struct timeval tv = {0, JOB_POLL_MS * 1000};
        evtimer_add(sh->again, &tv);
        return;
    }
    /* what the job is, as a target that has it says (a target's own
     * jobs, lru, were never started through a proxy) */
    static const char *const what[] = {"kind", "bucket", "provider"};
    size_t i;
    json_t *a;
    json_array_foreach(f->answers, i, a) {
        json_t *b = json_object_get(a, "body");
        if (json_integer_value(json_object_get(a, "status")) != 200 || !b)
            continue;
        for (size_t k = 0; k < 3; k++)
            json_object_set(j, what[k], json_object_get(b, what[k]));
        break;
    }
    struct authz_who who;
    job_who(r, &who);
    if (!job_theirs(r->w->ctx, &who, j)) {   /* another's job is none of the caller's */
        json_decref(j);
        http_reply_error(r, 404, "no job %s on any target", sh->id);
    } else {
        http_reply_json(r, 200, j);
    }
    show_free(sh);
    fan_free(f);
}

static void again_cb(evutil_socket_t fd, short what, void *arg)
{
    struct show *sh = arg;
    (void)fd;
    (void)what;
    ask(sh->r, sh);
}

static void ask(struct http_req *r, struct show *sh)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/internal/jobs/%s", sh->id);
    fan_start(r, "GET", path, NULL, shown, sh);
}

/* A job id as targets name them (hex), or 0 with r answered 404. */
static int job_id_ok(struct http_req *r, const char *id, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            n = 0;
    if (n == 0)
        http_reply_error(r, 404, "no such job");
    return n != 0;
}

static void job_get(struct http_req *r, const char *id, size_t n)
{
    if (!job_id_ok(r, id, n))
        return;
    char w[32];
    uint64_t wait_s = 0;
    if (http_query_get(r, "wait", w, sizeof(w)) >= 0 &&
        (parse_u64(w, strlen(w), &wait_s) || wait_s > JOB_WAIT_MAX_S)) {
        http_reply_error(r, 400, "wait is in seconds, 0..%d", JOB_WAIT_MAX_S);
        return;
    }
    struct show *sh = xcalloc(1, sizeof(*sh));
    sh->r = r;
    http_req_ref(r);
    snprintf(sh->id, sizeof(sh->id), "%.*s", (int)n, id);
    sh->deadline_ns = wall_ns() + wait_s * 1000000000ull;
    sh->again = evtimer_new(r->w->base, again_cb, sh);
    ask(r, sh);
}

static void aborted(struct fan *f)
{
    size_t i;
    json_t *a;
    int unreached = 0;
    json_array_foreach(f->answers, i, a) {
        json_int_t st = json_integer_value(json_object_get(a, "status"));
        unreached += st != 204 && st != 404;
    }
    if (nobody_knows(f->answers))
        http_reply_error(f->r, 404, "no job by that id on any target");
    else if (unreached)
        http_reply_json(f->r, 503, json_pack("{s:s, s:O}", "error",
                                             "not every target could be told to abort",
                                             "targets", f->answers));
    else
        http_reply(f->r, 204, NULL, NULL, 0);
    fan_free(f);
}

/* Unpinned where the job is. */
static void patched(struct fan *f)
{
    size_t i;
    json_t *a;
    int done = 0, unreached = 0;
    json_array_foreach(f->answers, i, a) {
        json_int_t st = json_integer_value(json_object_get(a, "status"));
        done += st == 200;
        unreached += st != 200 && st != 404;
    }
    if (unreached)
        http_reply_json(f->r, 503, json_pack("{s:s, s:O}", "error",
                                             "not every target could be told to unpin",
                                             "targets", f->answers));
    else if (!done)
        http_reply_error(f->r, 404, "no pinned job by that id on any target");
    else
        http_reply_json(f->r, 200, json_pack("{s:b, s:i}", "pinned", 0, "targets", done));
    fan_free(f);
}

static void looked(struct fan *f);

static void patch_read(struct http_req *r, void *arg, char *body, size_t len)
{
    char *path = arg;
    json_t *j = json_loadb(body, len, 0, NULL);   /* body stays the reader's */
    if (!json_is_false(json_object_get(j, "pin")) || json_object_size(j) != 1)
        http_reply_error(r, 400, "a job is changed with {\"pin\": false} only");
    else                         /* whose it is first (looked) */
        fan_start(r, "GET", path, NULL, looked, xstrdup("{\"pin\": false}"));
    json_decref(j);
    free(path);
}

static void job_patch(struct http_req *r, const char *id, size_t n)
{
    if (!job_id_ok(r, id, n))
        return;
    node_read_body(r, 4096, patch_read, free, xasprintf("/v1/internal/jobs/%.*s", (int)n, id));
}

/* An abort or unpin goes ahead once the targets' view of the job says
 * it is the caller's (job_theirs); else 404, as for no job. ctx: the
 * PATCH's body, or NULL for the abort. */
static void looked(struct fan *f)
{
    struct http_req *r = f->r;
    char *patch = f->ctx;
    json_t *mine = NULL;
    size_t i;
    json_t *a;
    json_array_foreach(f->answers, i, a) {
        json_t *b = json_object_get(a, "body");
        if (json_integer_value(json_object_get(a, "status")) == 200 && b) {
            mine = b;
            break;
        }
    }
    const char *id = json_string_value(json_object_get(mine, "id"));
    char path[96];
    snprintf(path, sizeof(path), "/v1/internal/jobs/%.32s", id ? id : "");
    struct authz_who who;
    job_who(r, &who);
    if (!mine || !id || !job_theirs(r->w->ctx, &who, mine))
        http_reply_error(r, 404, "no job by that id on any target");
    else if (patch)
        fan_start(r, "PATCH", path, patch, patched, NULL);
    else
        fan_start(r, "DELETE", path, NULL, aborted, NULL);
    free(patch);
    fan_free(f);
}

static void job_delete(struct http_req *r, const char *id, size_t n)
{
    if (!job_id_ok(r, id, n))
        return;
    char path[96];
    snprintf(path, sizeof(path), "/v1/internal/jobs/%.*s", (int)n, id);
    fan_start(r, "GET", path, NULL, looked, NULL);
}

struct listing {
    char kind[16], bucket[64], state[16];
    int kn, bn, sn;
};

/* A job's state over its targets: the highest rank any of them says. */
static int state_rank(const char *st)
{
    static const char *const order[] = {"finished", "failed", "aborted", "running"};
    for (int i = 0; i < 4; i++)
        if (st && !strcmp(st, order[i]))
            return i;
    return -1;
}

/* One entry per job over the targets' lists; a job's state is "running"
 * while any target runs it, else "aborted" when any aborted it, else
 * "failed" when any had errors. */
static void listed(struct fan *f)
{
    struct listing *l = f->ctx;
    struct authz_who who;
    job_who(f->r, &who);
    json_t *by_id = json_object();
    size_t i, k;
    json_t *a, *e;
    json_array_foreach(f->answers, i, a)
        json_array_foreach(json_object_get(json_object_get(a, "body"), "jobs"), k, e) {
            const char *id = json_string_value(json_object_get(e, "id"));
            const char *st = json_string_value(json_object_get(e, "state"));
            json_t *have = id ? json_object_get(by_id, id) : NULL;
            if (!id || !st)
                continue;
            if (!have) {
                json_object_set(by_id, id, e);
                continue;
            }
            const char *hs = json_string_value(json_object_get(have, "state"));
            if (state_rank(st) > state_rank(hs))
                json_object_set_new(have, "state", json_string(st));
        }
    json_t *arr = json_array();
    const char *id;
    json_object_foreach(by_id, id, e) {
        const char *kind = json_string_value(json_object_get(e, "kind"));
        const char *bucket = json_string_value(json_object_get(e, "bucket"));
        const char *st = json_string_value(json_object_get(e, "state"));
        if ((l->kn >= 0 && (!kind || strcmp(kind, l->kind))) ||
            (l->bn >= 0 && (!bucket || strcmp(bucket, l->bucket))) ||
            (l->sn >= 0 && (!st || strcmp(st, l->state))) || !job_theirs(f->r->w->ctx, &who, e))
            continue;
        json_array_append(arr, e);
    }
    json_decref(by_id);
    http_reply_json(f->r, 200, json_pack("{s:o}", "jobs", arr));
    free(l);
    fan_free(f);
}

/* The jobs the targets know (so a restarted proxy, or another one, lists
 * what was started through any proxy). */
static void job_list(struct http_req *r)
{
    struct listing *l = xcalloc(1, sizeof(*l));
    l->kn = http_query_get(r, "kind", l->kind, sizeof(l->kind));
    l->bn = http_query_get(r, "bucket", l->bucket, sizeof(l->bucket));
    l->sn = http_query_get(r, "state", l->state, sizeof(l->state));
    fan_start(r, "GET", "/v1/internal/jobs", NULL, listed, l);
}

void jobs_route(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    if (!node_authenticate(&p->node, r))
        return;
    if (rlen == 0 || (rlen == 1 && rest[0] == '/')) {
        if (r->method == HTTP_M_POST)
            node_read_json(r, start_body);
        else if (r->method == HTTP_M_GET)
            job_list(r);
        else
            http_reply_error(r, 405, "use POST to start a job, GET to list them");
        return;
    }
    if (rest[0] == '/') {
        rest++;
        rlen--;
    }
    if (memchr(rest, '/', rlen) || rlen > 32) {
        http_reply_error(r, 404, "no such job endpoint");
        return;
    }
    if (r->method == HTTP_M_GET)
        job_get(r, rest, rlen);
    else if (r->method == HTTP_M_DELETE)
        job_delete(r, rest, rlen);
    else if (r->method == HTTP_M_PATCH)
        job_patch(r, rest, rlen);
    else
        http_reply_error(r, 405, "use GET to show a job, DELETE to abort it, PATCH to unpin it");
}
