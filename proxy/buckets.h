/*
 * buckets: the native bucket API on a proxy (list, create, properties,
 * destroy, the merged object listing) and remote buckets added on first
 * use.
 */
#ifndef SHOAL_PROXY_BUCKETS_H
#define SHOAL_PROXY_BUCKETS_H

#include <jansson.h>
#include <stddef.h>

struct http_req;
struct proxy;

/* Routes: /v1/buckets and /v1/buckets/...; rest is what follows
 * "/v1/buckets/" ("" for the list). Authenticates r first (403). */
void buckets_route(struct http_req *r, const char *rest, size_t rlen);

/* Make sure a remote bucket (provider s3) is in the BMD, adding it on the
 * primary (directly or through it), then call cont(r); errors answer r. */
void buckets_ensure(struct proxy *p, struct http_req *r, const char *provider,
                    const char *name, void (*cont)(struct http_req *r));

/* Is provider/name in the current BMD? */
int buckets_exist(const char *provider, const char *name);

/* Is provider/name listed from its backend (an s3 bucket, or one backed by
 * one), so that the listing's page tokens are the backend's, not names?
 * 0 when it is not in the BMD. */
int buckets_listed_by_backend(const char *provider, const char *name);

/* A listing page as a target or this API answers it ({"objects": [...],
 * ...}): its "objects" array, or NULL when status is not 200 or the body
 * is not such a page. *j gets the parsed body (or NULL), which the caller
 * drops. */
json_t *buckets_page_objects(int status, const char *body, size_t len, json_t **j);

#endif
