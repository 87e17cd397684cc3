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

#endif
