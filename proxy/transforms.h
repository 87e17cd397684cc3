/*
 * transforms: the transform API on a proxy (xform.h). Transforms are set
 * and deleted as buckets are changed (buckets_change: the primary commits
 * the next BMD and pushes it to every node).
 *
 *   GET    /v1/transforms        {"transforms": [{"name", "command" | "url"}, ...]}
 *   GET    /v1/transforms/NAME   the transform, or 404
 *   PUT    /v1/transforms/NAME   a transform as the body: 201 new, 200 replaced
 *   DELETE /v1/transforms/NAME   204, or 404
 *
 * Setting and deleting need an admin key where there are any (a command
 * runs on every target); reading them, a signed request where keys are
 * configured.
 */
#ifndef SHOAL_PROXY_TRANSFORMS_H
#define SHOAL_PROXY_TRANSFORMS_H

#include <stddef.h>

struct http_req;

/* Routes /v1/transforms and /v1/transforms/...; rest is what follows
 * "/v1/transforms/" ("" for the list). */
void transforms_route(struct http_req *r, const char *rest, size_t rlen);

#endif
