/*
 * owed: what a write-back bucket's objects still owe its backend, added up
 * over the targets (each target's GET /v1/internal/wbq). The bucket
 * summary shows it; destroying a bucket that still owes anything is
 * refused unless forced (backlog.c).
 */
#ifndef SHOAL_PROXY_BACKLOG_H
#define SHOAL_PROXY_BACKLOG_H

#include <jansson.h>

struct http_req;

/* Does the bucket write back (by the BMD)? */
int backlog_write_back(const char *provider, const char *bucket);

/* Ask; done gets {"objects", "bytes", "oldest_age_s", "unreached"} (its
 * reference), later, on r's loop. r is referenced meanwhile. */
void backlog_ask(struct http_req *r, const char *provider, const char *bucket,
                 void (*done)(struct http_req *r, json_t *owed, void *arg), void *arg);

#endif
