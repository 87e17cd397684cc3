/*
 * xfrun: one object through a transform (xform.h), as the contract says:
 * POST / to the transform's base URL (xfsup_url) with the object's bytes
 * as the body and X-Shoal-Bucket, X-Shoal-Name, X-Shoal-Size and
 * X-Shoal-Args (the caller's extra query arguments, URL-encoded) as
 * headers; a 2xx answer's body is the transformed object, streamed to the
 * caller piece by piece (never held whole), any other status is the
 * transform's error. Shared by the inline GET (target/api/xfget.c) and
 * the transform job (target/jobs/jobxform.c). Over plain HTTP the data
 * file is spliced into the transform's socket, and a caller that can may
 * take the answer's body as a socket to splice on (on_body): the bytes
 * then never pass through the target's memory.
 *
 * How it can fail, as a status the caller answers with (each message
 * names the transform):
 *   404  no such transform
 *   503  its command is not listening (starting, or waiting to be
 *        restarted), or nothing listens at its url: try again
 *   504  it took longer than the timeout, or sent nothing for 30 s
 *   502  it answered an error status (its message quoted), or its answer
 *        broke off (the connection closed mid-body, a crash)
 *
 * Thread: the loop of the nodeclient given (base); callbacks come there,
 * later.
 */
#ifndef SHOAL_TARGET_XFRUN_H
#define SHOAL_TARGET_XFRUN_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct nodeclient;
struct nodeclient_body;
struct xfrun;

struct xfrun_src {
    const char *transform;       /* its name */
    const char *bucket, *name;   /* the object's */
    const char *args;            /* the caller's extra query arguments, URL-encoded, or "" */
    int fd;                      /* the bytes: [off, off + len) of fd (taken), */
    uint64_t off, len;
    const char *mem;             /* or from mem, when not NULL (copied; fd then -1) */
    int take_body;               /* a 2xx answer with a length may be handed over as its
                                  * socket (on_body) */
};

struct xfrun_ops {
    /* A 2xx answer's head: its Content-Type (NULL: none) and length (-1:
     * not given). 0 to go on, -1 to stop (on_done then says 502). */
    int (*on_head)(void *arg, const char *ctype, int64_t len);
    /* A piece of the transformed object. 0, or -1 to stop. */
    int (*on_data)(void *arg, const char *p, size_t n);
    /* status 0: the answer came whole; else 502, 503 or 504 with msg. */
    void (*on_done)(void *arg, int status, const char *msg);
    /* After on_head, with take_body: the answer's body as its socket, b's
     * pre bytes and then left more from b->fd (non-blocking), the caller's
     * to move (splice) and end with nodeclient_body_end(b, whole); no
     * on_data or on_done follows, and the run is over. */
    void (*on_body)(void *arg, struct nodeclient_body *b);
};

/* Start src through its transform, timeout_ms for the whole of it. NULL
 * when it cannot start, with *status (404, 503) and msg (src.fd closed). */
struct xfrun *xfrun_start(struct nodeclient *hc, struct event_base *base, long timeout_ms,
                          const struct xfrun_src *src, const struct xfrun_ops *ops, void *arg,
                          int *status, char *msg, size_t msglen);
/* Stop and restart the delivery of pieces (backpressure). */
void xfrun_pause(struct xfrun *x);
void xfrun_resume(struct xfrun *x);
/* The caller is gone: no callback comes any more, and the transfer stops
 * at its next step and frees itself. */
void xfrun_cancel(struct xfrun *x);

#endif
