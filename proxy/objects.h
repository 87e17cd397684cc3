/*
 * objects: where an object lives and how a client is sent there: its
 * owning target (HRW over the cluster map), the owner's URL for it signed
 * by this proxy, and the native API's answer to an object request, a
 * signed 307 to that URL.
 */
#ifndef SHOAL_PROXY_OBJECTS_H
#define SHOAL_PROXY_OBJECTS_H

#include <stddef.h>

struct cmap;
struct cmap_node;
struct http_req;
struct node;

/* The target that owns provider/bucket/name in m; NULL when m is NULL or
 * has no target. Valid while m is held. */
const struct cmap_node *objects_owner(const struct cmap *m, const char *provider,
                                      const char *bucket, const char *name);

/* Where a request for provider/bucket/name goes: its owner in m, unless
 * this proxy cannot reach the owner (reach.h). Then a read (read: GET,
 * HEAD) goes to the first of the name's holders (a mirrored bucket's
 * copies, an erasure-coded one's copies and slices) that this proxy can
 * reach, which serves it as the owner would; a write, or a read with no
 * such holder, goes nowhere: NULL with *lost set to the owner. NULL with
 * *lost NULL: m has no target. Valid while m is held. */
const struct cmap_node *objects_pick(const struct cmap *m, const char *provider,
                                     const char *bucket, const char *name, int read,
                                     const struct cmap_node **lost);

/* owner's URL of bucket/name (nlen bytes, percent-encoded in the path),
 * with query (raw; may be NULL), signed by n for method; HEAD is signed as
 * GET, as clients may turn one into the other. A new string. */
char *objects_url(const struct node *n, const struct cmap_node *owner, const char *method,
                  const char *bucket, const char *name, size_t nlen, const char *query);

/* Route: /v1/objects/BUCKET/NAME (rest: "BUCKET/NAME"). Authenticates r,
 * then answers 307 to the owner (objects_pick) with a signed Location, or
 * 503 with Retry-After when the owner cannot be reached and no holder
 * can serve. */
void objects_route(struct http_req *r, const char *rest, size_t rlen);

#endif
