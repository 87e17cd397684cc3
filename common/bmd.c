/*
 * bmd: buckets are kept sorted by (provider, name), so lookups are a binary
 * search and two equal snapshots encode identically.
 *
 * Properties are validated against a table of known keys: a typo in a
 * property must be an error, not a silently ignored setting.
 */
#include "bmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bprof.h"
#include "log.h"
#include "s3acl.h"
#include "s3cors.h"
#include "s3own.h"
#include "util.h"
#include "xform.h"

static struct snap_holder holder = SNAP_HOLDER_INIT;

/* Known bucket properties and the JSON type each takes (JSON_TRUE: a
 * boolean; JSON_NULL: more than one, its own check decides). */
static const struct {
    const char *name;
    json_type type;
} props_known[] = {
    {"labels", JSON_OBJECT},     /* free-form string labels for operators */
    {"backend", JSON_STRING},    /* "s3://bucket", "azure://container", "shoal://bucket" or
                                    "http(s)://origin/base" */
    {"endpoint", JSON_STRING},   /* S3 endpoint URL for this bucket */
    {"region", JSON_STRING},     /* S3 region for this bucket */
    {"location", JSON_STRING},   /* the LocationConstraint an S3 client created it with */
    {"owner", JSON_STRING},      /* the access key that created it through S3 (s3own.h) */
    {"acl", JSON_NULL},          /* a canned ACL's name or grants (s3acl.h) */
    {"addressing", JSON_STRING}, /* "path" or "virtual" */
    {"validate_warm_get", JSON_TRUE}, /* boolean: see bmd_props_check */
    {"lru", JSON_TRUE},          /* boolean: false keeps Shoal's copies from eviction */
    {"verify_reads", JSON_TRUE}, /* boolean: false turns off GETs' checks of their blocks */
    {"write_policy", JSON_STRING}, /* "write-through" or "write-back" */
    {"mirror", JSON_OBJECT},     /* {"copies": N}: full copies on N targets */
    {"ec", JSON_OBJECT},         /* {"data", "parity", "objsize_limit"}: erasure coding */
    {"versioning", JSON_STRING}, /* "enabled" or "suspended" (S3 versioning; target/api/vers.h) */
    {"profile", JSON_STRING},    /* the backend profile its backend is reached with (bprof.h) */
    {"cors", JSON_ARRAY},        /* its S3 CORS rules (s3cors.h) */
    {"public_access_block", JSON_OBJECT}, /* its S3 PublicAccessBlock (s3own.h) */
    {"object_ownership", JSON_STRING},    /* its S3 OwnershipControls (s3own.h) */
};

/* ec: data 1..BMD_EC_DATA_MAX, parity 1..BMD_EC_PARITY_MAX, objsize_limit
 * a size in bytes (optional), nothing else. */
static int ec_check(const json_t *v, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        json_int_t lo, hi;
    } keys[] = {{"data", 1, BMD_EC_DATA_MAX},
                {"parity", 1, BMD_EC_PARITY_MAX},
                {"objsize_limit", 0, (json_int_t)1 << 50}};
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        size_t i;
        for (i = 0; i < ARRAY_LEN(keys); i++)
            if (!strcmp(k, keys[i].name))
                break;
        if (i == ARRAY_LEN(keys)) {
            snprintf(err, errlen, "unknown ec property '%s' (data, parity, objsize_limit)", k);
            return -1;
        }
        if (!json_is_integer(x) || json_integer_value(x) < keys[i].lo ||
            json_integer_value(x) > keys[i].hi) {
            snprintf(err, errlen, "ec.%s must be a whole number %lld..%lld", k,
                     (long long)keys[i].lo, (long long)keys[i].hi);
            return -1;
        }
    }
    if (!json_object_get(v, "data") || !json_object_get(v, "parity")) {
        snprintf(err, errlen, "ec needs \"data\" and \"parity\" slice counts");
        return -1;
    }
    return 0;
}

int bmd_ec(const struct bmd_bucket *bk, struct bmd_ec *ec)
{
    json_t *v = json_object_get(bk->props, "ec");
    json_int_t d = json_integer_value(json_object_get(v, "data"));
    json_int_t p = json_integer_value(json_object_get(v, "parity"));
    json_t *lim = json_object_get(v, "objsize_limit");
    if (d < 1 || d > BMD_EC_DATA_MAX || p < 1 || p > BMD_EC_PARITY_MAX)
        return 0;
    ec->d = (int)d;
    ec->p = (int)p;
    ec->limit = json_is_integer(lim) ? (uint64_t)json_integer_value(lim) : BMD_EC_LIMIT;
    return 1;
}

/* mirror: {"copies": 1..BMD_COPIES_MAX} and nothing else. */
static int mirror_check(const json_t *v, char *err, size_t errlen)
{
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (strcmp(k, "copies")) {
            snprintf(err, errlen, "unknown mirror property '%s' (copies)", k);
            return -1;
        }
    }
    json_t *c = json_object_get(v, "copies");
    if (!json_is_integer(c) || json_integer_value(c) < 1 ||
        json_integer_value(c) > BMD_COPIES_MAX) {
        snprintf(err, errlen, "mirror.copies must be a whole number 1..%d", BMD_COPIES_MAX);
        return -1;
    }
    return 0;
}

int bmd_has_backend(const struct bmd_bucket *bk)
{
    return bmd_backend_scheme(bk, NULL) != NULL;
}

/* The backends a bucket's backend property can name, besides an
 * http(s):// origin: its prefix, the kind of store, what it names there,
 * and whether it takes write-back (its listings can start after a name,
 * which the upload queue's pages need). */
static const struct scheme {
    const char *prefix, *name, *what;
    int write_back;
} schemes[] = {
    {"s3://", "s3", "bucket", 1},
    {"azure://", "azure", "container", 0},
    {"shoal://", "shoal", "bucket (or PROVIDER/BUCKET) of another Shoal cluster", 1},
};

static const struct scheme *scheme_of(const char *spec)
{
    for (size_t i = 0; spec && i < ARRAY_LEN(schemes); i++)
        if (!strncmp(spec, schemes[i].prefix, strlen(schemes[i].prefix)))
            return &schemes[i];
    return NULL;
}

const char *bmd_backend_scheme(const struct bmd_bucket *bk, const char **remote)
{
    const char *spec = json_string_value(json_object_get(bk->props, "backend"));
    const char *r = NULL, *scheme = NULL;
    const struct scheme *sc = scheme_of(spec);
    if (!strcmp(bk->provider, BMD_PROVIDER_S3) || !strcmp(bk->provider, BMD_PROVIDER_AZURE)) {
        scheme = !strcmp(bk->provider, BMD_PROVIDER_S3) ? "s3" : "azure";
        r = bk->name;
    } else if (sc) {
        scheme = sc->name;
        r = spec + strlen(sc->prefix);
    } else if (spec && spec[0]) {
        scheme = "http";
        r = spec;
    }
    if (remote)
        *remote = r;
    return scheme;
}

/* Does a bucket of this backend scheme (NULL: none) take write-back? */
static int scheme_writes_back(const char *scheme)
{
    for (size_t i = 0; scheme && i < ARRAY_LEN(schemes); i++)
        if (!strcmp(scheme, schemes[i].name))
            return schemes[i].write_back;
    return !scheme;
}

int bmd_write_back(const struct bmd_bucket *bk)
{
    const char *wp = json_string_value(json_object_get(bk->props, "write_policy"));
    const char *sch = bmd_backend_scheme(bk, NULL);
    return sch && wp && !strcmp(wp, "write-back") && scheme_writes_back(sch);
}

int bmd_copies(const struct bmd_bucket *bk)
{
    json_int_t c = json_integer_value(json_object_get(json_object_get(bk->props, "mirror"),
                                                      "copies"));
    return c >= 1 && c <= BMD_COPIES_MAX ? (int)c : 1;
}

static void bmd_destroy(struct snap *s)
{
    struct bmd *b = (struct bmd *)s;
    for (int i = 0; i < b->n; i++) {
        free(b->b[i].provider);
        free(b->b[i].name);
        json_decref(b->b[i].props);
    }
    free(b->b);
    json_decref(b->profiles);
    json_decref(b->transforms);
    free(b);
}

void bmd_unref(struct bmd *b)
{
    if (b)
        snap_unref(&b->snap);
}

struct bmd *bmd_new(int64_t version)
{
    struct bmd *b = xcalloc(1, sizeof(*b));
    snap_init(&b->snap, version, bmd_destroy);
    b->profiles = json_object();
    b->transforms = json_object();
    return b;
}

struct bmd *bmd_clone(const struct bmd *src)
{
    struct bmd *b = bmd_new(src->snap.version);
    b->b = xcalloc((size_t)src->n + 1, sizeof(*b->b));
    for (int i = 0; i < src->n; i++) {
        b->b[i].provider = xstrdup(src->b[i].provider);
        b->b[i].name = xstrdup(src->b[i].name);
        b->b[i].created = src->b[i].created;
        b->b[i].props = json_deep_copy(src->b[i].props);
    }
    b->n = src->n;
    json_decref(b->profiles);
    b->profiles = json_deep_copy(src->profiles);
    json_decref(b->transforms);
    b->transforms = json_deep_copy(src->transforms);
    return b;
}

static int cmp(const struct bmd_bucket *bk, const char *provider, const char *name)
{
    int c = strcmp(bk->provider, provider);
    return c ? c : strcmp(bk->name, name);
}

static int pos(const struct bmd *b, const char *provider, const char *name, int *found)
{
    int lo = 0, hi = b->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = cmp(&b->b[mid], provider, name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

const struct bmd_bucket *bmd_find(const struct bmd *b, const char *provider,
                                  const char *name)
{
    int found;
    int i = pos(b, provider, name, &found);
    return found ? &b->b[i] : NULL;
}

int bmd_add(struct bmd *b, const char *provider, const char *name, json_t *props,
            int64_t created)
{
    int found;
    int i = pos(b, provider, name, &found);
    if (found)
        return -EEXIST;
    b->b = xrealloc(b->b, sizeof(*b->b) * (size_t)(b->n + 1));
    memmove(&b->b[i + 1], &b->b[i], sizeof(*b->b) * (size_t)(b->n - i));
    b->n++;
    b->b[i].provider = xstrdup(provider);
    b->b[i].name = xstrdup(name);
    b->b[i].created = created;
    b->b[i].props = props ? json_deep_copy(props) : json_object();
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(b->b[i].props, tmp, k, v)
        if (json_is_null(v))     /* a null property is none */
            json_object_del(b->b[i].props, k);
    return 0;
}

int bmd_del(struct bmd *b, const char *provider, const char *name)
{
    int found;
    int i = pos(b, provider, name, &found);
    if (!found)
        return -ENOENT;
    free(b->b[i].provider);
    free(b->b[i].name);
    json_decref(b->b[i].props);
    memmove(&b->b[i], &b->b[i + 1], sizeof(*b->b) * (size_t)(b->n - i - 1));
    b->n--;
    return 0;
}

int bmd_patch(struct bmd *b, const char *provider, const char *name, const json_t *patch)
{
    int found;
    int i = pos(b, provider, name, &found);
    if (!found)
        return -ENOENT;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v) {
        if (json_is_null(v))     /* a JSON merge patch: null removes the property */
            json_object_del(b->b[i].props, k);
        else
            json_object_set(b->b[i].props, k, v);
    }
    return 0;
}

const json_t *bmd_profile(const struct bmd *b, const char *name)
{
    return json_object_get(b->profiles, name);
}

void bmd_profile_set(struct bmd *b, const char *name, json_t *p)
{
    json_object_set(b->profiles, name, p);
}

int bmd_profile_del(struct bmd *b, const char *name)
{
    return json_object_del(b->profiles, name) ? -ENOENT : 0;
}

const json_t *bmd_transform(const struct bmd *b, const char *name)
{
    return json_object_get(b->transforms, name);
}

void bmd_transform_set(struct bmd *b, const char *name, json_t *t)
{
    json_object_set(b->transforms, name, t);
}

int bmd_transform_del(struct bmd *b, const char *name)
{
    return json_object_del(b->transforms, name) ? -ENOENT : 0;
}

const struct bmd_bucket *bmd_profile_user(const struct bmd *b, const char *name)
{
    for (int i = 0; i < b->n; i++) {
        const char *p = json_string_value(json_object_get(b->b[i].props, "profile"));
        if (p && !strcmp(p, name))
            return &b->b[i];
    }
    return NULL;
}

int bmd_bucket_check(const struct bmd *b, const struct bmd_bucket *bk, char *err,
                     size_t errlen)
{
    const char *wp = json_string_value(json_object_get(bk->props, "write_policy"));
    const char *sch = bmd_backend_scheme(bk, NULL);
    if (wp && !strcmp(wp, "write-back") && !scheme_writes_back(sch)) {
        snprintf(err, errlen, "write-back needs an S3 or Shoal backend (an Azure container is "
                              "written through, an HTTP origin is read-only)");
        return -1;
    }
    const char *name = json_string_value(json_object_get(bk->props, "profile"));
    if (!name && sch && !strcmp(sch, "shoal")) {
        snprintf(err, errlen, "a shoal:// backend names the other cluster by a profile "
                              "(\"profile\": a backend profile of provider shoal)");
        return -1;
    }
    if (!name)
        return 0;
    const json_t *p = bmd_profile(b, name);
    if (!p) {
        snprintf(err, errlen, "no backend profile '%s' (PUT /v1/backends/%s first)", name, name);
        return -1;
    }
    const char *scheme = bmd_backend_scheme(bk, NULL);
    if (!scheme || strcmp(bprof_str(p, "provider"), scheme)) {
        snprintf(err, errlen, "backend profile '%s' is for %s backends; bucket '%s' has %s%s",
                 name, bprof_str(p, "provider"), bk->name,
                 !scheme ? "no backend" : !strcmp(scheme, "http") ? "an HTTP origin" : "an ",
                 scheme && strcmp(scheme, "http") ? scheme : "");
        return -1;
    }
    return 0;
}

int bmd_buckets_check(const struct bmd *b, char *err, size_t errlen)
{
    for (int i = 0; i < b->n; i++)
        if (bmd_bucket_check(b, &b->b[i], err, errlen))
            return -1;
    return 0;
}

int bmd_valid_name(const char *name, size_t n)
{
    if (n < 1 || n > 63)
        return 0;
    if (!strncmp(name, ".", n) || !strncmp(name, "..", n))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (i == 0 && !alnum)
            return 0;
        if (!alnum && c != '.' && c != '-' && c != '_')
            return 0;
    }
    return 1;
}

int bmd_valid_provider(const char *provider)
{
    return !strcmp(provider, BMD_PROVIDER_SHOAL) || !strcmp(provider, BMD_PROVIDER_S3) ||
           !strcmp(provider, BMD_PROVIDER_AZURE);
}

/* A shoal:// backend's BUCKET or PROVIDER/BUCKET. */
static int shoal_remote_valid(const char *r)
{
    const char *slash = strchr(r, '/');
    if (!slash)
        return bmd_valid_name(r, strlen(r));
    char prov[16];
    size_t pl = (size_t)(slash - r);
    if (pl >= sizeof(prov))
        return 0;
    memcpy(prov, r, pl);
    prov[pl] = '\0';
    return bmd_valid_provider(prov) && bmd_valid_name(slash + 1, strlen(slash + 1));
}

/* A backend property: s3://BUCKET, azure://CONTAINER, shoal://[PROVIDER/]BUCKET
 * or an http(s):// URL. */
static int backend_check(const char *b, char *err, size_t errlen)
{
    const struct scheme *sc = scheme_of(b);
    if (!sc && strncmp(b, "http://", 7) && strncmp(b, "https://", 8)) {
        snprintf(err, errlen, "backend must be s3://BUCKET, azure://CONTAINER, "
                              "shoal://[PROVIDER/]BUCKET or an http(s):// URL");
        return -1;
    }
    const char *r = sc ? b + strlen(sc->prefix) : NULL;
    if (sc && !(!strcmp(sc->name, "shoal") ? shoal_remote_valid(r)
                                           : bmd_valid_name(r, strlen(r)))) {
        snprintf(err, errlen, "backend '%.100s' names an invalid %s", b, sc->what);
        return -1;
    }
    return 0;
}

/* The S3 configurations kept as properties (ACL, CORS, PublicAccessBlock,
 * OwnershipControls), checked as their XML is: 0 or -1 with err. */
static int s3_prop_check(const char *k, const json_t *v, char *err, size_t errlen)
{
    if (!strcmp(k, "acl"))
        return s3acl_check(v, err, errlen);
    if (!strcmp(k, "cors"))
        return s3cors_check(v, err, errlen);
    if (!strcmp(k, "public_access_block"))
        return s3own_pab_check(v, err, errlen);
    if (!strcmp(k, "object_ownership") && !s3own_ownership_valid(json_string_value(v))) {
        snprintf(err, errlen, "object_ownership must be BucketOwnerEnforced, "
                              "BucketOwnerPreferred or ObjectWriter");
        return -1;
    }
    return 0;
}

int bmd_props_check(const json_t *props, char *err, size_t errlen)
{
    if (!json_is_object(props)) {
        snprintf(err, errlen, "bucket properties must be a JSON object");
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)props, k, v) {
        size_t i;
        for (i = 0; i < ARRAY_LEN(props_known); i++)
            if (!strcmp(k, props_known[i].name))
                break;
        if (i == ARRAY_LEN(props_known)) {
            snprintf(err, errlen, "unknown bucket property '%s'", k);
            return -1;
        }
        if (json_is_null(v))     /* removes it (bmd_patch) */
            continue;
        int is_bool = props_known[i].type == JSON_TRUE, any = props_known[i].type == JSON_NULL;
        if (!any && (is_bool ? !json_is_boolean(v) : json_typeof(v) != props_known[i].type)) {
            snprintf(err, errlen, "bucket property '%s' has the wrong type", k);
            return -1;
        }
        if (!strcmp(k, "backend") && backend_check(json_string_value(v), err, errlen))
            return -1;
        if (!strcmp(k, "profile") &&
            !bprof_valid_name(json_string_value(v), json_string_length(v))) {
            snprintf(err, errlen, "profile must name a backend profile (1..63 of A-Z a-z 0-9 "
                                  ". - _)");
            return -1;
        }
        if (!strcmp(k, "addressing") && strcmp(json_string_value(v), "path") &&
            strcmp(json_string_value(v), "virtual")) {
            snprintf(err, errlen, "addressing must be path or virtual");
            return -1;
        }
        if (!strcmp(k, "write_policy") && strcmp(json_string_value(v), "write-through") &&
            strcmp(json_string_value(v), "write-back")) {
            snprintf(err, errlen, "write_policy must be write-through or write-back");
            return -1;
        }
        if (!strcmp(k, "write_policy") && !strcmp(json_string_value(v), "write-back")) {
            const char *b = json_string_value(json_object_get(props, "backend"));
            const struct scheme *sc = scheme_of(b);
            if (b && !(sc && sc->write_back)) {
                snprintf(err, errlen, "write-back needs an S3 or Shoal backend (an Azure "
                                      "container is written through, an HTTP origin is "
                                      "read-only)");
                return -1;
            }
        }
        if (!strcmp(k, "versioning") && strcmp(json_string_value(v), "enabled") &&
            strcmp(json_string_value(v), "suspended")) {
            snprintf(err, errlen, "versioning must be enabled or suspended");
            return -1;
        }
        if (s3_prop_check(k, v, err, errlen))
            return -1;
        if (!strcmp(k, "mirror") && mirror_check(v, err, errlen))
            return -1;
        if (!strcmp(k, "ec") && ec_check(v, err, errlen))
            return -1;
        if (!strcmp(k, "labels")) {
            const char *lk;
            json_t *lv;
            json_object_foreach(v, lk, lv) {
                if (!json_is_string(lv)) {
                    snprintf(err, errlen, "label '%s' must be a string", lk);
                    return -1;
                }
            }
        }
    }
    json_int_t copies = json_integer_value(json_object_get(json_object_get(props, "mirror"),
                                                           "copies"));
    if (json_object_get(props, "versioning") &&
        (json_object_get(props, "backend") || json_object_get(props, "ec"))) {
        snprintf(err, errlen, "versioning of a bucket with a backend or erasure coding is not "
                              "implemented");
        return -1;
    }
    if (copies > 1 && json_object_get(props, "ec")) {
        snprintf(err, errlen, "a bucket is mirrored or erasure coded, not both");
        return -1;
    }
    const char *wp = json_string_value(json_object_get(props, "write_policy"));
    if ((copies > 1 || json_object_get(props, "ec")) && wp && !strcmp(wp, "write-back")) {
        snprintf(err, errlen, "a write-back bucket is not mirrored or erasure coded (its "
                              "uploads go from the owner only)");
        return -1;
    }
    return 0;
}

json_t *bmd_bucket_json(const struct bmd_bucket *bk)
{
    return json_pack("{s:s, s:s, s:I, s:O}", "name", bk->name, "provider", bk->provider,
                     "created", (json_int_t)bk->created, "props", bk->props);
}

json_t *bmd_to_json(const struct bmd *b)
{
    json_t *arr = json_array();
    for (int i = 0; i < b->n; i++)
        json_array_append_new(arr, bmd_bucket_json(&b->b[i]));
    json_t *j = json_pack("{s:I, s:o}", "version", (json_int_t)b->snap.version, "buckets", arr);
    if (json_object_size(b->profiles))
        json_object_set(j, "backends", b->profiles);
    if (json_object_size(b->transforms))
        json_object_set(j, "transforms", b->transforms);
    return j;
}

/* b's profiles from j's "backends" (optional): 0, or -1 with err. */
static int profiles_from_json(struct bmd *b, const json_t *j, char *err, size_t errlen)
{
    json_t *ps = json_object_get(j, "backends");
    if (!ps)
        return 0;
    const char *name;
    json_t *p;
    char why[200] = "invalid name";
    if (!json_is_object(ps)) {
        snprintf(err, errlen, "bucket metadata: backends is not an object");
        return -1;
    }
    (void)err;
    (void)errlen;
    json_object_foreach(ps, name, p) {
        /* one profile this node cannot read (a newer version's field) leaves the rest */
        if (!bprof_valid_name(name, strlen(name)) || bprof_check(p, why, sizeof(why))) {
            log_warn("bucket metadata: backend profile '%.63s' left out: %s", name, why);
            continue;
        }
        bmd_profile_set(b, name, p);
    }
    return 0;
}

/* b's transforms from j's "transforms" (optional); one this node cannot
 * read is left out with a warning, as a profile is. */
static void transforms_from_json(struct bmd *b, const json_t *j)
{
    json_t *ts = json_object_get(j, "transforms");
    const char *name;
    json_t *t;
    char why[200] = "invalid name";
    if (ts && !json_is_object(ts))
        log_warn("bucket metadata: transforms is not an object; left out");
    if (!json_is_object(ts))
        return;
    json_object_foreach(ts, name, t) {
        if (!xform_valid_name(name, strlen(name)) || xform_check(t, why, sizeof(why))) {
            log_warn("bucket metadata: transform '%.63s' left out: %s", name, why);
            continue;
        }
        bmd_transform_set(b, name, t);
    }
}

struct bmd *bmd_from_json(const json_t *j, char *err, size_t errlen)
{
    json_int_t version;
    json_t *arr;
    json_error_t je;
    if (json_unpack_ex((json_t *)j, &je, 0, "{s:I, s:o}", "version", &version, "buckets",
                       &arr) ||
        !json_is_array(arr) || version < 0) {
        snprintf(err, errlen, "bucket metadata: bad version or buckets");
        return NULL;
    }
    struct bmd *b = bmd_new(version);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        const char *name, *provider;
        json_int_t created = 0;
        json_t *props = NULL;
        if (json_unpack_ex(e, &je, 0, "{s:s, s:s, s?I, s?o}", "name", &name, "provider",
                           &provider, "created", &created, "props", &props) ||
            !bmd_valid_name(name, strlen(name)) || !bmd_valid_provider(provider) ||
            (props && !json_is_object(props)) ||
            bmd_add(b, provider, name, props, created)) {
            snprintf(err, errlen, "bucket metadata: bucket %zu is invalid", i);
            bmd_unref(b);
            return NULL;
        }
    }
    if (profiles_from_json(b, j, err, errlen)) {
        bmd_unref(b);
        return NULL;
    }
    transforms_from_json(b, j);
    return b;
}

struct bmd *bmd_current(void)
{
    return (struct bmd *)snap_get(&holder);
}

int bmd_install(struct bmd *b, int force)
{
    return snap_install(&holder, &b->snap, force);
}
