/*
 * vers: S3 versioning of a bucket's objects on its targets (vers.c; the
 * store keeps the versions: store.h).
 */
#ifndef SHOAL_TARGET_VERS_H
#define SHOAL_TARGET_VERS_H

#include <stddef.h>

struct target;
struct http_req;
struct bmd_bucket;

/* The bucket's versioning: 0 (never enabled), STORE_VERS_ENABLED or
 * STORE_VERS_SUSPENDED (its "versioning" property). */
int vers_state(const struct bmd_bucket *bk);

/* Take r when versioning decides it: a GET, HEAD or DELETE of a version
 * (?versionId), a GET or HEAD of a versioned bucket's name whose latest
 * version is a delete marker or was deleted, a DELETE there (a delete
 * marker). Returns 1 when it took r (answered, or answers later) and mkey
 * (klen bytes), 0 when the plain path serves r. On r's worker. */
int vers_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                const char *name, char *mkey, size_t klen);

#endif
