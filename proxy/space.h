/*
 * space: GET /v1/cluster/space, how full every target's mountpaths are
 * (each target's /v1/internal/space, gathered), with the cluster's totals.
 */
#ifndef SHOAL_PROXY_SPACE_H
#define SHOAL_PROXY_SPACE_H

#include <stddef.h>

struct http_req;

void space_route(struct http_req *r, const char *rest, size_t rlen);

#endif
