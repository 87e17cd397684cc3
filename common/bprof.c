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
    /* "s3" (S3, S3-compatible stores, GCS's XML API), "azure" or "shoal" */
    {"provider", 0},
    {"endpoint", 0},             /* scheme://host[:port]; Azure: the blob service URL;
                                    shoal: a proxy's */
    {"region", 0},
    {"addressing", 0},           /* "path" or "virtual" */
    {"access_key", 0},           /* an identifier, shown as AWS's console shows it */
    {"secret_key", 1},
    {"session_token", 1},
    {"account", 0},              /* Azure: the storage account */
    {"account_key", 1},          /* Azure: its key (base64), for SharedKey */
    {"sas", 1},                  /* Azure: a SAS token instead of the key */
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

/* An endpoint: http(s)://host[:port][/path], no user information (it
 * would be shown back and in metrics) and no query. 0, or -1 with err. */
static int endpoint_check(const char *ep, char *err, size_t errlen)
{
    if (!ep)
        return 0;
    const char *h = !strncmp(ep, "http://", 7) ? ep + 7 : !strncmp(ep, "https://", 8) ? ep + 8
                                                                                     : NULL;
    size_t auth = h ? strcspn(h, "/") : 0;
    if (!h || !auth || memchr(h, '@', auth) || strpbrk(ep, "?# ")) {
        snprintf(err, errlen, "a backend profile's endpoint must be an http:// or https:// URL "
                              "without user information or query");
        return -1;
    }
    return 0;
}

/* base64 as Azure gives keys: groups of 4, '=' only as the last group's
 * padding. */
static int is_base64(const char *k)
{
    size_t n = strlen(k), pad = 0;
    while (pad < n && pad < 2 && k[n - 1 - pad] == '=')
        pad++;
    return n && n % 4 == 0 &&
           strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") ==
               n - pad;
}

/* An Azure profile: an account, and a base64 key or a SAS (or neither:
 * anonymous reads of public containers). */
static int az_check(const json_t *p, char *err, size_t errlen)
{
    if (endpoint_check(bprof_str(p, "endpoint"), err, errlen))
        return -1;
    if (!bprof_str(p, "account")) {
        snprintf(err, errlen, "an azure backend profile needs its storage account");
        return -1;
    }
    const char *k = bprof_str(p, "account_key");
    if (k && bprof_str(p, "sas")) {
        snprintf(err, errlen, "an azure backend profile has an account_key or a sas, not both");
        return -1;
    }
    if (k && !is_base64(k)) {
        snprintf(err, errlen, "an azure backend profile's account_key must be base64");
        return -1;
    }
    return 0;
}

/* An S3 profile: path or virtual addressing, a secret with its access
 * key, a session token with both. */
static int s3_check(const json_t *p, char *err, size_t errlen)
{
    if (endpoint_check(bprof_str(p, "endpoint"), err, errlen))
        return -1;
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

/* Another Shoal cluster: a proxy's URL (there is no default one), and an
 * access key of that cluster with its secret, or neither. */
static int shoal_check(const json_t *p, char *err, size_t errlen)
{
    if (!bprof_str(p, "endpoint")) {
        snprintf(err, errlen, "a shoal backend profile needs the endpoint of one of the "
                              "other cluster's proxies");
        return -1;
    }
    return s3_check(p, err, errlen);
}

/* The providers a profile can be for, each with the fields it takes
 * beyond provider and endpoint. */
static const struct provider {
    const char *name;
    const char *fields[5];
    int (*check)(const json_t *p, char *err, size_t errlen);
} providers[] = {
    {"s3", {"region", "addressing", "access_key", "secret_key", "session_token"}, s3_check},
    {"azure", {"account", "account_key", "sas"}, az_check},
    {"shoal", {"access_key", "secret_key"}, shoal_check},
};

static int takes(const struct provider *pv, const char *k)
{
    if (!strcmp(k, "provider") || !strcmp(k, "endpoint"))
        return 1;
    for (size_t i = 0; i < ARRAY_LEN(pv->fields) && pv->fields[i]; i++)
        if (!strcmp(k, pv->fields[i]))
            return 1;
    return 0;
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
            snprintf(err, errlen, "unknown backend profile field '%.64s' (provider, endpoint; "
                                  "s3: region, addressing, access_key, secret_key, "
                                  "session_token; azure: account, account_key, sas; "
                                  "shoal: access_key, secret_key)", k);
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
    const struct provider *pv = NULL;
    for (size_t i = 0; prov && i < ARRAY_LEN(providers); i++)
        if (!strcmp(prov, providers[i].name))
            pv = &providers[i];
    if (!pv) {
        snprintf(err, errlen, "a backend profile's provider must be \"s3\", \"azure\" or "
                              "\"shoal\"");
        return -1;
    }
    json_object_foreach((json_t *)p, k, v) {
        if (!takes(pv, k)) {
            snprintf(err, errlen, "field '%s' is not for a backend profile of provider %s",
                     k, prov);
            return -1;
        }
    }
    return pv->check(p, err, errlen);
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
