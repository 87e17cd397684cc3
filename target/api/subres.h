/*
 * subres: S3 subresource requests on an object (subres.c).
 */
#ifndef SHOAL_TARGET_SUBRES_H
#define SHOAL_TARGET_SUBRES_H

#include <stddef.h>

struct target;
struct http_req;
struct bmd_bucket;

/* S3 subresource requests on an object (?tagging, ?acl, ...): served, or
 * answered 501 NotImplemented; never the plain operation. Returns 1 if it
 * took r (and mkey), 0 if r names no subresource. On r's worker. */
int subres_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                  const char *name, char *mkey, size_t klen);

#endif
