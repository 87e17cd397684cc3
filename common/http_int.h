/*
 * http_int: what http.c (connections, parsing, the server), httplisten.c
 * (accepting, idle connections), httpresp.c (responses), httptake.c and
 * httpstop.c share. Internal to the HTTP layer; users include http.h.
 */
#ifndef SHOAL_HTTP_INT_H
#define SHOAL_HTTP_INT_H

#include <llhttp.h>
#include <pthread.h>
#include <stdint.h>

#include "headblock.h"
#include "http.h"
#include "util.h"

/* A worker's listening socket, whether it accepts, and the connections it
 * may close to take new ones. */
struct http_listener {
    struct evconnlistener *lis;  /* NULL in a server from http_server_new */
    struct event *retry_ev;      /* ends an accept back-off */
    int max_conns;               /* the worker's share of max_connections */
    int pressure;                /* PRESSURE_PCT of max_conns (httplisten.c) */
    int backoff;                 /* accept failed: paused until retry_ev */
    int on;                      /* the listener is enabled */
    struct http_conn *idle_old;  /* the idle list (http_conn.idle_*), oldest first */
    struct http_conn *idle_new;  /* its newest end */
};

#define HTTP_FRESH_IDLE_S 1         /* a new connection silent this long is idle */

struct http_server {
    struct http_server_opts o;   /* defaults filled in */
    int n;
    struct http_worker *w;
    struct http_listener *lis;   /* one per worker */
    pthread_t *threads;          /* NULL in a server from http_server_new */
};

struct http_conn {
    struct http_worker *w;
    struct http_conn *prev, *next;   /* in w->conns */
    struct bufferevent *bev;
    llhttp_t parser;
    struct http_req *req;        /* the request being parsed or answered */
    char peer[64];

    /* header accumulation */
    struct headblock hb;
    int n_hdrs;
    int in_value;                /* last span was a value */
    int hdr_err;                 /* status to answer a header-limit error with */
    struct event *deadline_ev;   /* request head's deadline, then lingering close's */
    int fresh;                   /* deadline_ev stops first at FRESH_IDLE_S (http.c) */

    /* chunked body framing (see crlf_check) */
    uint64_t chunk_left;         /* data bytes of the current chunk not yet seen */
    int crlf_left;               /* bytes of the CRLF after chunk data not yet checked */
    const char *feed_end;        /* end of the bytes llhttp is parsing */

    int in_parse;                /* inside llhttp_execute */
    int paused;                  /* waiting for the current response */
    int closing;                 /* close once output is flushed */
    int lingering;               /* output flushed, dropping input until EOF */
    int tls;                     /* HTTPS: the bufferevent encrypts; no raw-socket paths */
    int aborting;                /* close, without completing, once flushed */
    int read_paused;             /* the handler asked for a pause */
    int body_out;                /* 1: the handler takes the body's socket; 2: it has it */
    int reset_at_finish;         /* the taken body was whole: parse afresh after it */
    struct event *resume_ev;
    struct event *flush_ev;      /* writes new output later in this loop pass */
    struct evbuffer_cb_entry *out_cb;
    int flush_queued;
    /* A file segment is in the output (since it was last empty); when it
     * went in first, more_head is the memory ahead of it (its head), sent
     * with MSG_MORE so that it leaves in the body's first packet. Any
     * drain of the output's front voids more_head (conn_outbuf_cb). */
    int seg_queued;
    size_t more_head;

    /* Between requests (no request, nothing left to send), or past its
     * head's deadline: on the worker's idle list, which a worker at its
     * share of max_connections closes from the oldest end (http.c). */
    struct http_conn *idle_prev, *idle_next;
    int idle;                    /* on the idle list */
    uint64_t idle_since_ns;      /* mono_ns() when it got there; 0: close first */

    /* Plain HTTP reads the socket itself (http_conn_read): libevent's
     * socket bufferevent asks the kernel how much is readable
     * (ioctl FIONREAD) before every read, a syscall a request. */
    struct event *rev;           /* NULL: HTTPS, the bufferevent reads */
    struct timeval read_tv;      /* a silent peer's timeout while reading */
    int reading;                 /* wanted: rev reads the socket; once not
                                  * wanted, rev stays added, unread, until
                                  * it fires (conn_readable): a request
                                  * answered later costs no epoll_ctl */
    size_t read_want;            /* bytes the next read may take (conn_readable) */
};


/* Refresh w->date (the Date header's text) when the second has changed.
 * Runs on w's thread. */
void http_date_update(struct http_worker *w);

/* The conn lets go of its finished request (c->req, if any), dropping the
 * conn's reference to it. Runs on the conn's worker thread. */
void http_conn_finish(struct http_conn *c);
/* Close c and free it (its request's on_abort first, when one is under way). */
void http_conn_free(struct http_conn *c);
/* Serve fd (connected; taken) on w. peer names the client in logs. */
void http_conn_new(struct http_worker *w, int fd, const char *peer);

/* httplisten.c: the worker's listener and its idle connections. c joins
 * its worker's idle list (doomed: past its head's deadline, at the oldest
 * end, to close first), leaves it, or joins it if it is between requests
 * with nothing left to send or parse. */
void http_idle_add(struct http_conn *c, int doomed);
void http_idle_del(struct http_conn *c);
void http_idle_check(struct http_conn *c);
/* Room for one more connection on w, made before it is taken. */
void http_conns_make_room(struct http_worker *w);
/* Enable w's listener when it may accept, disable it otherwise. */
void http_listener_update(struct http_worker *w);
/* Worker i's share of max_connections; its listening socket on sin (0, or
 * -1 with errno). */
void http_listener_init(struct http_server *s, int i);
struct sockaddr_in;
int http_listener_bind(struct http_server *s, int i, const struct sockaddr_in *sin);

/* The head was parsed and the handler takes the body (httptake.c): hand it
 * the bytes that came with the head and the socket, reading nothing more. */
void http_conn_hand_body(struct http_conn *c);
/* Reading c's socket on (with its timeout, read_tv) or off: its own read
 * event, or the bufferevent's for HTTPS. */
void http_conn_read(struct http_conn *c, int on);
/* The timeout of reading c, from the next time reading is turned on. */
void http_conn_read_timeout(struct http_conn *c, int secs);

#endif
