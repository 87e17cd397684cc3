/*
 * list: the pages of a bucket's listing a target gives the proxy's merge
 * (list.c). Both are routes (common/route.h) behind the cluster signature.
 */
#ifndef SHOAL_TARGET_LIST_H
#define SHOAL_TARGET_LIST_H

#include <stddef.h>

struct http_req;

/* GET /v1/internal/list?bucket=&provider=&prefix=&after=&from=&until=&limit=:
 * a compact page (common/listpage.h) in name order, from the drives. */
void list_local(struct http_req *r, const char *rest, size_t rlen);
/* GET /v1/internal/list-remote?bucket=&provider=&prefix=&token=&limit=
 * (or &after=NAME instead of a token: the names after it):
 * one page of the bucket's backend, {"objects": [...], "next": token}. */
void list_remote(struct http_req *r, const char *rest, size_t rlen);

#endif
