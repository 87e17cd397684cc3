/*
 * httpbody: request bodies read whole, for the small ones a handler wants
 * in one piece (JSON documents, S3 XML). The body is gathered as it
 * arrives, bounded, and handed over once complete; a body over its bound
 * gets 413 and the connection closes after the answer. Loop thread of the
 * request.
 */
#ifndef SHOAL_HTTPBODY_H
#define SHOAL_HTTPBODY_H

#include <jansson.h>
#include <stddef.h>

struct http_req;

/* Read r's whole body (at most max bytes, else 413), then call done with
 * arg and the body (NUL-terminated; freed after done returns). When the
 * body never completes (the client left, or it was too large and got its
 * answer), gone(arg) runs instead (gone may be NULL). r->data, on_body,
 * on_end and on_abort belong to the reader until done or gone runs. */
void node_read_body(struct http_req *r, size_t max,
                    void (*done)(struct http_req *r, void *arg, char *body, size_t len),
                    void (*gone)(void *arg), void *arg);
/* Collect a small JSON request body (at most 16 MiB), then call done with
 * it (a new reference done owns); malformed JSON gets 400 without done,
 * an empty body is an empty object. */
void node_read_json(struct http_req *r, void (*done)(struct http_req *r, json_t *j));

#endif
