/*
 * s3route: the entry of the proxies' S3 API (s3route.c).
 */
#ifndef SHOAL_PROXY_S3ROUTE_H
#define SHOAL_PROXY_S3ROUTE_H

#include <stddef.h>

struct http_req;

/* Route: the S3 API, path style ("BUCKET/KEY") or virtual-host style
 * (the Host names the bucket, rest is the key); rest is what follows the
 * endpoint's own part: "/s3/" on the main port, "/" at the root of the S3
 * port. Verifies r's signature first; every answer is S3's. */
void s3route(struct http_req *r, const char *rest, size_t rlen);

/* The server's on_done part for S3 requests (r->op one of s3route's):
 * r counted in the node's requests and errors by its operation and
 * status. Other requests are left alone. */
void s3route_done(struct http_req *r);

#endif
