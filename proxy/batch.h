/*
 * batch: GetBatch on a proxy (batch.c). POST (or GET with a body)
 * /v1/batch: the request is read and checked, every bucket it names
 * authorized for the caller by the one rule (authz.h), and the client is
 * redirected (307) to the target that owns the most entries, which
 * assembles the answer (target/api/batch.h). The redirect's signature
 * covers the body's SHA-256, so the body the target gets is the one
 * authorized here.
 */
#ifndef SHOAL_PROXY_BATCH_H
#define SHOAL_PROXY_BATCH_H

#include <stddef.h>

struct http_req;

void batch_route(struct http_req *r, const char *rest, size_t rlen);

#endif
