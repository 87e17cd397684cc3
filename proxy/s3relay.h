/*
 * s3relay: an S3 GET or HEAD relayed to the owning target over a raw
 * keep-alive connection from the worker's pool, the body spliced socket
 * to socket (s3relay.c).
 */
#ifndef SHOAL_PROXY_S3RELAY_H
#define SHOAL_PROXY_S3RELAY_H

struct http_req;

/* Relay r (GET or HEAD) to url, the target's signed URL (taken: freed
 * when the relay ends), with the request header lines hdrs[0..n) (copied
 * before the call returns). Answers r. */
void s3relay_get(struct http_req *r, char *url, const char *const *hdrs, int n);

/* Is a target's response header one the client should see? */
int s3relay_header(const char *name);

#endif
