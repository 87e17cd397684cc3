/*
 * nodeclient: Shoal's own HTTP client for calls between its nodes (join,
 * keepalive, map and BMD pushes, forwards to the primary, listing
 * fan-out), on libevent and llhttp like the server. libcurl (curlclient) stays
 * for remote backends only, where TLS, proxies and the variety of cloud
 * endpoints earn it its place.
 *
 * One nodeclient per event loop. Connections are kept alive and pooled per peer
 * (host:port); a connect never blocks (numeric addresses connect at once,
 * names resolve through evdns on the loop). A request that fails on a
 * pooled connection before any of its answer arrived (the peer closed it
 * while idle) is sent again once on a fresh connection, when none of its
 * upload had been taken from its source yet.
 *
 * Two forms:
 *   nodeclient_start: streaming, with callbacks for the answer's head, each body
 *             piece (nodeclient_pause/nodeclient_resume for backpressure) and an upload
 *             source (nodeclient_resume_upload when it has bytes again); used for
 *             object bodies between the nodes.
 *   nodeclient_request: a buffered body in and out (at most NODECLIENT_BODY_MAX bytes
 *             back); control-plane messages and listing pages.
 * A streaming caller may take an answer's body as the socket itself
 * (NODECLIENT_TAKE_BODY) and splice it elsewhere; the connection returns to the
 * pool through nodeclient_body_end.
 *
 * Thread: a nodeclient belongs to the loop it was made for; call it only there.
 * Contract: on_done (or the buffered callback) fires exactly once, later,
 * on the loop; never from inside nodeclient_start or nodeclient_request.
 */
#ifndef SHOAL_NODECLIENT_H
#define SHOAL_NODECLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct nodeclient;
struct nodeclient_xfer;

#define NODECLIENT_READ_PAUSE (-2)
#define NODECLIENT_READ_SOCKET (-3)
#define NODECLIENT_TAKE_BODY 1
#define NODECLIENT_HOST_MAX 256

/*
 * An answer's body taken as a socket (on_headers returned NODECLIENT_TAKE_BODY):
 * pre_len bytes of it came with the head, left more are to be read from
 * fd (non-blocking). The caller moves them itself (splice) and ends with
 * nodeclient_body_end, which pools the connection again when the whole body was
 * read and the peer keeps it alive.
 */
struct nodeclient_body {
    int fd;
    char *pre;
    size_t pre_len;
    uint64_t left;
    /* nodeclient's own */
    struct nodeclient *c;
    char host[NODECLIENT_HOST_MAX];
    int port;
    int keep;
};

struct nodeclient_ops {
    /* The answer's head is in (status >= 200). Return 0 to go on, -1 to
     * stop the transfer (on_done then reports "cancelled"), or
     * NODECLIENT_TAKE_BODY to take the body's socket: when the body has a
     * Content-Length, on_taken follows and ends the transfer (no on_data,
     * no on_done); any other body comes through on_data as usual. */
    int (*on_headers)(void *arg, struct nodeclient_xfer *x, int status);
    /* A piece of the body; it is consumed. nodeclient_pause() from here stops the
     * pieces after the ones already read from the socket (a bounded
     * amount) until nodeclient_resume(). Return 0, or -1 to stop. */
    int (*on_data)(void *arg, struct nodeclient_xfer *x, const char *p, size_t n);
    /* Upload source: up to n bytes into buf; the count, 0 at the end, -1
     * to fail the transfer, or NODECLIENT_READ_PAUSE when nothing is ready yet
     * (then call nodeclient_resume_upload once there is), or NODECLIENT_READ_SOCKET: the
     * rest of the upload is written by the caller straight into the
     * socket (on_socket). */
    ssize_t (*on_read)(void *arg, char *buf, size_t n);
    /* status: the HTTP status, or 0 when the transfer failed (err says
     * why). x is valid during the call only. */
    void (*on_done)(void *arg, struct nodeclient_xfer *x, int status, const char *err);
    /* The body is b's, the caller's until nodeclient_body_end (see NODECLIENT_TAKE_BODY);
     * the transfer is gone once this returns. */
    void (*on_taken)(void *arg, struct nodeclient_body *b);
    /* After NODECLIENT_READ_SOCKET, once what nodeclient queued is out: write the upload's
     * remaining bytes into fd (non-blocking; nodeclient writes nothing meanwhile,
     * and reads the answer as usual: on_done may come first, then stop),
     * then call nodeclient_upload_moved. */
    void (*on_socket)(void *arg, struct nodeclient_xfer *x, int fd);
    /* Over HTTPS, where no socket is handed over: after NODECLIENT_READ_SOCKET, the
     * file the rest of the upload is read from and the offset of its next
     * byte (nodeclient reads it itself, the rest of the upload's length); 0, or -1
     * (the transfer fails). NULL: an upload that needs the socket fails
     * over HTTPS. */
    int (*on_file)(void *arg, int *fd, uint64_t *off);
};

#define NODECLIENT_BODY_MAX (64u << 20)   /* an answer's body, at most */

/*
 * status: the HTTP status, or 0 when no answer came (err says why).
 * body/len: the answer's body, NUL-terminated; valid only during the call.
 */
typedef void (*nodeclient_done_fn)(void *arg, int status, const char *body, size_t len,
                           const char *err);

struct nodeclient *nodeclient_new(struct event_base *base);
/* Drops pooled connections and fails nothing: requests in flight are
 * cancelled without their callbacks. */
void nodeclient_free(struct nodeclient *c);

/*
 * Start a transfer of method url ("http://host:port/path?query"). hdrs: n
 * full header lines ("Name: value"), copied. upload_len >= 0 uploads that
 * many bytes from on_read; NODECLIENT_UP_CHUNKED uploads what on_read gives
 * until it returns 0, with chunked transfer coding (never
 * NODECLIENT_READ_SOCKET). timeout_ms bounds the whole transfer; besides,
 * 30 s without progress on the socket (while the transfer is not paused or
 * waiting for its upload source) ends it. Returns the transfer, valid
 * until on_done returns.
 */
/* nodeclient_start's upload_len for a body of no known length */
#define NODECLIENT_UP_CHUNKED (-2)
struct nodeclient_xfer *nodeclient_start(struct nodeclient *c, const char *method, const char *url,
                         const char *const *hdrs, int n, int64_t upload_len, long timeout_ms,
                         const struct nodeclient_ops *ops, void *arg);
/*
 * nodeclient_start with a body from the caller's memory (len bytes at body, sent
 * by reference: it must stay unchanged until on_done). With an "Expect:
 * 100-continue" header line the body waits for the peer's 100 (a second
 * at most, then it goes anyway); a final answer that comes first is the
 * answer, and the body is never sent.
 */
struct nodeclient_xfer *nodeclient_start_mem(struct nodeclient *c, const char *method,
                                             const char *url, const char *const *hdrs, int n,
                                             const void *body, size_t len, long timeout_ms,
                                             const struct nodeclient_ops *ops, void *arg);

/* Why a transfer failed (in on_done with status 0). */
enum nodeclient_fail {
    NODECLIENT_FAIL_NONE,
    NODECLIENT_FAIL_CONNECT,             /* no connection to the peer */
    NODECLIENT_FAIL_TIMEOUT,             /* the deadline, or no progress */
    NODECLIENT_FAIL_CLOSED,              /* the connection broke */
    NODECLIENT_FAIL_PROTOCOL,            /* a malformed answer */
    NODECLIENT_FAIL_CANCELLED,           /* a callback stopped it */
    NODECLIENT_FAIL_REQUEST,             /* it could not be sent: a bad URL, its upload failed */
};
enum nodeclient_fail nodeclient_failure(const struct nodeclient_xfer *x);
/* Was x's last try carried by a connection to its peer (a pooled one,
 * or a new one that connected; over HTTPS, with its handshake done)? In
 * on_done of a failure: 1 when the peer took the connection and the
 * answer did not come (or broke), 0 when no connection was made at all
 * (refused, unreachable, or the deadline came first). */
int nodeclient_reached(const struct nodeclient_xfer *x);

/* A header of the answer (value trimmed), or NULL; valid from on_headers
 * on. All of them: the i-th name and value (0 <= i < count). */
const char *nodeclient_header(const struct nodeclient_xfer *x, const char *name);
int nodeclient_header_count(const struct nodeclient_xfer *x);
const char *nodeclient_header_at(const struct nodeclient_xfer *x, int i, const char **value);
/* Is x over HTTPS (an https:// URL)? */
int nodeclient_xfer_tls(const struct nodeclient_xfer *x);
void nodeclient_pause(struct nodeclient_xfer *x);
void nodeclient_resume(struct nodeclient_xfer *x);
void nodeclient_resume_upload(struct nodeclient_xfer *x);
/* The caller wrote the upload's rest into the socket (whole), or could
 * not (the transfer fails, later). */
void nodeclient_upload_moved(struct nodeclient_xfer *x, int whole);
/* Stop a transfer without calling its callbacks (not from inside them). */
void nodeclient_cancel(struct nodeclient_xfer *x);

/* A buffered request: method url; body may be NULL (len 0);
 * extra_hdr, when not NULL, is one more header line ("Name: value"). */
void nodeclient_request(struct nodeclient *c, const char *method, const char *url, const void *body,
                        size_t len, const char *extra_hdr, long timeout_ms, nodeclient_done_fn cb,
                        void *arg);

/* Give a taken body's socket back: pooled when whole (the caller read all
 * of it) and the peer keeps connections alive, else closed. Frees b. Call it
 * before nodeclient_free. */
void nodeclient_body_end(struct nodeclient_body *b, int whole);


#endif
