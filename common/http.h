/*
 * http: the HTTP/1.1 server layer over libevent and llhttp, used by every
 * Shoal daemon.
 *
 * Threads: the server runs N workers, each with its own event_base and its
 * own SO_REUSEPORT listener; a connection lives on one worker for its whole
 * life, and every callback below runs on that worker's thread.
 *
 * A request's life:
 *   1. The headers are parsed (limits: max_header_bytes, max_headers; past
 *      them the client gets 431 and the connection closes; past
 *      header_timeout_s it gets 408; malformed HTTP gets 400 and the
 *      connection closes, and so does a body framed by anything but one
 *      Content-Length within int64 or "Transfer-Encoding: chunked" alone).
 *   2. The server's handler is called with the request. It either replies
 *      at once, or installs body hooks (on_body, on_end) and/or takes a
 *      reference (http_req_ref) to reply later from another callback.
 *   3. Body bytes are handed to on_body as they arrive (decoded when
 *      chunked). A handler that cannot take more calls http_req_pause();
 *      reading stops until http_req_resume().
 *   4. The response is queued with http_reply*() or http_resp_begin/
 *      write/file/end. Pipelined requests are parsed only after the current
 *      response is queued, so responses never reorder.
 *   If the connection dies before the response is queued, on_abort (if set)
 *   is called once; later reply calls on that request are harmless no-ops.
 */
#ifndef SHOAL_HTTP_H
#define SHOAL_HTTP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evbuffer;
struct loopq;
struct http_server;
struct http_conn;
struct http_req;

struct http_worker {
    int idx;
    struct event_base *base;
    struct loopq *q;             /* cross-thread calls into this worker */
    struct http_server *srv;
    void *ctx;                   /* the daemon's shared context */
    void *local;                 /* the daemon's per-worker state */
    struct http_conn *conns;     /* live connections, freed at stop */
    int nconns;                  /* how many (read by the stopping thread) */
    int draining;                /* atomic: the server stops (http_server_drain) */
    char date[40];               /* cached Date header value */
    int64_t date_sec;
};

typedef void (*http_handler_fn)(struct http_req *req);

#define HTTP_HEADER_TIMEOUT_S 30    /* header_timeout_s when 0 */
#define HTTP_MAX_CONNECTIONS 4096   /* max_connections when 0 */

struct http_server_opts {
    const char *host;
    int port;
    int workers;
    int max_header_bytes;
    int max_headers;
    int idle_timeout_s;
    /* A request head must be complete this many seconds after the
     * connection was accepted (its first request) or after its first byte
     * arrived (later requests); past it the client gets 408 and the
     * connection closes. Bounds slow-header (slowloris) clients, which
     * idle_timeout_s cannot: every byte restarts that one. 0: the default. */
    int header_timeout_s;
    /* Open connections at most, split across the workers (each takes
     * ceil(max_connections / workers)). A worker at its share closes its
     * longest idle connection (between requests, or past its head's
     * deadline) to take a new one, and from 90% of it on closes those idle
     * longer than 5 s; with none idle it stops accepting until one of its
     * connections closes or goes idle, and new connections wait in the
     * kernel's backlog meanwhile. A request under way is never cut. 0: the
     * default. */
    int max_connections;
    /* HTTPS with this context (tls.h); NULL: plain HTTP. Every connection
     * then reads and writes through OpenSSL's bufferevent: the paths that
     * hand the raw socket out (http_req_take_body, http_resp_fd) decline. */
    struct ssl_ctx_st *tls;
    http_handler_fn handler;
    void *ctx;
    /* Optional, run on each worker's thread before and after its loop. */
    void (*worker_init)(struct http_worker *w);
    void (*worker_fini)(struct http_worker *w);
    /* Optional: once per request whose response was queued whole
     * (http_resp_end), on the worker's thread, with r->status set; for
     * metrics (r->op, r->t_start_ns). */
    void (*on_done)(struct http_req *r);
};

struct http_hdr {
    const char *name;
    const char *value;           /* trimmed of surrounding white space */
};

enum http_method_id {
    HTTP_M_DELETE = 0, HTTP_M_GET = 1, HTTP_M_HEAD = 2, HTTP_M_POST = 3,
    HTTP_M_PUT = 4, HTTP_M_OPTIONS = 6, HTTP_M_PATCH = 28, HTTP_M_OTHER = -1
};

struct http_req {
    struct http_worker *w;
    struct http_conn *conn;      /* NULL once the connection is gone */
    int method;                  /* enum http_method_id */
    const char *method_name;
    const char *target;          /* raw request target */
    const char *path;            /* percent-decoded path; may hold NUL */
    size_t path_len;
    const char *query;           /* raw query string, "" when none */
    struct http_hdr *hdrs;
    int n_hdrs;
    int64_t content_length;      /* -1: chunked or no length */
    int chunked;
    int expect_continue;
    uint64_t body_received;

    /* Set by the handler. */
    int (*on_body)(struct http_req *req, const char *p, size_t n); /* 0 or -errno */
    void (*on_end)(struct http_req *req);
    void (*on_abort)(struct http_req *req);
    void (*on_drain)(struct http_req *req);  /* output buffer emptied */
    /* The body's socket, taken (http_req_take_body). */
    void (*on_taken)(struct http_req *req, const char *pre, size_t pre_len, int fd,
                     uint64_t left);
    /* Formats http_reply_error's answer instead of the JSON body (the S3
     * API's XML errors); err_code, when set, is the error's code name. */
    void (*on_error)(struct http_req *req, int status, const char *msg);
    const char *err_code;
    void *data;
    /* The verified credentials of the request's signer (a struct
     * s3auth_result, set by the daemon's authentication step; NULL when
     * the request was not signed by a client). Freed with the request. */
    void *auth;
    /* What the request is, for metrics and logs ("get", "s3.put"...); set
     * by the route or the handler, NULL for "other". */
    const char *op;
    uint64_t t_start_ns;         /* monotonic clock when its head was parsed */

    /* Internal state. */
    int refs;
    int body_done;
    int continue_sent;
    int resp_started;
    int resp_done;
    int resp_chunked;
    int head_only;
    int status;
    struct evbuffer *resp_hdrs;
    char *mem;                   /* backing store of target/path/query/hdrs */
};

struct http_server *http_server_start(const struct http_server_opts *o, char *err,
                                      size_t errlen);
/* Stop every loop, join the threads and free the server. Any thread but a
 * worker's. */
void http_server_stop(struct http_server *s);
/* Is r's connection HTTPS? */
int http_req_tls(const struct http_req *r);
/* Open client connections, over every worker (any thread). */
int http_server_conns(const struct http_server *s);
/* Its first half: stop every loop and join the threads, keeping the
 * workers' loopqs, so that work still under way elsewhere (an I/O pool)
 * can finish posting to them; http_server_free then frees it. */
void http_server_halt(struct http_server *s);
/* Before stopping: close the idle connections, answer every request
 * that starts from now on 503 (Retry-After) and close its connection,
 * and wait until the requests under way are answered and their
 * connections closed, at most grace_s seconds. From the main thread. */
void http_server_drain(struct http_server *s, int grace_s);

/*
 * A server without listeners or threads, for tests and fuzzing: the caller
 * runs its workers' event bases (w->base) on its own thread and hands it
 * connected sockets with http_server_adopt. host and port are unused.
 */
struct http_server *http_server_new(const struct http_server_opts *o);
/* Serve the connected socket fd on w, as if w had accepted it; takes fd.
 * On w's thread. */
void http_server_adopt(struct http_worker *w, int fd);
/* Free a server from http_server_new, closing its connections; none of
 * its loops may be running. */
void http_server_free(struct http_server *s);

struct http_worker *http_server_worker(struct http_server *s, int i);

/* Request accessors. */
/* Is the decoded path exactly s. */
int http_path_is(const struct http_req *r, const char *s);
const char *http_req_header(const struct http_req *r, const char *name);
/* Percent-decoded value of query parameter name into out (NUL-terminated).
 * Returns its length, -1 when absent, -2 when malformed or too long. A
 * parameter present without '=' has the value "". */
int http_query_get(const struct http_req *r, const char *name, char *out, size_t outlen);

void http_req_ref(struct http_req *r);
void http_req_unref(struct http_req *r);
void http_req_pause(struct http_req *r);
void http_req_resume(struct http_req *r);

/*
 * Take the request's body as the client's socket, to move it without
 * copying it (splice): from the handler, before anything else took the
 * body, for one with a Content-Length. Later, on the loop, taken gets the
 * body bytes that came with the head (pre_len of them, valid during the
 * call) and the socket (non-blocking, still the server's) from which the
 * caller reads exactly left more bytes; then it calls http_req_body_taken
 * and the server reads the connection again after them (whole), or closes
 * it after the answer (not whole). A 100 Continue the client asked for is
 * sent. -1 (and nothing changes) when the body cannot be taken.
 */
typedef void (*http_body_taken_fn)(struct http_req *r, const char *pre, size_t pre_len, int fd,
                                   uint64_t left);
int http_req_take_body(struct http_req *r, http_body_taken_fn taken);
void http_req_body_taken(struct http_req *r, int whole);

/* A set of header names, matched in any case: each with its length. */
struct http_name {
    const char *s;
    size_t len;
};
#define HTTP_NAME(lit) {lit, sizeof(lit) - 1}
/* The index of name (len bytes) in set[0..n), or -1. */
int http_name_find(const char *name, size_t len, const struct http_name *set, size_t n);

/* Responses. Headers are added before http_resp_begin. */
void http_resp_header(struct http_req *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a value as it is, without formatting it. */
void http_resp_header_str(struct http_req *r, const char *name, const char *value);
/* length -1 selects chunked encoding. */
void http_resp_begin(struct http_req *r, int status, int64_t length);
void http_resp_write(struct http_req *r, const void *p, size_t n);
/* Move all of b's bytes into the response (its chains, not a copy); b
 * is left empty. */
void http_resp_buffer(struct http_req *r, struct evbuffer *b);
/* Send len bytes of fd from off with sendfile; takes ownership of fd. */
void http_resp_file(struct http_req *r, int fd, int64_t off, int64_t len);
/* Send [off, off+len) of a file segment (see evbuffer_file_segment_new)
 * with sendfile; the segment must stay valid, libevent holds a reference. */
struct evbuffer_file_segment;
void http_resp_segment(struct http_req *r, struct evbuffer_file_segment *seg, int64_t off,
                       int64_t len);
void http_resp_end(struct http_req *r);
/* Give up on a response that has started: the connection closes (in this
 * loop pass, after what was queued), so the client sees a truncated body
 * (never one that looks complete). on_abort is not called. */
void http_resp_abort(struct http_req *r);
/* Ask for the connection to close once this response is out. */
void http_resp_close(struct http_req *r);
size_t http_resp_pending(const struct http_req *r);
/* The client socket, for writing a started response's body straight to
 * it (splice): only while nothing is queued (else -1); the caller writes
 * exactly the promised length, then calls http_resp_end. */
int http_resp_fd(const struct http_req *r);

void http_reply(struct http_req *r, int status, const char *ctype, const void *body,
                size_t len);
/* Takes the reference to j. */
void http_reply_json(struct http_req *r, int status, json_t *j);
/* {"error": "...", "status": N} (or r->on_error's body), with status
 * whatever the message holds: bytes that are not UTF-8 in it are written
 * as \xHH. */
void http_reply_error(struct http_req *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

const char *http_reason(int status);
/* Percent-decode n bytes of s into out (at least n+1 bytes). Returns the
 * decoded length or -1 on a malformed escape. */
int http_pct_decode(const char *s, size_t n, char *out);
/* Normalize the keys of query q in place (RFC 3986 6.2.2: an escaped
 * unreserved byte is written plain, other escapes in upper-case hex), so
 * that every decision on a key sees one spelling whatever the client's
 * (?%61cl is ?acl). Values are kept as they came. 0, or -1 when a key has
 * a malformed escape. */
int http_query_normalize(char *q);
/* Percent-encode for a path (keeps unreserved and '/') into a new string. */
char *http_pct_encode(const char *s, size_t n, int keep_slash);

#endif
