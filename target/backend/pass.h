/*
 * pass: a cold GET answered straight from the backend without keeping a
 * copy (pass.c), for when the object's mountpath is at space_oos and
 * eviction has not made room yet: the client still gets its object
 * (X-Shoal-Cache: pass), streamed with backpressure, and the count goes
 * up (shoal_cold_passthrough_total). A Range is passed on.
 *
 * Thread: the request's worker, on its backend client.
 */
#ifndef SHOAL_TARGET_PASS_H
#define SHOAL_TARGET_PASS_H

struct backend;
struct http_req;

/* Answer r (a GET) with the backend's object name of b (copied). */
void pass_get(struct http_req *r, const struct backend *b, const char *name);
/* Count a cold GET answered from the backend without keeping a copy
 * another way (a fetch that could keep none: fetch.h). Any thread. */
void pass_count(void);

#endif
