/*
 * curlclient: the HTTP client of Shoal's daemons: libcurl's multi-socket API
 * driven by one event loop (no call here ever blocks the loop), with
 * connections to each host kept alive and reused. A transfer streams, with
 * callbacks for the response headers, each body piece (with pause/resume
 * for backpressure) and an upload source; a target uses it for its remote
 * backends' object data (the cluster's own traffic goes through nodeclient).
 *
 * Thread: a curlclient belongs to the loop it was made for; call it only there.
 * Contract: on_done fires exactly once, later, on the loop; never from
 * inside curlclient_start.
 */
#ifndef SHOAL_CURLCLIENT_H
#define SHOAL_CURLCLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct curlclient;
struct curlclient_xfer;

struct curlclient_ops {
    /* The final response's headers are in (status >= 200). Return 0 to go
     * on, -1 to stop the transfer (on_done then reports "cancelled"). */
    int (*on_headers)(void *arg, struct curlclient_xfer *x, int status);
    /* A piece of the body; it is consumed. Call curlclient_pause() from here to
     * stop further pieces until curlclient_resume(). Return 0, or -1 to stop. */
    int (*on_data)(void *arg, struct curlclient_xfer *x, const char *p, size_t n);
    /* Upload source: up to n bytes into buf; returns the count, 0 at the
     * end, or -1 to fail the transfer. */
    ssize_t (*on_read)(void *arg, char *buf, size_t n);
    /* status: the HTTP status, or 0 when the transfer failed (err says why). */
    void (*on_done)(void *arg, struct curlclient_xfer *x, int status, const char *err);
    /* Upload source back to its start (a redirect sends the body again):
     * 0, or -1 when it cannot be; NULL when it never can. */
    int (*on_rewind)(void *arg);
};

/* How a transfer goes. */
struct curlclient_opt {
    int64_t upload_len;          /* >= 0: upload that many bytes from on_read */
    long timeout_ms;             /* the whole transfer */
    int follow;                  /* redirects to follow (the method and body kept), or 0 */
    const char *provider;        /* the metrics' provider label: "s3", "azure", ... */
};

struct curlclient *curlclient_new(struct event_base *base);
struct event_base *curlclient_base(const struct curlclient *c);
/* Cancels transfers in flight without calling their callbacks. */
void curlclient_free(struct curlclient *c);

/*
 * Start a transfer. hdrs: n full header lines ("Name: value"), copied; an
 * Authorization among them is not sent on to another host or port when
 * a redirect is followed (the redirect carries its own). Returns the
 * transfer, valid until on_done returns. on_headers sees only the final
 * response's headers, not a followed redirect's.
 */
struct curlclient_xfer *curlclient_start(struct curlclient *c, const char *method, const char *url,
                                         const char *const *hdrs, int n,
                                         const struct curlclient_opt *opt,
                                         const struct curlclient_ops *ops, void *arg);
/* A response header's value (trimmed), or NULL. Valid from on_headers on. */
const char *curlclient_header(const struct curlclient_xfer *x, const char *name);
/* Stop and restart the delivery of body pieces (on_data). */
void curlclient_pause(struct curlclient_xfer *x);
void curlclient_resume(struct curlclient_xfer *x);

#endif
