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

#endif
