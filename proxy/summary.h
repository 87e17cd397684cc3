/*
 * summary: how much of a bucket (or of a prefix of it) Shoal holds, the
 * number a scheduler's admission check waits on before it starts a
 * training job: objects and bytes present in Shoal against those in the
 * backend, and the share cached. GET /v1/buckets/BUCKET/summary.
 */
#ifndef SHOAL_PROXY_SUMMARY_H
#define SHOAL_PROXY_SUMMARY_H

struct http_req;

/* Answer r with the summary of provider/bucket (in the BMD) for the
 * request's prefix or template query parameter ("selected": the names a
 * template makes): walks the bucket's listing page by page (never holding
 * more than a page), later. */
void summary_bucket(struct http_req *r, const char *provider, const char *bucket);

#endif
