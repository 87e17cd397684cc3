/*
 * bmd: bucket metadata, a versioned immutable snapshot of every bucket the
 * cluster knows: its provider ("shoal" for buckets that live only in Shoal)
 * and its properties. The primary proxy owns the versions and pushes each
 * new one to every node.
 */
#ifndef SHOAL_BMD_H
#define SHOAL_BMD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "snap.h"

#define BMD_PROVIDER_SHOAL "shoal"
#define BMD_PROVIDER_S3 "s3"
#define BMD_PROVIDER_AZURE "azure"

struct bmd_bucket {
    char *provider;
    char *name;
    int64_t created;             /* unix seconds */
    json_t *props;               /* object; see bmd_props_check() */
};

struct bmd {
    struct snap snap;            /* must be first */
    int n;
    struct bmd_bucket *b;        /* sorted by provider, then name */
    json_t *profiles;            /* object: name -> backend profile (bprof.h), with secrets */
    json_t *transforms;          /* object: name -> transform (xform.h) */
};

struct bmd *bmd_new(int64_t version);
struct bmd *bmd_clone(const struct bmd *src);
const struct bmd_bucket *bmd_find(const struct bmd *b, const char *provider,
                                  const char *name);
/* Add a bucket (props may be NULL; copied, null properties left out). 0, or
 * -EEXIST. */
int bmd_add(struct bmd *b, const char *provider, const char *name, json_t *props,
            int64_t created);
/* Remove a bucket. 0, or -ENOENT. */
int bmd_del(struct bmd *b, const char *provider, const char *name);
/* Merge a validated patch into a bucket's properties (a JSON merge patch: a
 * null property is removed). 0, or -ENOENT. */
int bmd_patch(struct bmd *b, const char *provider, const char *name, const json_t *patch);

/* Backend profiles (bprof.h). bmd_profile: borrowed, NULL when none of
 * that name. bmd_profile_set takes a reference to p (checked). del: 0 or
 * -ENOENT. bmd_profile_user: a bucket whose "profile" names it, or NULL. */
const json_t *bmd_profile(const struct bmd *b, const char *name);
void bmd_profile_set(struct bmd *b, const char *name, json_t *p);
int bmd_profile_del(struct bmd *b, const char *name);
const struct bmd_bucket *bmd_profile_user(const struct bmd *b, const char *name);
/* Transforms (xform.h), as profiles: bmd_transform borrowed or NULL;
 * _set takes a reference to t (checked); _del 0 or -ENOENT. */
const json_t *bmd_transform(const struct bmd *b, const char *name);
void bmd_transform_set(struct bmd *b, const char *name, json_t *t);
int bmd_transform_del(struct bmd *b, const char *name);
/* Does bucket bk agree with the rest of b (its profile exists and fits
 * its backend)? 0, or -1 with a message. */
int bmd_bucket_check(const struct bmd *b, const struct bmd_bucket *bk, char *err,
                     size_t errlen);
/* The same for every bucket of b (after a profile changed): 0, or -1
 * with the first one's message. */
int bmd_buckets_check(const struct bmd *b, char *err, size_t errlen);

/* Is this a valid bucket name: 1..63 of [A-Za-z0-9._-], starting with a
 * letter or digit, not "." or "..". */
int bmd_valid_name(const char *name, size_t n);
/* Is provider one this build knows. */
int bmd_valid_provider(const char *provider);
/* Validate a properties object; 0 or -1 with a message. */
int bmd_props_check(const json_t *props, char *err, size_t errlen);
/* How many full copies the bucket keeps (its mirror.copies; 1 without). */
#define BMD_COPIES_MAX 4
int bmd_copies(const struct bmd_bucket *bk);
/* A bucket's erasure coding (its ec property). */
#define BMD_EC_DATA_MAX 16
#define BMD_EC_PARITY_MAX 8
#define BMD_EC_LIMIT (256u << 10)  /* default objsize_limit: smaller objects get copies */
struct bmd_ec {
    int d, p;
    uint64_t limit;              /* objects this big or bigger are sliced */
};
/* 1 and *ec when the bucket is erasure coded, else 0. */
int bmd_ec(const struct bmd_bucket *bk, struct bmd_ec *ec);

/* Does the bucket read through to a backend (a cloud bucket, or one with
 * the backend property)? */
int bmd_has_backend(const struct bmd_bucket *bk);
/* Does the bucket write back (write_policy "write-back" on a backend that
 * takes it: S3, another Shoal cluster)? */
int bmd_write_back(const struct bmd_bucket *bk);
/* The kind of store a bucket's backend is (a literal): "s3", "azure", "shoal"
 * (another Shoal cluster), "http" (an HTTP(S) origin), or NULL without one; *remote (may be NULL) its bucket
 * or container there (the bucket's own name for a cloud bucket; for an
 * origin its URL). */
const char *bmd_backend_scheme(const struct bmd_bucket *bk, const char **remote);

json_t *bmd_to_json(const struct bmd *b);
json_t *bmd_bucket_json(const struct bmd_bucket *bk);
struct bmd *bmd_from_json(const json_t *j, char *err, size_t errlen);

void bmd_unref(struct bmd *b);
struct bmd *bmd_current(void);
int bmd_install(struct bmd *b, int force);

#endif
