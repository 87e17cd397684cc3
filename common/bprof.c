/*
 * bprof: profiles are checked against a table of known fields, as bucket
 * properties are (bmd.c): a misspelt "secret_kye" must be an error, not a
 * profile that signs anonymously.
 */
#include "bprof.h"

#include <stdio.h>
#include <string.h>

#include "bmd.h"
#include "util.h"

static const struct {
    const char *name;
    int secret;
} fields[] = {
    {"provider", 0},             /* "s3" (S3, S3-compatible stores, GCS's XML API) */
    {"endpoint", 0},             /* scheme://host[:port] */
    {"region", 0},
    {"addressing", 0},           /* "path" or "virtual" */
    {"access_key", 0},           /* an identifier, shown as AWS's console shows it */
    {"secret_key", 1},
    {"session_token", 1},
};

static int field(const char *k)
{
    for (size_t i = 0; i < ARRAY_LEN(fields); i++)
        if (!strcmp(k, fields[i].name))
            return (int)i;
    return -1;
}

int bprof_valid_name(const char *name, size_t n)
{
    return bmd_valid_name(name, n);
}

int bprof_is_secret(const char *k)
{
    int i = field(k);
    return i >= 0 && fields[i].secret;
}

const char *bprof_str(const json_t *p, const char *k)
{
    const char *v = json_string_value(json_object_get(p, k));
    return v && v[0] ? v : NULL;
}

int bprof_check(const json_t *p, char *err, size_t errlen)
{
    if (!json_is_object(p)) {
        snprintf(err, errlen, "a backend profile is a JSON object");
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)p, k, v) {
        if (field(k) < 0) {
            snprintf(err, errlen, "unknown backend profile field '%.64s' (provider, endpoint, "
                                  "region, addressing, access_key, secret_key, session_token)", k);
            return -1;
        }
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) ||
            json_string_length(v) > 4096) {
            snprintf(err, errlen, "backend profile field '%s' must be a string of at most "
                                  "4096 bytes", k);
            return -1;
        }
    }
    const char *prov = bprof_str(p, "provider");
    if (!prov || strcmp(prov, "s3")) {
        snprintf(err, errlen, "a backend profile's provider must be \"s3\"");
        return -1;
    }
    const char *ep = bprof_str(p, "endpoint");
    if (ep && strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) {
        snprintf(err, errlen, "a backend profile's endpoint must be an http:// or https:// URL");
        return -1;
    }
    const char *ad = bprof_str(p, "addressing");
    if (ad && strcmp(ad, "path") && strcmp(ad, "virtual")) {
        snprintf(err, errlen, "a backend profile's addressing must be path or virtual");
        return -1;
    }
    if (!bprof_str(p, "access_key") != !bprof_str(p, "secret_key")) {
        snprintf(err, errlen, "a backend profile has both access_key and secret_key, or "
                              "neither (anonymous requests)");
        return -1;
    }
    if (bprof_str(p, "session_token") && !bprof_str(p, "secret_key")) {
        snprintf(err, errlen, "a backend profile's session_token needs its access_key and "
                              "secret_key");
        return -1;
    }
    return 0;
}

json_t *bprof_public(const char *name, const json_t *p)
{
    json_t *o = json_pack("{s:s}", "name", name);
    json_t *secrets = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)p, k, v) {
        if (!bprof_is_secret(k))
            json_object_set(o, k, v);
        else if (json_string_length(v))
            json_array_append_new(secrets, json_string(k));
    }
    json_object_set_new(o, "secrets", secrets);
    return o;
}
