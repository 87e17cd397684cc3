/*
 * s3relay: an S3 GET or HEAD relayed to the owning target through the
 * worker's nodeclient, a large body spliced socket to socket (s3relay.c).
 */
#ifndef SHOAL_PROXY_S3RELAY_H
#define SHOAL_PROXY_S3RELAY_H

struct nodeclient_xfer;
struct http_req;

/* Relay r (GET or HEAD) to url, the target's signed URL (taken: freed
 * when the relay ends), with the request header lines hdrs[0..n) (copied
 * before the call returns). Answers r. */
void s3relay_get(struct http_req *r, char *url, const char *const *hdrs, int n);

/* The headers of a target's answer x that the client should see, onto
 * r's response (before http_resp_begin). */
void s3relay_headers(struct http_req *r, const struct nodeclient_xfer *x);

#endif
