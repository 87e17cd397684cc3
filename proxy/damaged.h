/*
 * damaged: the copies the targets keep marked damaged (damaged.c), for an
 * operator: GET /v1/cluster/damaged gathers every target's list
 * (/v1/internal/damaged, target/jobs/scrub.h), for an admin key where
 * admin_keys are configured. Such a copy is never served
 * (500 ObjectCorrupted) and stays until a good copy replaces it: a PUT of
 * the object, or a copy brought from elsewhere.
 */
#ifndef SHOAL_PROXY_DAMAGED_H
#define SHOAL_PROXY_DAMAGED_H

#include <stddef.h>

struct http_req;

/* GET /v1/cluster/damaged: {"objects": [{target, provider, bucket, name,
 * size, version}], "unreached": N, "more": bool}. */
void damaged_route(struct http_req *r, const char *rest, size_t rlen);

#endif
