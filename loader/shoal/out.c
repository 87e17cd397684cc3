/*
 * out: errors and exit statuses, JSON on stdout, sizes and times for
 * people (see out.h).
 */
#include "out.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "conn.h"
#include "nodeclient.h"
#include "url.h"

#define REASON_MAX 512

int out_json_mode;

/* One error: "shoal: <msg>" on stderr, and {"error","status"} on stdout
 * with --json. */
static void report(int status, const char *msg)
{
    fprintf(stderr, "shoal: %s\n", msg);
    if (out_json_mode) {
        json_t *j = json_pack("{s:s, s:i}", "error", msg, "status", status);
        out_json(j);
        json_decref(j);
    }
}

int out_fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    report(0, msg);
    return RC_FAIL;
}

/* The cluster's reason: the JSON error's message, else the body's first
 * line, else nothing. */
static void reason_of(const struct conn_ans *a, char *out, size_t n)
{
    json_t *j = out_parse(a);
    const char *e = json_string_value(json_object_get(j, "error"));
    if (e) {
        snprintf(out, n, "%s", e);
    } else {
        const char *b = a->body.p ? a->body.p : "";
        size_t len = strcspn(b, "\r\n");
        snprintf(out, n, "%.*s", (int)(len > 200 ? 200 : len), b);
    }
    json_decref(j);
}

/* nodeclient's reason without the "host:port: " it starts with, lower case first. */
static void transport_reason(const struct conn_ans *a, char *origin, size_t olen,
                             char *out, size_t n)
{
    char host[NODECLIENT_HOST_MAX];
    int port;
    const char *path;
    const char *err = a->err;
    if (!url_split(a->url, host, sizeof(host), &port, &path)) {
        snprintf(origin, olen, "%.*s", (int)(path - a->url), a->url);
        char hp[NODECLIENT_HOST_MAX + 16];
        snprintf(hp, sizeof(hp), "%s:%d: ", host, port);
        if (!strncmp(err, hp, strlen(hp)))
            err += strlen(hp);
    } else {
        snprintf(origin, olen, "%s", a->url);
    }
    snprintf(out, n, "%s", err);
    if (out[0] && isupper((unsigned char)out[0]) && !isupper((unsigned char)out[1]))
        out[0] = (char)tolower((unsigned char)out[0]);
}

int out_check(const struct conn_ans *a, const char *what)
{
    char reason[REASON_MAX], msg[CONN_URL_MAX + REASON_MAX * 2];
    if (a->status >= 200 && a->status < 300)
        return RC_OK;
    if (a->status == 0) {
        char origin[CONN_URL_MAX];
        transport_reason(a, origin, sizeof(origin), reason, sizeof(reason));
        snprintf(msg, sizeof(msg), "cannot reach %s: %s", origin, reason);
        report(0, msg);
        return RC_UNREACHABLE;
    }
    reason_of(a, reason, sizeof(reason));
    if (a->status == 401 || a->status == 403) {
        snprintf(msg, sizeof(msg), "the cluster refused the credentials (%d): %s", a->status,
                 reason[0] ? reason : "no reason given");
        report(a->status, msg);
        return RC_AUTH;
    }
    if (a->status == 501)
        snprintf(msg, sizeof(msg), "%s: the cluster does not implement this yet (501): %s",
                 what, reason);
    else if (a->status >= 300 && a->status < 400)
        snprintf(msg, sizeof(msg), "%s: redirected once too often or to an address the client "
                 "cannot follow (%d)", what, a->status);
    else
        snprintf(msg, sizeof(msg), "%s failed (%d)%s%s", what, a->status, reason[0] ? ": " : "",
                 reason);
    report(a->status, msg);
    return RC_FAIL;
}

json_t *out_ask(const char *method, const char *path, const char *json_body, const char *what,
                int *rc)
{
    struct conn_ans r;
    conn_call(method, path, json_body, &r);
    *rc = out_check(&r, what);
    json_t *j = *rc ? NULL : out_parse(&r);
    if (!*rc && !j)
        j = json_object();
    conn_ans_free(&r);
    return j;
}

json_t *out_parse(const struct conn_ans *a)
{
    if (!a->body.p || !a->body.n)
        return NULL;
    return json_loadb(a->body.p, a->body.n, JSON_DECODE_ANY, NULL);
}

void out_json(const json_t *j)
{
    json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
    fputc('\n', stdout);
    fflush(stdout);
}

int out_json_answer(const struct conn_ans *a)
{
    json_t *j = out_parse(a);
    if (!j)
        j = json_object();
    out_json(j);
    json_decref(j);
    return RC_OK;
}

void out_size(char *buf, size_t n, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0f B", bytes);
    else
        snprintf(buf, n, "%.1f %s", bytes, units[u]);
}

void out_time(char *buf, size_t n, int64_t t)
{
    time_t s = (time_t)(t > 100000000000LL ? t / 1000000000LL : t);
    struct tm tm;
    localtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
}

int64_t out_int(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v)
           : json_is_real(v)  ? (int64_t)json_real_value(v)
                              : 0;
}

const char *out_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

void out_numbers(const json_t *o, const char *indent, const char *skip)
{
    const char *key;
    const json_t *v;
    int any = 0;
    json_object_foreach((json_t *)o, key, v) {
        if (!json_is_number(v) || args_listed(key, skip))
            continue;
        printf("%s%s", any ? "  " : indent, key);
        any = 1;
        if (json_is_real(v)) {
            printf(" %.2f", json_real_value(v));
        } else {
            printf(" %lld", (long long)json_integer_value(v));
            if (strstr(key, "bytes")) {
                char sz[32];
                out_size(sz, sizeof(sz), (double)json_integer_value(v));
                printf(" (%s)", sz);
            }
        }
    }
    if (any)
        printf("\n");
}
