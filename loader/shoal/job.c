/*
 * job: `shoal job start|ls|show|wait|stop`, over the proxy's job API
 * (/v1/jobs). A start sends the job as the JSON the cluster takes
 * ({"kind","bucket","provider", one selection: "names", "template" or
 * "prefix", "key","latest", and for copies "to","prepend","dry_run", for
 * downloads "urls"}); the cluster decides what it serves (a kind it does
 * not serve yet is its 501, told as such).
 *
 * Waiting long-polls GET /v1/jobs/ID?wait=POLL_S, so the cluster answers
 * as soon as the job ends and at least every POLL_S seconds while it
 * runs, and each answer redraws the progress line. Figures are read by
 * name and any of them may be absent: done objects are the sum of the
 * outcome counters the answer has (common/jobkind.h: present, fetched,
 * evicted, copied, downloaded, errors), of the names selected.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "conn.h"
#include "jobkind.h"
#include "out.h"
#include "progress.h"

#define POLL_S 1                 /* a long-poll's wait */
#define POLL_SLACK_MS 30000      /* a long-poll's answer may take this much longer */
#define ID_MAX 256


static int ended(const char *state)
{
    return !strcmp(state, "finished") || !strcmp(state, "failed") || !strcmp(state, "aborted");
}

static void job_path(struct gbuf *u, const char *id)
{
    gbuf_str(u, "/v1/jobs/");
    conn_path_add(u, id, 0);
}

/* "s3://bucket" for a backend's bucket, the name for Shoal's own. */
static void bucket_label(const json_t *j, char *out, size_t n)
{
    const char *prov = out_str(j, "provider");
    if (prov[0] && strcmp(prov, "shoal"))
        snprintf(out, n, "%s://%s", prov, out_str(j, "bucket"));
    else
        snprintf(out, n, "%s", out_str(j, "bucket"));
}

/* A job's answer for people. */
static void print_job(const json_t *j)
{
    char b[300], t0[32], t1[32];
    bucket_label(j, b, sizeof(b));
    printf("job %s  %s  %s  %s\n", out_str(j, "id"), out_str(j, "kind"), b, out_str(j, "state"));
    out_numbers(j, "  ", "start_ns end_ns");
    int64_t s = out_int(j, "start_ns"), e = out_int(j, "end_ns");
    if (s) {
        out_time(t0, sizeof(t0), s);
        printf("  started %s", t0);
        if (e > s) {
            out_time(t1, sizeof(t1), e);
            printf("  ended %s (%.1f s)", t1, (double)(e - s) / 1e9);
        }
        printf("\n");
    }
    size_t i;
    json_t *v;
    const json_t *errs = json_object_get(j, "error_names");
    if (json_array_size(errs))
        printf("  failed names:\n");
    json_array_foreach(errs, i, v)
        printf("    %s: %s\n", out_str(v, "name"), out_str(v, "reason"));
    json_array_foreach(json_object_get(j, "targets"), i, v) {
        const json_t *body = json_object_get(v, "body");
        printf("  target %s  %s\n", out_str(v, "target"),
               body ? out_str(body, "state") : "no answer");
        out_numbers(body, "    ", "start_ns end_ns status");
    }
}

/* ---- wait ------------------------------------------------------------------------------ */

/* Feed an answer's figures to the progress line. */
static void progress_of(struct progress *p, const json_t *j)
{
    int64_t done = 0;            /* the cluster's count, else the outcomes added up */
    for (int c = 0; c < JC_N; c++)   /* the counters of how names ended (common/jobkind.h) */
        if (jobkind_ctr_outcome((enum job_ctr)c))
            done += out_int(j, jobkind_ctr_name((enum job_ctr)c));
    if (json_object_get(j, "done"))
        done = out_int(j, "done");
    /* every name selected is some target's: the selection is the total
     * (owned only grows to it as the targets look through it) */
    int64_t total = json_object_get(j, "selected") ? out_int(j, "selected")
                    : json_object_get(j, "owned")  ? out_int(j, "owned")
                                                   : -1;
    if (total >= 0 && out_int(j, "owned") > total)
        total = out_int(j, "owned");
    const json_t *rate = json_object_get(j, "mib_per_s");
    progress_job(p, done, total, (uint64_t)out_int(j, "bytes"), out_int(j, "errors"),
                 json_is_number(rate) ? json_number_value(rate) : -1,
                 ended(out_str(j, "state")));
}

/* Poll the job until it ends or timeout_s (<= 0: none) passes; the last
 * answer in *last. The exit status. */
static int poll_job(const struct args *a, const char *id, double timeout_s, json_t **last)
{
    struct progress p;
    char label[32];
    snprintf(label, sizeof(label), "job %.8s", id);
    progress_init(&p, PROGRESS_OBJECTS, label, a->quiet);
    uint64_t deadline = timeout_s > 0 ? mono_ms() + (uint64_t)(timeout_s * 1000) : 0;
    int rc = RC_OK;
    for (int first = 1;; first = 0) {
        long wait_s = first ? 0 : POLL_S;
        if (deadline) {
            uint64_t now = mono_ms();
            if (now >= deadline) {
                rc = RC_TIMEOUT;
                break;
            }
            /* whole seconds, rounded up: the last poll may end a little late */
            long left_s = (long)((deadline - now + 999) / 1000);
            if (wait_s > left_s)
                wait_s = left_s;
        }
        struct gbuf u = {0};
        job_path(&u, id);
        char w[24];
        snprintf(w, sizeof(w), "%ld", wait_s);
        conn_query(&u, "wait", w);
        struct conn_req q = {.method = "GET", .path = u.p,
                             .timeout_ms = wait_s * 1000 + POLL_SLACK_MS};
        struct conn_ans r;
        conn_do(&q, &r);
        gbuf_free(&u);
        char what[ID_MAX + 32];
        snprintf(what, sizeof(what), "reading job %s", id);
        rc = out_check(&r, what);
        json_t *j = rc ? NULL : out_parse(&r);
        conn_ans_free(&r);
        if (rc)
            break;
        json_decref(*last);
        *last = j;
        progress_of(&p, j);
        if (ended(out_str(j, "state")))
            break;
    }
    progress_end(&p, *last && !strcmp(out_str(*last, "state"), "finished"));
    return rc;
}

/* Wait for id to end: its answer on stdout, and the exit status: RC_OK
 * when it finished, RC_FAIL when it failed or was aborted, RC_TIMEOUT. */
static int wait_job(const struct args *a, const char *id)
{
    double timeout_s = 0;
    if (a->timeout) {
        char *end;
        timeout_s = strtod(a->timeout, &end);
        if (end == a->timeout || *end || !(timeout_s > 0) || !isfinite(timeout_s))
            return args_usage_error("--timeout is in seconds (> 0), not '%s'", a->timeout);
    }
    json_t *j = NULL;
    int rc = poll_job(a, id, timeout_s, &j);
    if (j) {
        if (a->json)
            out_json(j);
        else
            print_job(j);
    }
    const char *state = j ? out_str(j, "state") : "";
    if (rc == RC_TIMEOUT)
        fprintf(stderr, "shoal: job %s is still %s after %s s (it goes on)\n", id, state,
                a->timeout);
    else if (!rc && strcmp(state, "finished")) {
        fprintf(stderr, "shoal: job %s ended %s\n", id, state);
        rc = RC_FAIL;
    }
    json_decref(j);
    return rc;
}

int cmd_job_wait(const struct args *a)
{
    return wait_job(a, a->pos[0]);
}

/* ---- start ------------------------------------------------------------------------------ */

/* "a,b,c" as a JSON array of strings. */
static json_t *split_names(const char *s)
{
    json_t *arr = json_array();
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n)
            json_array_append_new(arr, json_stringn(s, n));
        s += n + (s[n] == ',');
    }
    return arr;
}

/* A size in bytes, with an optional K, M or G (KiB, MiB, GiB): 0, or -1. */
static int parse_size(const char *s, uint64_t *v)
{
    size_t n = strlen(s);
    int shift = 0;
    if (n && strchr("kKmMgG", s[n - 1]))
        shift = strchr("kK", s[n - 1]) ? 10 : strchr("mM", s[n - 1]) ? 20 : 30;
    n -= shift != 0;
    if (!n || parse_u64(s, n, v) || *v == 0 || *v > (UINT64_MAX >> 34))
        return -1;
    *v <<= shift;
    return 0;
}

/* A shard or reshard job's: SRC DST and the shards' options. 0, or RC_USAGE. */
static int pack_args(const struct args *a, const char *kind, json_t *spec)
{
    uint64_t size = 0, seed = 0;
    if (a->npos != 3 || !a->otmpl)
        return args_usage_error("usage: shoal job start %s SRC DST --output-template T "
                                "[options]", kind);
    if (a->shard_size && parse_size(a->shard_size, &size))
        return args_usage_error("--shard-size is a number of bytes (K, M or G after it)");
    if (a->seed && (!a->shuffle || parse_u64(a->seed, strlen(a->seed), &seed) ||
                    seed > INT64_MAX))
        return args_usage_error("--seed is a number, and goes with --shuffle");
    json_object_set_new(spec, "to", json_string(a->pos[2]));
    json_object_set_new(spec, "output_template", json_string(a->otmpl));
    if (a->shard_size)
        json_object_set_new(spec, "shard_size", json_integer((json_int_t)size));
    if (a->shuffle)
        json_object_set_new(spec, "shuffle", json_true());
    if (a->seed)
        json_object_set_new(spec, "seed", json_integer((json_int_t)seed));
    return 0;
}

/* A transform job's: the transform, its args and the renaming (--ext
 * .jpg=.png,.jpeg=.png). 0, or RC_USAGE. */
static int xform_args(const struct args *a, json_t *spec)
{
    if (a->npos != 3 || !a->transform)
        return args_usage_error("usage: shoal job start transform SRC DST --transform NAME "
                                "[options]");
    json_object_set_new(spec, "to", json_string(a->pos[2]));
    json_object_set_new(spec, "transform", json_string(a->transform));
    if (a->xargs)
        json_object_set_new(spec, "args", json_string(a->xargs));
    json_t *ext = json_object();
    for (const char *p = a->ext ? a->ext : ""; *p;) {
        size_t n = strcspn(p, ","), eq = strcspn(p, "=,");
        if (eq == n) {
            json_decref(ext);
            return args_usage_error("--ext takes .FROM=.TO pairs, comma-separated");
        }
        char *from = strndup(p, eq), *to = strndup(p + eq + 1, n - eq - 1);
        json_object_set_new(ext, from, json_string(to));
        free(from);
        free(to);
        p += n + (p[n] == ',');
    }
    if (json_object_size(ext))
        json_object_set(spec, "ext", ext);
    json_decref(ext);
    return 0;
}

/* The kind's positional arguments into spec. 0, or RC_USAGE. */
static int kind_args(const struct args *a, const char *kind, json_t *spec)
{
    json_object_set_new(spec, "kind", json_string(kind));
    json_object_set_new(spec, "bucket", json_string(a->pos[1]));
    if (a->concurrency)
        json_object_set_new(spec, "concurrency", json_integer(atoi(a->concurrency)));
    if (!strcmp(kind, "transform") && xform_args(a, spec))
        return RC_USAGE;
    if (!strcmp(kind, "copy") || !strcmp(kind, "transform")) {
        if (a->npos != 3)
            return args_usage_error("usage: shoal job start copy SRC DST [options]");
        json_object_set_new(spec, "to", json_string(a->pos[2]));
        if (a->prepend)
            json_object_set_new(spec, "prepend", json_string(a->prepend));
        if (a->dry_run)
            json_object_set_new(spec, "dry_run", json_true());
        return 0;
    }
    if (!strcmp(kind, "shard") || !strcmp(kind, "reshard"))
        return pack_args(a, kind, spec);
    if (!strcmp(kind, "download")) {
        if ((a->npos > 2) == (a->tmpl != NULL))
            return args_usage_error("usage: shoal job start download BUCKET (URL... | "
                                    "--template URLTEMPLATE) [--names n1,n2]");
        if (a->npos > 2) {
            json_t *urls = json_array();
            for (int i = 2; i < a->npos; i++)
                json_array_append_new(urls, json_string(a->pos[i]));
            json_object_set_new(spec, "urls", urls);
        }
        return 0;
    }
    if (a->npos != 2)
        return args_usage_error("usage: shoal job start %s BUCKET [options]", kind);
    return 0;
}

/* The job's JSON from the command line: a new object, or NULL (told). */
static json_t *job_spec(const struct args *a)
{
    int sel = (a->prefix != NULL) + (a->tmpl != NULL) + (a->names != NULL);
    if (sel > 1) {
        args_usage_error("--prefix, --template and --names select the names three ways: "
                         "give one");
        return NULL;
    }
    json_t *spec = json_object();
    if (kind_args(a, a->pos[0], spec)) {
        json_decref(spec);
        return NULL;
    }
    if (a->provider)
        json_object_set_new(spec, "provider", json_string(a->provider));
    if (a->prefix)
        json_object_set_new(spec, "prefix", json_string(a->prefix));
    if (a->tmpl)
        json_object_set_new(spec, "template", json_string(a->tmpl));
    if (a->names)
        json_object_set_new(spec, "names", split_names(a->names));
    if (a->key)
        json_object_set_new(spec, "key", json_string(a->key));
    if (a->latest)
        json_object_set_new(spec, "latest", json_true());
    return spec;
}

int cmd_job_start(const struct args *a)
{
    if (a->timeout && !a->wait)
        return args_usage_error("--timeout goes with --wait");
    json_t *spec = job_spec(a);
    if (!spec)
        return RC_USAGE;
    char *body = json_dumps(spec, JSON_COMPACT);
    json_decref(spec);
    struct conn_ans r;
    conn_call("POST", "/v1/jobs", body, &r);
    free(body);
    char what[300];
    snprintf(what, sizeof(what), "starting a %s job", a->pos[0]);
    int rc = out_check(&r, what);
    json_t *j = rc ? NULL : out_parse(&r);
    const char *id = out_str(j, "id");
    if (!rc && !id[0])
        rc = out_fail("the cluster's answer names no job: %.200s", r.body.p ? r.body.p : "");
    if (!rc && a->wait) {
        fprintf(stderr, "%s job %s%s\n", r.status == 200 ? "waiting for" : "started", id,
                r.status == 200 ? " (started before with this key)" : "");
        rc = wait_job(a, id);
    } else if (!rc && a->json) {
        out_json(j);
    } else if (!rc) {
        printf("%s %s job %s%s\n", r.status == 200 ? "already started:" : "started",
               a->pos[0], id, r.status == 200 ? " (same key)" : "");
    }
    json_decref(j);
    conn_ans_free(&r);
    return rc;
}

/* ---- ls, show, stop --------------------------------------------------------------------- */

int cmd_job_ls(const struct args *a)
{
    struct gbuf u = {0};
    gbuf_str(&u, "/v1/jobs");
    conn_query(&u, "kind", a->kind);
    conn_query(&u, "bucket", a->bucket);
    conn_query(&u, "state", a->state);
    int rc;
    json_t *j = out_ask("GET", u.p, NULL, "listing the jobs", &rc);
    gbuf_free(&u);
    if (j && a->json) {
        out_json(j);
    } else if (j) {
        printf("%-32s %-9s %-24s %-9s %s\n", "ID", "KIND", "BUCKET", "STATE", "STARTED");
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(j, "jobs"), i, v) {
            char b[300], t[32];
            bucket_label(v, b, sizeof(b));
            out_time(t, sizeof(t), out_int(v, "start_ns"));
            printf("%-32s %-9s %-24s %-9s %s\n", out_str(v, "id"), out_str(v, "kind"), b,
                   out_str(v, "state"), t);
        }
    }
    json_decref(j);
    return rc;
}

/* method on the job, told as "<verb> job ID" when it fails; for people
 * "<done> job ID", or the job when done is NULL. The exit status. */
static int job_do(const struct args *a, const char *method, const char *verb, const char *done)
{
    struct gbuf u = {0};
    char what[ID_MAX + 32];
    int rc;
    job_path(&u, a->pos[0]);
    snprintf(what, sizeof(what), "%s job %s", verb, a->pos[0]);
    json_t *j = out_ask(method, u.p, NULL, what, &rc);
    gbuf_free(&u);
    if (j && a->json)
        out_json(j);
    else if (j && done)
        printf("%s job %s\n", done, a->pos[0]);
    else if (j)
        print_job(j);
    json_decref(j);
    return rc;
}

int cmd_job_show(const struct args *a)
{
    return job_do(a, "GET", "reading", NULL);
}

int cmd_job_stop(const struct args *a)
{
    return job_do(a, "DELETE", "stopping", "stopped");
}
