/*
 * batchreq: GetBatch requests (see batchreq.h), with jansson.
 */
#include <jansson.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "archidx.h"
#include "batchreq.h"
#include "http.h"
#include "util.h"
#include "xform.h"

static int bad(char *err, size_t errlen, const char *fmt, size_t i)
{
    snprintf(err, errlen, fmt, i);
    return -1;
}

static int name_ok(const char *s, size_t n)
{
    return n && n <= BATCHREQ_NAME_MAX && !memchr(s, 0, n);
}

/* Copy s (n bytes) into the arena at *at. */
static const char *keep(char *arena, size_t *at, const char *s, size_t n)
{
    char *p = arena + *at;
    memcpy(p, s, n);
    p[n] = 0;
    *at += n + 1;
    return p;
}

static int entry_size(json_t *e, size_t i, size_t *bytes, char *err, size_t errlen)
{
    if (!json_is_object(e))
        return bad(err, errlen, "entries[%zu] is not an object", i);
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v) {
        int str = !strcmp(k, "bucket") || !strcmp(k, "provider") || !strcmp(k, "name") ||
                  !strcmp(k, "archpath") || !strcmp(k, "transform") || !strcmp(k, "args");
        int num = !strcmp(k, "start") || !strcmp(k, "length");
        if (!str && !num)
            return bad(err, errlen, "entries[%zu] has a key Shoal does not know", i);
        if (str && !json_is_string(v))
            return bad(err, errlen, "entries[%zu]: bucket, provider, name, archpath, transform "
                                    "and args are strings", i);
        if (num && (!json_is_integer(v) || json_integer_value(v) < 0 ||
                    json_integer_value(v) > (1LL << 62)))
            return bad(err, errlen, "entries[%zu]: start and length are integers from 0", i);
        if (str) {
            size_t n = json_string_length(v);
            const char *s = json_string_value(v);
            if (!strcmp(k, "transform") ? !xform_valid_name(s, n)
                : !strcmp(k, "args")      ? !xform_args_ok(s, n)
                : !strcmp(k, "archpath")  ? !archidx_name_ok(s, n)
                                          : !name_ok(s, n))
                return bad(err, errlen, "entries[%zu] has an empty, too long or malformed name, "
                                        "transform or args", i);
            *bytes += n + 1;
        }
    }
    json_t *xf = json_object_get(e, "transform");
    if (xf && (json_object_get(e, "start") || json_object_get(e, "length")))
        return bad(err, errlen, "entries[%zu]: a range of a transformed entry is not "
                                "implemented (start, length)", i);
    if (!xf && json_object_get(e, "args"))
        return bad(err, errlen, "entries[%zu]: args go with a transform", i);
    if (!json_is_string(json_object_get(e, "bucket")) ||
        !json_is_string(json_object_get(e, "name")))
        return bad(err, errlen, "entries[%zu] needs a bucket and a name", i);
    return 0;
}

static int options(struct batch_req *q, json_t *j, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    q->kind = ARCHIDX_TAR;
    json_object_foreach(j, k, v) {
        if (!strcmp(k, "entries"))
            continue;
        if (!strcmp(k, "output")) {
            const char *o = json_string_value(v);
            q->kind = !o ? 0 : !strcmp(o, ".tar") ? ARCHIDX_TAR
                      : !strcmp(o, ".tar.gz") || !strcmp(o, ".tgz") ? ARCHIDX_TGZ
                      : !strcmp(o, ".zip") ? ARCHIDX_ZIP : 0;
            if (!q->kind)
                return bad(err, errlen, "output is one of .tar, .tar.gz, .tgz, .zip%.0zu", 0);
        } else if (!strcmp(k, "names")) {
            const char *o = json_string_value(v);
            q->name_only = !o ? -1 : !strcmp(o, "with-bucket") ? 0
                           : !strcmp(o, "name-only") ? 1 : !strcmp(o, "member-only") ? 2 : -1;
            if (q->name_only < 0)
                return bad(err, errlen, "names is with-bucket, name-only or member-only%.0zu", 0);
        } else if (!strcmp(k, "continue_on_error") || !strcmp(k, "manifest")) {
            if (!json_is_boolean(v))
                return bad(err, errlen, "continue_on_error and manifest are true or false%.0zu",
                           0);
            *(!strcmp(k, "manifest") ? &q->manifest : &q->continue_on_error) = json_is_true(v);
        } else {
            return bad(err, errlen, "the request has a key Shoal does not know%.0zu", 0);
        }
    }
    return 0;
}

int batchreq_parse(struct batch_req *q, const char *body, size_t len, char *err, size_t errlen)
{
    memset(q, 0, sizeof(*q));
    /* a bound before the tree is built: an entry with every field holds 9
     * commas, and a body of bare numbers must not become 60 million values */
    size_t commas = 0;
    for (size_t i = 0; i < len; i++)
        commas += body[i] == ',';
    if (commas > 10u * BATCHREQ_MAX) {
        snprintf(err, errlen, "a batch has at most %u entries", (unsigned)BATCHREQ_MAX);
        return -1;
    }
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(err, errlen, "the request is not JSON: %s", je.text);
        return -1;
    }
    json_t *es = json_object_get(j, "entries");
    int rc = -1;
    size_t n = json_array_size(es), bytes = 0;
    if (!json_is_object(j) || !json_is_array(es) || !n) {
        bad(err, errlen, "the request is an object with a list of entries%.0zu", 0);
        goto out;
    }
    if (n > BATCHREQ_MAX) {
        bad(err, errlen, "a batch has at most %zu entries", (size_t)BATCHREQ_MAX);
        goto out;
    }
    if (options(q, j, err, errlen))
        goto out;
    for (size_t i = 0; i < n; i++)
        if (entry_size(json_array_get(es, i), i, &bytes, err, errlen))
            goto out;
    q->e = xcalloc(n, sizeof(*q->e));
    q->strings = xmalloc(bytes + 6);
    size_t at = 0;
    const char *dflt = keep(q->strings, &at, "shoal", 5);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(es, i), *v;
        struct batch_entry *b = &q->e[i];
#define STR(f)                                                                             \
    ((v = json_object_get(e, f)) ? keep(q->strings, &at, json_string_value(v), json_string_length(v)) \
                                 : NULL)
        b->bucket = STR("bucket");
        b->name = STR("name");
        b->provider = STR("provider");
        b->archpath = STR("archpath");
        b->transform = STR("transform");
        b->args = STR("args");
#undef STR
        if (!b->provider)
            b->provider = dflt;
        b->start = (v = json_object_get(e, "start")) ? json_integer_value(v) : -1;
        b->length = (v = json_object_get(e, "length")) ? json_integer_value(v) : -1;
    }
    q->n = n;
    rc = 0;
out:
    json_decref(j);
    if (rc)
        batchreq_free(q);
    return rc;
}

void batchreq_free(struct batch_req *q)
{
    free(q->e);
    free(q->strings);
    memset(q, 0, sizeof(*q));
}

/* ,"key": and s as a JSON string */
static void put_str(struct gbuf *g, const char *key, const char *s)
{
    gbuf_strs(g, ",\"", key, "\":", NULL);
    gbuf_json_str(g, s, strlen(s));
}

static void put_int(struct gbuf *g, const char *key, int64_t v)
{
    gbuf_strs(g, ",\"", key, "\":", NULL);
    gbuf_i64(g, v);
}

/* Written as it goes rather than built as a jansson tree and dumped: it
 * runs for every peer of every batch, and the tree cost a malloc per key
 * (2-4% of a target's samples at 1,000 entries). The fuzzer parses it
 * back. */
char *batchreq_encode(const struct batch_req *q, const uint32_t *idx, size_t n, size_t *len)
{
    struct gbuf g = {0};
    gbuf_str(&g, "{\"entries\":[");
    for (size_t i = 0; i < n; i++) {
        const struct batch_entry *b = &q->e[idx[i]];
        gbuf_str(&g, i ? ",{\"bucket\":" : "{\"bucket\":");
        gbuf_json_str(&g, b->bucket, strlen(b->bucket));
        put_str(&g, "provider", b->provider);
        put_str(&g, "name", b->name);
        if (b->archpath)
            put_str(&g, "archpath", b->archpath);
        if (b->start >= 0)
            put_int(&g, "start", b->start);
        if (b->length >= 0)
            put_int(&g, "length", b->length);
        if (b->transform)
            put_str(&g, "transform", b->transform);
        if (b->args)
            put_str(&g, "args", b->args);
        gbuf_str(&g, "}");
    }
    gbuf_strs(&g, "],\"continue_on_error\":", q->continue_on_error ? "true" : "false", "}",
              NULL);
    *len = g.n;
    return gbuf_take(&g);
}

char *batchreq_member_name(const struct batch_req *q, const struct batch_entry *e)
{
    struct gbuf b = {0};
    if (!q->name_only) {
        gbuf_str(&b, e->bucket);
        gbuf_str(&b, "/");
    }
    if (q->name_only == 2 && e->archpath)
        return xstrdup(e->archpath);   /* member-only: a member as its archive names it */
    gbuf_str(&b, e->name);
    if (e->archpath) {
        gbuf_str(&b, "/");
        gbuf_str(&b, e->archpath);
    }
    return gbuf_take(&b);
}

static int reading;

int batchreq_door(struct http_req *r, size_t rlen)
{
    if (rlen) {
        http_reply_error(r, 404, "no such batch route");
        return 0;
    }
    if (r->method != HTTP_M_POST && r->method != HTTP_M_GET) {
        http_resp_header_str(r, "Allow", "GET, POST");
        http_reply_error(r, 405, "a batch is POST (or GET) with its request as the body");
        return 0;
    }
    return 1;
}

int batchreq_admit(struct http_req *r)
{
    if (__atomic_add_fetch(&reading, 1, __ATOMIC_RELAXED) <= BATCHREQ_READING)
        return 1;
    __atomic_sub_fetch(&reading, 1, __ATOMIC_RELAXED);
    http_resp_header_str(r, "Retry-After", "1");
    http_reply_error(r, 503, "%d batch requests are being read already", BATCHREQ_READING);
    return 0;
}

void batchreq_release(void)
{
    __atomic_sub_fetch(&reading, 1, __ATOMIC_RELAXED);
}

void batchreq_digest(const char *body, size_t len, char *hex)
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)body, len, d);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}
