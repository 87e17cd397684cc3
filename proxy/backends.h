/*
 * backends: the backend profile API on a proxy (bprof.h). Profiles are set
 * and deleted as buckets are changed (buckets_change: the primary commits
 * the next BMD and pushes it to every node); reads answer the profiles'
 * public view, never a secret.
 *
 *   GET    /v1/backends          {"backends": [public view, ...]}
 *   GET    /v1/backends/NAME     the public view, or 404
 *   PUT    /v1/backends/NAME     a profile as the body: 201 new, 200 replaced
 *   DELETE /v1/backends/NAME     204; 409 while a bucket names it
 *
 * Every one of them needs an admin key where there are any (else any
 * signed key), as the profiles hand out credentials.
 */
#ifndef SHOAL_PROXY_BACKENDS_H
#define SHOAL_PROXY_BACKENDS_H

#include <stddef.h>

struct http_req;

/* Routes /v1/backends and /v1/backends/...; rest is what follows
 * "/v1/backends/" ("" for the list). */
void backends_route(struct http_req *r, const char *rest, size_t rlen);

#endif
