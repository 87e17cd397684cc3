/*
 * httptake: a request body handed to its handler as the client's socket
 * (http_req_take_body in http.h), so that it can move without a copy
 * (splice), and the connection's return to parsing after it.
 *
 * Thread: the connection's worker.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdlib.h>

#include "http.h"
#include "http_int.h"
#include "util.h"

int http_req_take_body(struct http_req *r, http_body_taken_fn taken)
{
    struct http_conn *c = r->conn;
    if (!c || c->tls || !c->in_parse || r->chunked || r->content_length <= 0 || r->body_received ||
        r->resp_started || r->on_body || r->on_end)
        return -1;
    c->body_out = 1;
    r->on_taken = taken;
    return 0;
}

/* The head was parsed and the handler takes the body: hand it the bytes
 * that came with the head and the socket, reading nothing more. */
void http_conn_hand_body(struct http_conn *c)
{
    struct http_req *r = c->req;
    if (!r->on_taken) {          /* the handler gave up on it meanwhile */
        c->body_out = 2;
        http_req_body_taken(r, 0);
        return;
    }
    struct evbuffer *in = bufferevent_get_input(c->bev);
    uint64_t clen = (uint64_t)r->content_length;
    size_t have = evbuffer_get_length(in);
    size_t pre = have < clen ? have : (size_t)clen;
    char *bytes = xmalloc(pre + 1);
    evbuffer_remove(in, bytes, pre);
    c->body_out = 2;
    http_conn_read(c, 0);
    r->on_taken(r, bytes, pre, bufferevent_getfd(c->bev), clen - pre);
    free(bytes);
}

void http_req_body_taken(struct http_req *r, int whole)
{
    struct http_conn *c = r->conn;
    if (!c || c->body_out != 2)
        return;
    c->body_out = 0;
    if (!whole) {                /* the rest of the body is unread: close */
        c->closing = 1;
        if (r->resp_done)        /* after the answer; else http_resp_end does */
            bufferevent_trigger(c->bev, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS);
        return;
    }
    r->body_received = (uint64_t)r->content_length;
    r->body_done = 1;
    /* the next request starts after the body: the parser starts afresh
     * once this request is finished (its answer still asks the parser
     * whether the connection is kept) */
    c->reset_at_finish = 1;
    if (r->resp_done)
        http_conn_finish(c);
    else
        c->paused = 1;           /* http_resp_end goes on */
    event_active(c->resume_ev, EV_TIMEOUT, 0);
}
