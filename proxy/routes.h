/*
 * routes: the proxy's route tables (routes.c), one per port: the main
 * port's (objects, the S3 API under /s3, buckets, jobs, the cluster's
 * own endpoints) and the dedicated S3 port's (the S3 API at the root).
 * Every handler lives in the file of its concern (proxy.h names them);
 * a path no route serves gets 404 (or 403 before authentication), never
 * another operation.
 */
#ifndef SHOAL_PROXY_ROUTES_H
#define SHOAL_PROXY_ROUTES_H

#include <stddef.h>

#include "route.h"

struct http_req;

/* The main port's handler: the endpoints every node serves
 * (node_handle), then the table. */
void routes_main(struct http_req *r);
/* The dedicated S3 port's handler (s3_api_port). */
void routes_s3_port(struct http_req *r);

/* A port's table (s3_port: the dedicated S3 port's) and its length. */
const struct route *routes_table(int s3_port, size_t *n);

#endif
