/*
 * jobs: the batch job API of every proxy (/v1/jobs). A job is started on
 * every target (each works on the names it owns, target/jobs/job.c), and its
 * state is the targets' aggregated when asked. The targets are where jobs
 * live: any proxy, restarted or not, lists them and finds a key's job
 * there.
 *
 *   POST   /v1/jobs               {"kind", "bucket", "provider", "names" |
 *                                  "template" | "prefix" (none: the whole
 *                                  bucket), "key"} -> 201 {"id"} (200
 *                                  with the job a "key" already named)
 *   GET    /v1/jobs?kind=&bucket=&state=  the jobs the targets know
 *   GET    /v1/jobs/ID[?wait=S]   state and progress, summed over targets
 *                                  and per target; wait: until it ends or
 *                                  S seconds pass
 *   DELETE /v1/jobs/ID            abort everywhere
 */
#ifndef SHOAL_PROXY_JOBS_H
#define SHOAL_PROXY_JOBS_H

#include <stddef.h>

struct http_req;

/* Routes /v1/jobs and /v1/jobs/...; rest is what follows "/v1/jobs".
 * Authenticates r first. */
void jobs_route(struct http_req *r, const char *rest, size_t rlen);

#endif
