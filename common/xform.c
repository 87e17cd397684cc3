/*
 * xform: a transform's spec is checked against its two shapes; anything
 * else is refused, so a misspelt field is an error rather than a
 * transform that does something else.
 */
#include "xform.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "bmd.h"

int xform_valid_name(const char *name, size_t n)
{
    return bmd_valid_name(name, n);
}

int xform_args_ok(const char *s, size_t n)
{
    if (n > XFORM_QUERY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-._~%=&+", s[i]))
            return 0;
    return 1;
}

/* A command: an array of 1..XFORM_ARGS_MAX strings without NUL. */
static int command_check(const json_t *c, char *err, size_t errlen)
{
    size_t n = json_array_size(c);
    if (!json_is_array(c) || n < 1 || n > XFORM_ARGS_MAX) {
        snprintf(err, errlen, "a transform's command is an array of 1..%d strings",
                 XFORM_ARGS_MAX);
        return -1;
    }
    size_t i;
    json_t *a;
    json_array_foreach(c, i, a) {
        if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a) ||
            json_string_length(a) > 4096 || (i == 0 && !json_string_length(a))) {
            snprintf(err, errlen, "a transform's command holds strings of at most 4096 bytes "
                                  "(argument %zu is not one)", i);
            return -1;
        }
    }
    const char *prog = json_string_value(json_array_get(c, 0));
    if (prog[0] != '/' && strchr(prog, '/')) {   /* it runs in its own working directory */
        snprintf(err, errlen, "a transform's program is an absolute path or a name looked up "
                              "in PATH, not a relative path ('%.200s')", prog);
        return -1;
    }
    return 0;
}

/* A URL: http(s)://host[:port][/path], no user information or query. */
static int url_check(const json_t *u, char *err, size_t errlen)
{
    const char *s = json_string_value(u);
    const char *h = !s                         ? NULL
                    : !strncmp(s, "http://", 7)  ? s + 7
                    : !strncmp(s, "https://", 8) ? s + 8
                                                 : NULL;
    size_t auth = h ? strcspn(h, "/") : 0;
    if (!h || !auth || memchr(h, '@', auth) || strpbrk(s, "?# ") ||
        strlen(s) != json_string_length(u) || strlen(s) > 2048) {
        snprintf(err, errlen, "a transform's url is an http:// or https:// URL without user "
                              "information or query");
        return -1;
    }
    return 0;
}

int xform_check(const json_t *spec, char *err, size_t errlen)
{
    if (!json_is_object(spec)) {
        snprintf(err, errlen, "a transform is a JSON object: {\"command\": [...]} or "
                              "{\"url\": \"http://...\"}");
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)spec, k, v) {
        if (strcmp(k, "command") && strcmp(k, "url")) {
            snprintf(err, errlen, "unknown transform field '%.64s' (command or url)", k);
            return -1;
        }
    }
    const json_t *c = json_object_get(spec, "command"), *u = json_object_get(spec, "url");
    if (!c == !u) {
        snprintf(err, errlen, "a transform has a command or a url, one of them");
        return -1;
    }
    return c ? command_check(c, err, errlen) : url_check(u, err, errlen);
}

json_t *xform_public(const char *name, const json_t *spec)
{
    json_t *o = json_deep_copy(spec);
    json_object_set_new(o, "name", json_string(name));
    return o;
}
