/*
 * s3root: S3 requests at a target's root, "/BUCKET/KEY" (s3root.c).
 */
#ifndef SHOAL_TARGET_S3ROOT_H
#define SHOAL_TARGET_S3ROOT_H

#include <stddef.h>

struct http_req;

/* The route of every path outside /v1/: verified with the cluster's S3
 * keys, then served as an object request (obj.c). */
void s3root_handle(struct http_req *r, const char *rest, size_t rlen);

#endif
