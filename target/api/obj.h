/*
 * obj: requests on one object, /v1/objects/BUCKET/NAME (obj.c).
 */
#ifndef SHOAL_TARGET_OBJ_H
#define SHOAL_TARGET_OBJ_H

#include <stddef.h>

struct http_req;

/* The route of /v1/objects/: rest (rlen bytes) is "BUCKET/NAME". Checks
 * who asks, that the bucket exists and (when no proxy routed r) that this
 * target owns the object, then hands r to the handler of its operation.
 * On r's worker. */
void obj_handle(struct http_req *r, const char *rest, size_t rlen);

#endif
