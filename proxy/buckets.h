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
struct authz_who;

/* A change of the BMD: of a bucket, or of a backend profile (bprof.h) or a
 * transform (xform.h), whose provider is then ignored and name is theirs. */
enum buckets_op {
    BUCKETS_CREATE,
    BUCKETS_PATCH,
    BUCKETS_DESTROY,
    BUCKETS_PROFILE_PUT,         /* set (create or replace); 201 or 200 */
    BUCKETS_PROFILE_DEL,         /* 204; 409 while a bucket names it */
    BUCKETS_TRANSFORM_PUT,       /* a transform (xform.h): 201 or 200 */
    BUCKETS_TRANSFORM_DEL,       /* 204, or 404 */
};

/* status: 201 (created), 200 (patched) or 204 (destroyed) with answer the
 * bucket's JSON (NULL for 204; the callee's to keep), the refusal's status
 * with err (400 bad name or properties, 404, 409, 503 when no primary
 * could commit it), or 0 when the primary could not be reached (err says
 * why). */
typedef void (*buckets_done_fn)(void *arg, int status, json_t *answer, const char *err);

/*
 * Change a bucket for request r: the primary has the proxies commit the
 * next BMD (quorum.h) and pushes it to every node before done; another
 * proxy forwards the change to the primary (signed as itself: the caller
 * authenticated its client). props: the new bucket's properties or the
 * patch (taken; NULL for none). done fires once, on r's worker; a
 * refusal found at once fires it before this returns.
 */
void buckets_change(struct http_req *r, enum buckets_op op, const char *provider,
                    const char *name, json_t *props, buckets_done_fn done, void *arg);

/* done's answer to a native request (the request's reference is
 * released): the JSON, or the error as JSON. */
void buckets_replied(void *arg, int status, json_t *answer, const char *err);
/* May who set or use backend profiles (an admin key where there are
 * any, else any signed key, or any request without keys)? */
int buckets_profile_admin(const struct proxy *p, const struct authz_who *who);

/* Routes: /v1/buckets and /v1/buckets/...; rest is what follows
 * "/v1/buckets/" ("" for the list). Authenticates r first (403). */
void buckets_route(struct http_req *r, const char *rest, size_t rlen);

/* Make sure a remote bucket (provider s3) is in the BMD, adding it on the
 * primary (directly or through it), then call cont(r); errors answer r. */
void buckets_ensure(struct http_req *r, const char *provider,
                    const char *name, void (*cont)(struct http_req *r));

/* Is provider/name in the current BMD? */
int buckets_exist(const char *provider, const char *name);

#endif
