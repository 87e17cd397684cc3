/*
 * s3cors: CORS rules, kept and applied (see s3cors.h).
 *
 * Threads: any; nothing is shared.
 */
#include "s3cors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bmd.h"
#include "http.h"
#include "s3.h"
#include "s3xml.h"
#include "util.h"

static const char *const methods[] = {"GET", "PUT", "HEAD", "POST", "DELETE"};

/* The values of a repeated element (joined by S3XML_MULTI_SEP), each
 * trimmed of white space, as a JSON array (none: empty). */
static json_t *list_of(const char *joined)
{
    json_t *a = json_array();
    for (const char *p = joined ? joined : ""; joined && *p;) {
        size_t n = strcspn(p, S3XML_MULTI_SEP);
        char *v = xstrndup(p, n);
        char *s = v + strspn(v, " \t\r\n");
        size_t l = strlen(s);
        while (l && strchr(" \t\r\n", s[l - 1]))
            s[--l] = '\0';
        if (*s)
            json_array_append_new(a, json_string(s));
        free(v);
        p += n + (p[n] != '\0');
    }
    return a;
}

struct parse {
    json_t *rules;
    enum s3e *code;
    int status;
};

static int fail(struct parse *p, char *err, size_t errlen, const char *msg)
{
    *p->code = S3E_INVALID_REQUEST;
    p->status = 400;
    snprintf(err, errlen, "%s", msg);
    return -1;
}

static const char *rule_problem(const json_t *rule, char *buf, size_t n);

/* One CORSRule: ID, AllowedMethod, AllowedOrigin, AllowedHeader,
 * ExposeHeader, MaxAgeSeconds. */
static int one_rule(void *arg, char **f, char *err, size_t errlen)
{
    struct parse *p = arg;
    if (json_array_size(p->rules) >= S3CORS_RULES_MAX)
        return fail(p, err, errlen, "a CORS configuration has at most 100 rules");
    json_t *rule = json_pack("{s:o, s:o, s:o, s:o}", "methods", list_of(f[1]), "origins",
                             list_of(f[2]), "headers", list_of(f[3]), "expose", list_of(f[4]));
    json_array_append_new(p->rules, rule);
    if (f[0])
        json_object_set_new(rule, "id", json_string(f[0]));
    if (f[5]) {
        uint64_t age;
        if (parse_u64(f[5], strlen(f[5]), &age) || age > S3CORS_AGE_MAX)
            return fail(p, err, errlen, "MaxAgeSeconds must be a whole number of seconds");
        json_object_set_new(rule, "max_age", json_integer((json_int_t)age));
    }
    char buf[200];
    const char *bad = rule_problem(rule, buf, sizeof(buf));
    return bad ? fail(p, err, errlen, bad) : 0;
}

int s3cors_parse(const char *body, size_t len, json_t **rules, enum s3e *code, char *msg,
                 size_t msglen)
{
    static const struct s3xml_spec spec = {
        "CORSConfiguration",
        "CORSRule",
        {"ID", "AllowedMethod", "AllowedOrigin", "AllowedHeader", "ExposeHeader",
         "MaxAgeSeconds"},
        6,
        NULL,
        (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4),
    };
    struct parse p = {json_array(), code, 0};
    int n = s3xml_records(body, len, &spec, one_rule, &p, NULL, msg, msglen);
    if (n > 0) {
        *rules = p.rules;
        return 0;
    }
    json_decref(p.rules);
    if (!p.status) {
        *code = S3E_MALFORMED_XML;
        if (n == 0)
            snprintf(msg, msglen, "a CORS configuration needs a CORSRule");
    }
    return 400;
}

/* Does v hold a control character (none is in an origin, a method or a
 * header name, nor can an answer's XML carry it)? */
static int has_control(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 1;
    return 0;
}

/* A list of strings (required: not empty)? */
static int strings(const json_t *a, int required)
{
    if (!a)
        return !required;
    if (!json_is_array(a) || (required && !json_array_size(a)))
        return 0;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (!json_is_string(v) || !json_string_length(v) || has_control(json_string_value(v)))
            return 0;
    return 1;
}

/* What is wrong with one rule (a message in buf or static), or NULL: the
 * same answer whether it came as XML or as the native property. */
static const char *rule_problem(const json_t *rule, char *buf, size_t n)
{
    static const char *const keys[] = {"methods", "origins", "headers", "expose", "id",
                                       "max_age"};
    if (!json_is_object(rule))
        return "a CORS rule is an object";
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)rule, k, v) {
        int known = 0;
        for (size_t i = 0; i < ARRAY_LEN(keys); i++)
            known |= !strcmp(k, keys[i]);
        if (!known)
            return "a CORS rule has only methods, origins, headers, expose, id and max_age";
    }
    const json_t *ms = json_object_get(rule, "methods"), *os = json_object_get(rule, "origins");
    if (!json_array_size(ms) || !json_array_size(os))
        return "each CORSRule needs an AllowedMethod and an AllowedOrigin";
    const json_t *id = json_object_get(rule, "id"), *age = json_object_get(rule, "max_age");
    if (!strings(ms, 1) || !strings(os, 1) || !strings(json_object_get(rule, "headers"), 0) ||
        !strings(json_object_get(rule, "expose"), 0) ||
        (id && (!json_is_string(id) || has_control(json_string_value(id)))))
        return "a CORS rule's values are strings without control characters";
    if (age && (!json_is_integer(age) || json_integer_value(age) < 0 ||
                json_integer_value(age) > S3CORS_AGE_MAX))
        return "MaxAgeSeconds must be a whole number of seconds";
    size_t i;
    json_array_foreach(ms, i, v) {
        int known = 0;
        for (size_t m = 0; m < ARRAY_LEN(methods); m++)
            known |= !strcmp(json_string_value(v), methods[m]);
        if (!known) {
            snprintf(buf, n, "Found unsupported HTTP method in CORS config. Unsupported "
                             "method is %.40s", json_string_value(v));
            return buf;
        }
    }
    json_array_foreach(os, i, v) {
        const char *star = strchr(json_string_value(v), '*');
        if (star && strchr(star + 1, '*'))
            return "an AllowedOrigin can not have more than one wildcard";
    }
    return NULL;
}

int s3cors_check(const json_t *rules, char *err, size_t errlen)
{
    if (!json_is_array(rules) || json_array_size(rules) > S3CORS_RULES_MAX) {
        snprintf(err, errlen, "cors must be an array of at most %d rules", S3CORS_RULES_MAX);
        return -1;
    }
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule) {
        char buf[200];
        const char *bad = rule_problem(rule, buf, sizeof(buf));
        if (bad) {
            snprintf(err, errlen, "cors rule %zu: %s", i, bad);
            return -1;
        }
    }
    return 0;
}

static void elems(struct gbuf *b, const char *name, const json_t *list)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
        s3_xml_elem(b, name, json_string_value(v));
}

void s3cors_xml(struct gbuf *b, const json_t *rules)
{
    size_t i;
    json_t *rule;
    gbuf_str(b, S3_XML_HEAD "<CORSConfiguration xmlns=\"" S3_NS "\">");
    json_array_foreach(rules, i, rule) {
        gbuf_str(b, "<CORSRule>");
        const char *id = json_string_value(json_object_get(rule, "id"));
        if (id)
            s3_xml_elem(b, "ID", id);
        elems(b, "AllowedHeader", json_object_get(rule, "headers"));
        elems(b, "AllowedMethod", json_object_get(rule, "methods"));
        elems(b, "AllowedOrigin", json_object_get(rule, "origins"));
        elems(b, "ExposeHeader", json_object_get(rule, "expose"));
        json_t *age = json_object_get(rule, "max_age");
        if (age) {
            char num[32];
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(age));
            s3_xml_elem(b, "MaxAgeSeconds", num);
        }
        gbuf_str(b, "</CORSRule>");
    }
    gbuf_str(b, "</CORSConfiguration>\n");
}

/* Does s match pattern p (one '*' at most: any run of characters)? ci:
 * case-insensitive (header names). */
static int glob(const char *p, const char *s, int ci)
{
    const char *star = strchr(p, '*');
    size_t sl = strlen(s);
    if (!star)
        return ci ? !strcasecmp(p, s) : !strcmp(p, s);
    size_t pre = (size_t)(star - p), post = strlen(star + 1);
    if (sl < pre + post)
        return 0;
    int (*cmp)(const char *, const char *, size_t) = ci ? strncasecmp : strncmp;
    return !cmp(p, s, pre) && !cmp(star + 1, s + sl - post, post);
}

static int listed(const json_t *list, const char *v, int ci)
{
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p)
        if (glob(json_string_value(p), v, ci))
            return 1;
    return 0;
}

/* Every name of the comma-separated Access-Control-Request-Headers hdrs
 * allowed by rule's AllowedHeader patterns. */
static int headers_allowed(const json_t *rule, const char *hdrs)
{
    for (const char *p = hdrs ? hdrs : ""; *p;) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",");
        char *h = xstrndup(p, n);
        size_t l = strlen(h);
        while (l && (h[l - 1] == ' ' || h[l - 1] == '\t'))
            h[--l] = '\0';
        int ok = !*h || listed(json_object_get(rule, "headers"), h, 1);
        free(h);
        if (!ok)
            return 0;
        p += n;
    }
    return 1;
}

/* The first rule that allows origin with method (and, for a preflight,
 * the request headers), or NULL. *any: it allowed every origin ("*"). */
static const json_t *match(const json_t *rules, const char *origin, const char *method,
                           const char *req_headers, int preflight, int *any)
{
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule) {
        const json_t *os = json_object_get(rule, "origins");
        if (!listed(os, origin, 0) || !listed(json_object_get(rule, "methods"), method, 0) ||
            (preflight && !headers_allowed(rule, req_headers)))
            continue;
        size_t k;
        json_t *o;
        *any = 0;
        json_array_foreach(os, k, o)
            *any |= !strcmp(json_string_value(o), "*");
        return rule;
    }
    return NULL;
}

static void joined_header(struct http_req *r, const char *name, const json_t *list)
{
    struct gbuf b = {0};
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        if (i)
            gbuf_str(&b, ", ");
        gbuf_str(&b, json_string_value(v));
    }
    if (b.n)
        http_resp_header(r, name, "%.*s", (int)b.n, b.p);
    gbuf_free(&b);
}

/* The headers of rule's answer to origin. */
static void allow_headers(struct http_req *r, const json_t *rule, const char *origin, int any,
                          const char *req_headers)
{
    http_resp_header_str(r, "Access-Control-Allow-Origin", any ? "*" : origin);
    joined_header(r, "Access-Control-Allow-Methods", json_object_get(rule, "methods"));
    if (req_headers && *req_headers)
        http_resp_header_str(r, "Access-Control-Allow-Headers", req_headers);
    joined_header(r, "Access-Control-Expose-Headers", json_object_get(rule, "expose"));
    json_t *age = json_object_get(rule, "max_age");
    if (age)
        http_resp_header(r, "Access-Control-Max-Age", "%lld", (long long)json_integer_value(age));
    if (!any)
        http_resp_header(r, "Vary", "Origin, Access-Control-Request-Headers, "
                                    "Access-Control-Request-Method");
}

/* The bucket's rules (a new reference; NULL: none), and whether it exists. */
static json_t *rules_of(const char *bucket, int *exists)
{
    struct bmd *m = bmd_current();
    const struct bmd_bucket *bk = m && bucket ? bmd_find(m, BMD_PROVIDER_SHOAL, bucket) : NULL;
    json_t *rules = bk ? json_incref(json_object_get(bk->props, "cors")) : NULL;
    *exists = bk != NULL;
    bmd_unref(m);
    return rules;
}

void s3cors_preflight(struct http_req *r, const char *bucket)
{
    const char *origin = http_req_header(r, "Origin");
    const char *method = http_req_header(r, "Access-Control-Request-Method");
    const char *hdrs = http_req_header(r, "Access-Control-Request-Headers");
    if (!origin || !method) {
        s3_fail(r, S3E_BAD_REQUEST, "Insufficient information. Origin request header needed.");
        return;
    }
    int exists, any;
    json_t *rules = rules_of(bucket, &exists);
    const json_t *rule = json_array_size(rules) ? match(rules, origin, method, hdrs, 1, &any)
                                                : NULL;
    if (bucket && !exists)
        s3_fail(r, S3E_NO_SUCH_BUCKET, "the specified bucket does not exist");
    else if (!rule)
        s3_fail(r, S3E_CORS_RESPONSE, json_array_size(rules)
                                          ? "This CORS request is not allowed. This is usually "
                                            "because the evalution of Origin, request method / "
                                            "Access-Control-Request-Method or "
                                            "Access-Control-Request-Headers are not whitelisted "
                                            "by the resource's CORS spec."
                                          : "CORS is not enabled for this bucket.");
    else {
        allow_headers(r, rule, origin, any, hdrs);
        http_reply(r, 200, NULL, NULL, 0);
    }
    json_decref(rules);
}

void s3cors_actual(struct http_req *r, const char *bucket)
{
    const char *origin = http_req_header(r, "Origin");
    if (!origin || !bucket)
        return;
    int exists, any;
    json_t *rules = rules_of(bucket, &exists);
    const char *method = http_req_header(r, "Access-Control-Request-Method");
    const json_t *rule = json_array_size(rules)
                             ? match(rules, origin, method ? method : r->method_name, NULL, 0,
                                     &any)
                             : NULL;
    if (rule)
        allow_headers(r, rule, origin, any, NULL);
    json_decref(rules);
}
