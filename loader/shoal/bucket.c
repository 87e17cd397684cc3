/*
 * bucket: `shoal bucket ls|create|rm|props|set|summary`, over the native
 * bucket API (/v1/buckets). Properties go as the JSON the cluster takes:
 * create sends --props merged with --backend; set sends a JSON merge
 * PATCH built from key=value arguments, each value JSON when it parses
 * as JSON (true, 3, {"a":"b"}) and a string otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "conn.h"
#include "out.h"

void cmd_bucket_path(struct gbuf *u, const char *bucket, const char *sub)
{
    gbuf_str(u, "/v1/buckets/");
    conn_path_add(u, bucket, 0);
    gbuf_str(u, sub);
}

/* The properties' "key: value" lines. */
static void print_props(const json_t *b)
{
    char when[32];
    out_time(when, sizeof(when), out_int(b, "created"));
    printf("bucket %s  provider %s  created %s\n", out_str(b, "name"), out_str(b, "provider"),
           when);
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(b, "props"), key, v) {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        printf("  %s: %s\n", key, s ? s : "?");
        free(s);
    }
}

/* method on the bucket's sub path (a path or a query, e.g. "?props"; the
 * provider follows), told as "<verb> bucket 'B'" when it fails: the answer
 * (printed as it is with --json), or NULL with *rc the exit status. */
static json_t *bucket_ask(const struct args *a, const char *method, const char *sub,
                          const char *body, const char *verb, int *rc)
{
    struct gbuf u = {0};
    char what[320];
    cmd_bucket_path(&u, a->pos[0], sub);
    conn_query(&u, "provider", a->provider);
    snprintf(what, sizeof(what), "%s bucket '%s'", verb, a->pos[0]);
    json_t *j = out_ask(method, u.p, body, what, rc);
    gbuf_free(&u);
    if (j && a->json)
        out_json(j);
    return j;
}

/* bucket_ask, then for people "<done> bucket B", or the properties when
 * done is NULL. The exit status. */
static int bucket_do(const struct args *a, const char *method, const char *sub,
                     const char *body, const char *verb, const char *done)
{
    int rc;
    json_t *j = bucket_ask(a, method, sub, body, verb, &rc);
    if (j && !a->json && done)
        printf("%s bucket %s\n", done, a->pos[0]);
    else if (j && !a->json)
        print_props(j);
    json_decref(j);
    return rc;
}

int cmd_bucket_ls(const struct args *a)
{
    int rc;
    struct gbuf u = {0};
    gbuf_str(&u, "/v1/buckets");
    conn_query(&u, "provider", a->provider);
    json_t *j = out_ask("GET", u.p, NULL, "listing the buckets", &rc);
    gbuf_free(&u);
    if (!j)
        return rc;
    if (a->json) {
        out_json(j);
    } else {
        printf("%-24s %-8s %-32s %s\n", "NAME", "PROVIDER", "BACKEND", "CREATED");
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(j, "buckets"), i, b) {
            char when[32];
            out_time(when, sizeof(when), out_int(b, "created"));
            const char *backend = out_str(json_object_get(b, "props"), "backend");
            printf("%-24s %-8s %-32s %s\n", out_str(b, "name"), out_str(b, "provider"),
                   backend[0] ? backend : "-", when);
        }
    }
    json_decref(j);
    return RC_OK;
}

int cmd_bucket_create(const struct args *a)
{
    json_t *props = json_object();
    if (a->props) {
        json_decref(props);
        json_error_t e;
        props = json_loads(a->props, 0, &e);
        if (!json_is_object(props)) {
            json_decref(props);
            return args_usage_error("--props must be a JSON object: %s",
                                    props ? "not an object" : e.text);
        }
    }
    if (a->backend)
        json_object_set_new(props, "backend", json_string(a->backend));
    char *body = json_object_size(props) ? json_dumps(props, JSON_COMPACT) : NULL;
    json_decref(props);
    int rc = bucket_do(a, "PUT", "", body, "creating", "created");
    free(body);
    return rc;
}

int cmd_bucket_rm(const struct args *a)
{
    return bucket_do(a, "DELETE", "", NULL, "removing", "removed");
}

int cmd_bucket_props(const struct args *a)
{
    return bucket_do(a, "GET", "?props", NULL, "reading", NULL);
}

int cmd_bucket_set(const struct args *a)
{
    json_t *patch = json_object();
    for (int i = 1; i < a->npos; i++) {
        const char *eq = strchr(a->pos[i], '=');
        if (!eq || eq == a->pos[i]) {
            json_decref(patch);
            return args_usage_error("'%s' is not key=value (see shoal bucket set --help)",
                                    a->pos[i]);
        }
        json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
        char *key = xstrndup(a->pos[i], (size_t)(eq - a->pos[i]));
        json_object_set_new(patch, key, v ? v : json_string(eq + 1));
        free(key);
    }
    char *body = json_dumps(patch, JSON_COMPACT);
    json_decref(patch);
    int rc = bucket_do(a, "PATCH", "", body, "changing", NULL);
    free(body);
    return rc;
}

/* "present of total (pct%)" of a summary's counts. */
static void print_share(const char *what, const json_t *o, double pct, int sizes)
{
    char p[32], t[32];
    int64_t present = out_int(o, "present"), total = out_int(o, "total");
    if (sizes) {
        out_size(p, sizeof(p), (double)present);
        out_size(t, sizeof(t), (double)total);
    } else {
        snprintf(p, sizeof(p), "%lld", (long long)present);
        snprintf(t, sizeof(t), "%lld", (long long)total);
    }
    printf("  %-8s %s of %s held (%.1f%%)\n", what, p, t, pct);
}

int cmd_bucket_summary(const struct args *a)
{
    if (a->prefix && a->tmpl)
        return args_usage_error("--prefix and --template select the names two ways: give one");
    struct gbuf sub = {0};
    gbuf_str(&sub, "/summary");
    conn_query(&sub, "prefix", a->prefix);
    conn_query(&sub, "template", a->tmpl);
    int rc;
    json_t *j = bucket_ask(a, "GET", sub.p, NULL, "summing up", &rc);
    gbuf_free(&sub);
    if (j && !a->json) {
        printf("bucket %s", a->pos[0]);
        if (a->prefix || a->tmpl)
            printf("  %s %s", a->prefix ? "prefix" : "template", a->prefix ? a->prefix : a->tmpl);
        printf("  %s\n", json_is_true(json_object_get(j, "backed")) ? "backed" : "Shoal only");
        if (json_object_get(j, "selected"))
            printf("  %-8s %lld names\n", "selected", (long long)out_int(j, "selected"));
        double op = json_number_value(json_object_get(j, "objects_cached_pct"));
        double bp = json_number_value(json_object_get(j, "cached_pct"));
        print_share("objects", json_object_get(j, "objects"), op, 0);
        print_share("bytes", json_object_get(j, "bytes"), bp, 1);
    }
    json_decref(j);
    return rc;
}
