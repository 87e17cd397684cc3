/*
 * nodeclient_int: what nodeclient.c (connections, requests, answers) and nodeclientbuf.c (the
 * buffered form) share. Internal to nodeclient; users include nodeclient.h.
 */
#ifndef SHOAL_NODECLIENT_INT_H
#define SHOAL_NODECLIENT_INT_H

#include <llhttp.h>
#include <stdint.h>

#include "headblock.h"
#include "nodeclient.h"
#include "http.h"
#include "util.h"

struct bufferevent;
struct evdns_base;
struct event;
struct event_base;

#define NODECLIENT_UP_LOW 262144 /* the upload source is asked for more below this */
#define NODECLIENT_UP_PIECE 65536 /* bytes asked of the upload source at a time */
#define NODECLIENT_IDLE_S 30     /* no progress on the socket for this long ends it */

struct nodeclient_conn {
    struct nodeclient *c;
    struct nodeclient_conn *next; /* in c->idle */
    struct bufferevent *bev;
    char host[NODECLIENT_HOST_MAX];
    int port;
    int reused;                  /* has carried a transfer before */
    int connected;
    struct event *rev;           /* reads, around the bufferevent (read_on) */
    int reading;                 /* wanted: started once connected */
    int idle_on;                 /* reading has a deadline of no progress */
    int starting;                /* inside bev_connect: events are only noted */
    int tls;                     /* HTTPS: OpenSSL's bufferevent reads (rev: the idle timer) */
    int start_failed;            /* an event during bev_connect said it failed */
    struct nodeclient_xfer *x;   /* the transfer it carries, or NULL (idle) */
};

struct nodeclient_xfer {
    struct nodeclient *c;
    struct nodeclient_xfer *prev, *next; /* in c->xfers */
    struct nodeclient_conn *conn;
    const struct nodeclient_ops *ops;
    void *arg;
    char host[NODECLIENT_HOST_MAX];
    int port;
    int tls;                     /* an https:// URL */
    int head;                    /* a HEAD: the answer has no body */
    int idempotent;              /* GET, HEAD, PUT, DELETE: safe to send twice */
    struct gbuf out;             /* the request's head (and a buffered body) */
    int64_t up_len;              /* bytes from ops->on_read; -1: none; NODECLIENT_UP_CHUNKED */
    int64_t up_sent;
    int up_ended; /* NODECLIENT_UP_CHUNKED: the source ended, the last chunk queued */
    int up_waiting; /* the source said NODECLIENT_READ_PAUSE */
    int up_socket; /* NODECLIENT_READ_SOCKET: 1 to hand over, 2 handed */
    const char *up_mem; /* nodeclient_start_mem's body (up_len bytes), by reference */
    int expect; /* the request says Expect: 100-continue */
    int expect_wait; /* ... and the body waits for the 100 */
    enum nodeclient_fail fail; /* why a failed transfer failed */
    int reached; /* its connection is (was) connected (nodeclient_reached) */

    llhttp_t parser;
    struct headblock hb;         /* the answer's header block: name\0value\0... */
    int n_hdrs;
    struct http_hdr *hdr;        /* n_hdrs entries pointing into hb, after the head */
    int got_bytes;               /* any of the answer has arrived */
    int headers_done;
    int complete;                /* the whole answer has arrived */
    int stopped;                 /* a callback asked to stop */
    int paused;
    int in_cb;                   /* inside the read path: resume later, not now */
    int tries;
    int taking;                  /* on_headers asked for the body's socket */

    char err[400];               /* set: the timer reports this failure */
    struct event *timer;         /* the deadline, or an immediate failure */
    struct event *kick;          /* resume reading or uploading, from the loop */
    struct event *expect_ev;     /* no 100 Continue in time: the body goes anyway */

    /* nodeclient_request's buffered answer */
    struct gbuf body;
    nodeclient_done_fn cb;
};

struct nodeclient {
    struct event_base *base;
    struct evdns_base *dns;      /* made on the first name to resolve */
    struct nodeclient_conn *idle;
    int n_idle;
    struct nodeclient_xfer *xfers; /* in flight */
    llhttp_settings_t settings;
    char *rbuf;                  /* NODECLIENT_FEED bytes: where reads land */
    struct nodeclient_conn *rbuf_conn; /* whose input refers to rbuf, while one does */
};

/* A request of method to url (not yet sent); a failure already found (a
 * bad URL) is in x->err, reported from its timer. */
struct nodeclient_xfer *nodeclient_xfer_new(struct nodeclient *c, const char *method,
                                            const char *url, const char *const *hdrs, int n,
                                            int64_t clen, long timeout_ms,
                                            const struct nodeclient_ops *ops, void *arg);

/* Send x on a pooled connection (fresh: a new one). */
void nodeclient_send_on(struct nodeclient_xfer *x, int fresh);
/* x ends now with status (0: failed, err says why), reported to its
 * caller; or from its timer, soon (nodeclient_fail_later). */
void nodeclient_finish(struct nodeclient_xfer *x, int status, const char *err);
void nodeclient_fail_later(struct nodeclient_xfer *x, const char *why);
/* k reads with a deadline of no progress of idle_s seconds. */
void nodeclient_read_idle(struct nodeclient_conn *k, int idle_s);

/* Uploads (nodeclientup.c). Does x have a body from its source; is all of it
 * taken from there? */
int nodeclient_uploads(const struct nodeclient_xfer *x);
int nodeclient_upload_over(const struct nodeclient_xfer *x);
/* Move body bytes from the source to the socket while it takes them: -1
 * when x failed (and is gone), else 0. */
int nodeclient_pump_upload(struct nodeclient_xfer *x);
/* After NODECLIENT_READ_SOCKET: the socket to the caller once what nodeclient queued is
 * out. 0. */
int nodeclient_hand_socket(struct nodeclient_xfer *x);

#endif
