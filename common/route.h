/*
 * route: a daemon's requests dispatched by one table of (methods, path,
 * handler) instead of if-chains. The entry file of each daemon lists its
 * routes; handlers live in the modules that own their concern.
 *
 * A path is exact ("/v1/health") or a prefix when it ends in '*'
 * ("/v1/objects/" and a star); a handler gets what follows the prefix as
 * rest (of the decoded path, rlen bytes; "" for an exact route). The first
 * route whose path and method match wins, so list the specific before the
 * general.
 */
#ifndef SHOAL_ROUTE_H
#define SHOAL_ROUTE_H

#include <stddef.h>

#include "http.h"

/* Method masks. */
#define RM(m) (1u << (m))
#define RM_GET RM(HTTP_M_GET)
#define RM_HEAD RM(HTTP_M_HEAD)
#define RM_PUT RM(HTTP_M_PUT)
#define RM_POST RM(HTTP_M_POST)
#define RM_DELETE RM(HTTP_M_DELETE)
#define RM_PATCH RM(HTTP_M_PATCH)
#define RM_ANY 0u

typedef void (*route_fn)(struct http_req *r, const char *rest, size_t rlen);

struct route {
    unsigned methods;            /* RM_* bits; RM_ANY matches every method */
    const char *path;            /* exact, or a prefix ending in a star */
    route_fn fn;
    const char *op;              /* a short name for logs and metrics */
};

/* The route for r, with *rest and *rlen set; NULL when none matches. When a
 * path matched but no method did, *allow (if given) gets the methods that
 * would have (else 0). */
const struct route *route_find(const struct route *t, size_t n, const struct http_req *r,
                               const char **rest, size_t *rlen, unsigned *allow);

/* Call r's route, or answer 405 with Allow (the path is known, the method
 * is not) or route_not_found's answer. Returns the route taken, NULL when
 * r was answered here. */
const struct route *route_dispatch(const struct route *t, size_t n, struct http_req *r);

/* Answer r, whose path nothing serves: 404 "no such endpoint", or 400
 * when the path is not UTF-8 (no endpoint, bucket or object is named so). */
void route_not_found(struct http_req *r);

#endif
