/*
 * http: connections, request parsing, and the server and its listeners.
 *
 * Responses and the helpers on request fields are in httpresp.c; the
 * structures both files use are in http_int.h.
 *
 * Each connection owns a bufferevent and an llhttp parser. Bytes are fed to
 * the parser one contiguous chunk at a time, so the loop can stop between
 * chunks when the handler asked for a pause or a response is pending.
 *
 * Header spans arrive in pieces (llhttp calls on_header_field/value once per
 * piece); they are accumulated in one buffer, conn->hb, as
 * "target\0name\0value\0name\0value\0..." and turned into pointers only when
 * the header block is complete, since the buffer may move while it grows.
 *
 * Pipelining: when a request's message is complete but its response is not
 * queued yet, on_message_complete pauses the parser (HPE_PAUSED) and reading
 * stops; queuing the response resumes it. A response that is queued while
 * the body is still arriving (an early error) leaves the rest of the body to
 * be read and dropped when it is small, or closes the connection after the
 * response (with a lingering close so the client can read it) when it is
 * large, chunked, or was never sent because of Expect: 100-continue.
 *
 * Framing: llhttp is built in its lenient mode (no LLHTTP_STRICT_MODE),
 * which lets through what a request smuggler needs, so on_headers_complete
 * refuses before the handler runs any request whose body is framed by
 * anything but one Content-Length within int64 or "Transfer-Encoding:
 * chunked" alone, and the bytes after each chunk's data, which lenient
 * llhttp skips unseen, are checked to be CRLF here (crlf_check).
 *
 * Defences against clients that hold resources: each connection has one
 * deadline timer, first for its request head (header_timeout_s), then for
 * its lingering close; each worker takes at most its share of
 * max_connections, closing its longest idle connections to take new ones
 * (httplisten.c).
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/uio.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "headblock.h"
#include "http_int.h"
#include "log.h"
#include "loopq.h"
#include "util.h"

#define FEED_CHUNK (256 * 1024)     /* bytes handed to llhttp per call */
#define READ_MIN (16 * 1024)        /* a read of a plain connection's socket takes at least */
#define WRITE_MAX (2 << 20)         /* bytes written per callback */
#define LINGER_S 2                  /* lingering close: read and drop for this long */

static llhttp_settings_t parser_settings;

static void conn_process(struct http_conn *c);

/* (Re)arm the connection's one deadline (see conn_deadline_cb). */
static void deadline_set(struct http_conn *c, int seconds)
{
    struct timeval tv = {seconds, 0};
    evtimer_add(c->deadline_ev, &tv);
}

/* ---- request lifetime ------------------------------------------------- */

void http_req_ref(struct http_req *r)
{
    r->refs++;
}

void http_req_unref(struct http_req *r)
{
    if (--r->refs > 0)
        return;
    if (r->resp_hdrs)
        evbuffer_free(r->resp_hdrs);
    free(r->hdrs);
    free(r->mem);
    free(r->auth);
    free(r);
}

void http_req_pause(struct http_req *r)
{
    struct http_conn *c = r->conn;
    if (!c || c->read_paused)
        return;
    c->read_paused = 1;
    http_conn_read(c, 0);
}

void http_req_resume(struct http_req *r)
{
    struct http_conn *c = r->conn;
    if (!c || !c->read_paused)
        return;
    c->read_paused = 0;
    event_active(c->resume_ev, EV_TIMEOUT, 0);
}

/* ---- answers without the handler ------------------------------------ */

/* An error before a request object exists (malformed request line). */
static void conn_fail(struct http_conn *c, int status, const char *msg)
{
    http_idle_del(c);
    http_date_update(c->w);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    char body[256];
    int n = snprintf(body, sizeof(body), "{\"error\":\"%s\",\"status\":%d}\n", msg, status);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nServer: shoal\r\nDate: %s\r\n"
                        "Content-Type: application/json\r\nContent-Length: %d\r\n"
                        "Connection: close\r\n\r\n%s",
                        status, http_reason(status), c->w->date, n, body);
    c->closing = 1;
    bufferevent_enable(c->bev, EV_WRITE);
}

/* The layer answers in the handler's place (a broken body): the handler's
 * state is released through on_abort, and no hook runs again. */
static void req_drop_hooks(struct http_req *r)
{
    void (*abort_fn)(struct http_req *) = r->on_abort;
    r->on_body = NULL;
    r->on_end = NULL;
    r->on_abort = NULL;
    r->on_drain = NULL;
    if (abort_fn)
        abort_fn(r);
}

/* ---- parser callbacks ------------------------------------------------- */

static int hb_add(struct http_conn *c, const char *p, size_t n)
{
    if (headblock_add(&c->hb, p, n)) {
        c->hdr_err = 431;
        return -1;
    }
    return 0;
}

static int on_message_begin(llhttp_t *p)
{
    struct http_conn *c = p->data;
    if (c->closing)
        return HPE_USER; /* nothing more is read on a closing connection */
    http_idle_del(c);
    /* The head's clock runs from this first byte, or from the accept when
     * this is the connection's first request (then it is running). */
    if (!evtimer_pending(c->deadline_ev, NULL))
        deadline_set(c, c->w->srv->o.header_timeout_s);
    c->chunk_left = 0;
    c->crlf_left = 0;
    struct http_req *r = xcalloc(1, sizeof(*r));
    r->w = c->w;
    r->conn = c;
    r->refs = 1;
    r->method_name = "-";
    r->content_length = -1;
    c->req = r;
    headblock_reset(&c->hb);
    c->n_hdrs = 0;
    c->in_value = 0;
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    struct http_conn *c = p->data;
    if (hb_add(c, at, n)) {
        c->hdr_err = 414;
        return HPE_USER;
    }
    return 0;
}

static int on_url_complete(llhttp_t *p)
{
    return hb_add(p->data, "", 1) ? HPE_USER : 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    return hb_add(p->data, at, n) ? HPE_USER : 0;
}

static int on_header_field_complete(llhttp_t *p)
{
    struct http_conn *c = p->data;
    if (++c->n_hdrs > c->w->srv->o.max_headers) {
        c->hdr_err = 431;
        return HPE_USER;
    }
    return hb_add(c, "", 1) ? HPE_USER : 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    struct http_conn *c = p->data;
    c->in_value = 1;
    return hb_add(c, at, n) ? HPE_USER : 0;
}

static int on_header_value_complete(llhttp_t *p)
{
    struct http_conn *c = p->data;
    c->in_value = 0;
    return hb_add(c, "", 1) ? HPE_USER : 0;
}

/* Turn the accumulated block into the request's fields. Returns 0 or an
 * HTTP status for a bad request target. */
static int req_build(struct http_conn *c, struct http_req *r)
{
    /* Layout of r->mem: the header block, then the decoded path. */
    struct gbuf *hb = &c->hb.b;
    size_t tlen = strlen(hb->p);
    r->mem = xmalloc(hb->n + tlen + 2);
    memcpy(r->mem, hb->p, hb->n);
    r->target = r->mem;
    r->hdrs = xcalloc((size_t)c->n_hdrs + 1, sizeof(*r->hdrs));
    /* field complete without value complete cannot happen in llhttp, but
     * the block is checked to hold every string anyway */
    if (headblock_pairs(r->mem, hb->n, 1, c->n_hdrs, r->hdrs))
        return 400;
    r->n_hdrs = c->n_hdrs;

    /* Request target: origin-form, or absolute-form from proxies. */
    const char *t = r->target;
    if (!strncasecmp(t, "http://", 7) || !strncasecmp(t, "https://", 8)) {
        const char *s = strchr(t + (t[4] == 's' || t[4] == 'S' ? 8 : 7), '/');
        t = s ? s : "/";
    }
    if (t[0] != '/')
        return 400;
    const char *qm = strchr(t, '?');
    size_t plen = qm ? (size_t)(qm - t) : strlen(t);
    r->query = qm ? qm + 1 : "";
    if (qm && http_query_normalize((char *)r->query))
        return 400;              /* a key's escape is malformed */
    char *path = r->mem + hb->n;
    int d = http_pct_decode(t, plen, path);
    if (d < 0)
        return 400;
    r->path = path;
    r->path_len = (size_t)d;
    return 0;
}

/*
 * How the body is framed, from the headers as they arrived: sets
 * r->content_length (-1 when chunked; 0 when neither header is present)
 * and r->chunked. Returns NULL, or why the request must be refused:
 * a Content-Length that is not a decimal within int64, more than one
 * (equal or not), a Transfer-Encoding other than "chunked" alone (codings
 * Shoal does not decode would be stored encoded), or both headers at once
 * (the two framings a smuggler plays against each other).
 */
static const char *req_framing(struct http_req *r)
{
    const char *cl = NULL, *te = NULL;
    int n_cl = 0, n_te = 0;
    for (int i = 0; i < r->n_hdrs; i++) {
        if (!strcasecmp(r->hdrs[i].name, "Content-Length")) {
            cl = r->hdrs[i].value;
            n_cl++;
        } else if (!strcasecmp(r->hdrs[i].name, "Transfer-Encoding")) {
            te = r->hdrs[i].value;
            n_te++;
        }
    }
    if (n_cl && n_te)
        return "both Content-Length and Transfer-Encoding";
    if (n_cl > 1)
        return "more than one Content-Length";
    if (n_te > 1 || (te && strcasecmp(te, "chunked")))
        return "unsupported Transfer-Encoding";
    uint64_t len = 0;
    if (cl && (parse_u64(cl, strlen(cl), &len) || len > INT64_MAX))
        return "malformed Content-Length";
    r->chunked = te != NULL;
    r->content_length = te ? -1 : (int64_t)len;
    return NULL;
}

/* Answer a request the handler never sees with status, and stop parsing:
 * nothing after the head is read. The return value is on_headers_complete's. */
static int req_refuse(struct http_req *r, int status, const char *msg)
{
    http_resp_close(r);
    http_reply_error(r, status, "%s", msg);
    return HPE_USER;
}

static int on_headers_complete(llhttp_t *p)
{
    struct http_conn *c = p->data;
    struct http_req *r = c->req;
    evtimer_del(c->deadline_ev);
    c->fresh = 0;
    r->t_start_ns = mono_ns();
    r->method = p->method;
    r->method_name = llhttp_method_name(p->method);
    r->head_only = p->method == HTTP_HEAD;
    int st = req_build(c, r);
    if (st)
        return req_refuse(r, st, "malformed request target");
    const char *bad = req_framing(r);
    if (bad)
        return req_refuse(r, 400, bad);
    /* what llhttp goes on to read must be what was just checked */
    if (r->chunked != ((p->flags & F_CHUNKED) != 0) ||
        (!r->chunked && p->content_length != (uint64_t)r->content_length))
        return req_refuse(r, 400, "inconsistent message framing");
    const char *ex = http_req_header(r, "Expect");
    r->expect_continue = ex && !strcasecmp(ex, "100-continue");
    if (__atomic_load_n(&c->w->draining, __ATOMIC_RELAXED)) {
        http_resp_header_str(r, "Retry-After", "1");
        return req_refuse(r, 503, "this node is shutting down");
    }
    c->w->srv->o.handler(r);
    /* A handler that takes the body gets it announced, even an empty one:
     * some clients (botocore) misread a final answer that comes without
     * the 100 they asked for. */
    if (r->conn && (r->on_body || r->on_end || c->body_out) && !r->resp_started &&
        r->expect_continue) {
        r->continue_sent = 1;
        evbuffer_add(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n", 25);
    }
    return c->body_out ? HPE_PAUSED : 0; /* conn_process hands the body over */
}

/*
 * The CRLF that must follow each chunk's data: lenient llhttp skips two
 * bytes there without looking at them, so "5\r\nhelloXY0\r\n\r\n" would
 * pass as a body. c->crlf_left of those bytes are still to be checked;
 * they start at p, and the part of them before end is checked now. The rest
 * opens the next buffer given to llhttp (conn_parse). 0, or -1 when a byte
 * is wrong.
 */
static int crlf_check(struct http_conn *c, const char *p, const char *end)
{
    for (; c->crlf_left > 0 && p < end; p++, c->crlf_left--)
        if (*p != "\r\n"[2 - c->crlf_left])
            return -1;
    return 0;
}

static int on_chunk_header(llhttp_t *p)
{
    struct http_conn *c = p->data;
    c->chunk_left = p->content_length; /* the chunk's size */
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    struct http_conn *c = p->data;
    struct http_req *r = c->req;
    r->body_received += n;
    /* A body span never runs past its chunk: the chunk's data ends at
     * at + n when it has all arrived. */
    if (r->chunked && (c->chunk_left -= n) == 0) {
        c->crlf_left = 2;
        if (crlf_check(c, at + n, c->feed_end)) {
            llhttp_set_error_reason(p, "no CRLF after chunk data");
            return HPE_USER;
        }
    }
    if (r->on_body && !r->resp_started) {
        int rc = r->on_body(r, at, n);
        if (rc < 0 && !r->resp_started) {
            req_drop_hooks(r);
            http_resp_close(r);
            http_reply_error(r, 500, "request body: %s", strerror(-rc));
        }
    }
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct http_conn *c = p->data;
    struct http_req *r = c->req;
    r->body_done = 1;
    if (r->on_end && !r->resp_started)
        r->on_end(r);
    if (c->closing)
        return HPE_PAUSED;
    if (r->resp_done) {
        http_conn_finish(c);
        return 0;
    }
    c->paused = 1;
    return HPE_PAUSED;
}

/* The conn lets go of the finished request. */
void http_conn_finish(struct http_conn *c)
{
    struct http_req *r = c->req;
    if (!r)
        return;
    c->req = NULL;
    r->conn = NULL;
    if (c->reset_at_finish) {
        c->reset_at_finish = 0;
        llhttp_reset(&c->parser);
    }
    /* a pause belonged to the request: resuming it is a no-op from now on */
    if (c->read_paused) {
        c->read_paused = 0;
        event_active(c->resume_ev, EV_TIMEOUT, 0);
    }
    http_req_unref(r);
    http_idle_check(c);
}

/* ---- connection ------------------------------------------------------- */

/* Hand n bytes to llhttp, first checking the end of a chunk's CRLF that
 * the previous bytes left unchecked. Returns llhttp's result. */
static llhttp_errno_t conn_parse(struct http_conn *c, const char *p, size_t n)
{
    if (c->crlf_left && crlf_check(c, p, p + n)) {
        /* as llhttp fails: the parser stays failed, with the reason */
        c->parser.error = HPE_STRICT;
        c->parser.reason = "no CRLF after chunk data";
        c->parser.error_pos = p;
        return HPE_STRICT;
    }
    c->feed_end = p + n;
    c->in_parse = 1;
    llhttp_errno_t e = llhttp_execute(&c->parser, p, n);
    c->in_parse = 0;
    return e;
}

static void conn_process(struct http_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    /* Bytes before any request began (llhttp skips blank lines there
     * without beginning one) start the head's clock too. */
    if (!c->req && !c->closing && evbuffer_get_length(in) > 0 &&
        !evtimer_pending(c->deadline_ev, NULL))
        deadline_set(c, c->w->srv->o.header_timeout_s);
    while (!c->paused && !c->closing && !c->read_paused && !c->aborting && !c->body_out) {
        size_t avail = evbuffer_get_length(in);
        if (avail == 0)
            break;
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, FEED_CHUNK, NULL, &v, 1) < 1)
            break;
        size_t n = v.iov_len < FEED_CHUNK ? v.iov_len : FEED_CHUNK;
        llhttp_errno_t e = conn_parse(c, v.iov_base, n);
        if (e == HPE_OK) {
            evbuffer_drain(in, n);
            continue;
        }
        if (e == HPE_PAUSED) {
            const char *pos = llhttp_get_error_pos(&c->parser);
            size_t used = pos ? (size_t)(pos - (const char *)v.iov_base) : n;
            evbuffer_drain(in, used);
            if (c->closing)
                break;
            if (c->body_out == 1) {
                http_conn_hand_body(c);
                break;
            }
            /* paused for a pending response */
            if (!c->paused) {
                llhttp_resume(&c->parser);
                continue;
            }
            break;
        }
        /* A parse error: answer if nothing was answered yet, then close. */
        if (c->closing)
            break;
        struct http_req *r = c->req;
        int st = c->hdr_err ? c->hdr_err : 400;
        if (r && r->resp_started) {
            c->closing = 1;
            bufferevent_enable(c->bev, EV_WRITE);
        } else if (r && c->hdr_err == 0 && r->method_name[0] != '-') {
            /* error inside the body (bad chunk framing) */
            req_drop_hooks(r);
            http_resp_close(r);
            http_reply_error(r, 400, "malformed request body: %s",
                             llhttp_get_error_reason(&c->parser));
        } else {
            log_debug("%s: bad request: %s", c->peer, llhttp_errno_name(e));
            conn_fail(c, st, st == 431 ? "request header fields too large"
                             : st == 414 ? "request target too long"
                                         : "malformed HTTP request");
        }
        break;
    }
    /* Reading stops while a request waits for its answer: the idle
     * timeout is for a silent client, and a client that half-closes after
     * its request still gets the answer. */
    http_conn_read(c, !(c->paused || c->read_paused || c->closing || c->aborting || c->body_out));
    if (c->closing && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 &&
        !c->lingering) {
        /* nothing left to send: go straight to the lingering close */
        bufferevent_trigger(c->bev, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS);
    }
    http_idle_check(c);               /* a request that ended inside the parser */
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct http_conn *c = arg;
    if (c->lingering) {
        evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
        return;
    }
    conn_process(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg);

void http_conn_read(struct http_conn *c, int on)
{
    if (!c->rev) {
        if (on)
            bufferevent_enable(c->bev, EV_READ);
        else
            bufferevent_disable(c->bev, EV_READ);
        return;
    }
    if (!on && c->body_out)      /* the socket is its body's taker's now */
        event_del(c->rev);
    if (on == c->reading)
        return;
    c->reading = on;
    if (on)                      /* also restarts the silent peer's timer */
        event_add(c->rev, c->read_tv.tv_sec > 0 ? &c->read_tv : NULL);
}

void http_conn_read_timeout(struct http_conn *c, int secs)
{
    c->read_tv = (struct timeval){secs, 0};
    if (!c->rev) {
        bufferevent_set_timeouts(c->bev, secs > 0 ? &c->read_tv : NULL, NULL);
        return;
    }
    if (c->reading) {            /* from now */
        c->reading = 0;
        http_conn_read(c, 1);
    }
}

/* The socket is readable (or silent past read_tv): one read into the
 * input's own memory, of as much as the last reads suggest, then the
 * bytes go where the bufferevent's would have. */
static void conn_readable(evutil_socket_t fd, short what, void *arg)
{
    struct http_conn *c = arg;
    if (!c->reading) {           /* stopped since it was added: out now */
        event_del(c->rev);
        return;
    }
    if (what & EV_TIMEOUT) {
        conn_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, c);
        return;
    }
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct evbuffer_iovec v[2];
    evbuffer_unfreeze(in, 0);    /* a socket bufferevent freezes its input's end */
    int nv = evbuffer_reserve_space(in, (ev_ssize_t)c->read_want, v, 2);
    ssize_t n = nv > 0 ? readv(fd, (struct iovec *)v, nv) : -1;
    int err = n < 0 ? (nv > 0 ? errno : ENOMEM) : 0;
    size_t got = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < nv; i++) {
        size_t k = got < v[i].iov_len ? got : v[i].iov_len;
        v[i].iov_len = k;
        got -= k;
    }
    if (nv > 0)
        evbuffer_commit_space(in, v, nv);
    evbuffer_freeze(in, 0);
    if (n == 0 || (n < 0 && err != EAGAIN && err != EINTR)) {
        conn_event_cb(c->bev, BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), c);
        return;
    }
    if (n < 0)
        return;
    /* as much as came, twice over, next time: a body streams in large
     * reads, a request head takes a small one */
    size_t want = (size_t)n * 2;
    c->read_want = want < READ_MIN ? READ_MIN : want > FEED_CHUNK ? FEED_CHUNK : want;
    conn_read_cb(c->bev, c);
}

static void conn_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_conn *c = arg;
    conn_process(c);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct http_conn *c = arg;
    if (c->aborting) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            http_conn_free(c);
        return;
    }
    if (c->closing && !c->lingering) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) > 0)
            return;
        /* Lingering close: stop sending, drop whatever the client still
         * sends for a short while, so it reads our response instead of a
         * reset. */
        c->lingering = 1;
        if (c->req && !c->req->resp_done && c->req->on_abort)
            c->req->on_abort(c->req);
        http_conn_finish(c);
        if (!c->tls)
            shutdown(bufferevent_getfd(bev), SHUT_WR);
        http_conn_read(c, 0);
        if (c->rev)
            bufferevent_set_timeouts(bev, NULL, NULL);
        http_conn_read_timeout(c, LINGER_S);
        /* and at most that long in all, however the client trickles */
        deadline_set(c, LINGER_S);
        http_conn_read(c, 1);
        bufferevent_disable(bev, EV_WRITE);
        return;
    }
    if (c->req && c->req->on_drain && !c->req->resp_done)
        c->req->on_drain(c->req);
    if (evbuffer_get_length(bufferevent_get_output(bev)) > 0)
        return;
    /* Drained: new output goes through conn_flush_cb again. */
    if (!c->closing && !c->aborting && !c->tls)
        bufferevent_disable(bev, EV_WRITE);
    http_idle_check(c);
}

/*
 * Output is written in the loop pass that produced it, not after another
 * epoll round: while the socket keeps up, EV_WRITE stays off and the
 * bufferevent never arms it (two epoll_ctl calls and a wakeup per
 * response). Only output the socket cannot take at once arms EV_WRITE,
 * and conn_write_cb disarms it once drained.
 */
static void conn_flush_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_conn *c = arg;
    c->flush_queued = 0;
    size_t head = c->more_head;  /* valid in this pass only */
    c->more_head = 0;
    if (c->tls) {                /* never the socket itself: OpenSSL writes */
        bufferevent_enable(c->bev, EV_WRITE);
        return;
    }
    if (bufferevent_get_enabled(c->bev) & EV_WRITE)
        return; /* the bufferevent writes */
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_get_length(out) > 0) {
        /* A socket bufferevent keeps its output's start frozen; it thaws
         * it the same way around its own writes. */
        evbuffer_unfreeze(out, 1);
        /* One write takes memory or one file segment, never both: a head
         * followed by a sendfile'd body takes two, in this same pass. The
         * head goes first with MSG_MORE, so that it leaves in the body's
         * first packet (what nginx's tcp_nopush does with two more
         * system calls, TCP_CORK on and off). Memory alone leaves in one
         * writev. */
        ev_ssize_t left = WRITE_MAX;
        int n, e, sock = bufferevent_getfd(c->bev);
        if (head && head < evbuffer_get_length(out)) {
            const unsigned char *p = evbuffer_pullup(out, (ev_ssize_t)head);
            ssize_t k = p ? send(sock, p, head, MSG_MORE | MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
            if (k > 0) {         /* an error is met again by the write below */
                evbuffer_drain(out, (size_t)k);
                left -= (ev_ssize_t)k;
            }
        }
        do {
            n = evbuffer_write_atmost(out, sock, left);
            e = errno;
        } while (n > 0 && (left -= n) > 0 && evbuffer_get_length(out) > 0);
        evbuffer_freeze(out, 1);
        if (n < 0 && e != EAGAIN && e != EINTR) {
            /* let the bufferevent meet the error and report it */
            bufferevent_enable(c->bev, EV_WRITE);
            return;
        }
    }
    if (evbuffer_get_length(out) > 0)
        bufferevent_enable(c->bev, EV_WRITE);
    else
        conn_write_cb(c->bev, c);
}

static void conn_outbuf_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    (void)buf;
    struct http_conn *c = arg;
    if (info->n_deleted)
        c->more_head = 0;        /* the front moved: no longer the head's length */
    if (info->orig_size + info->n_added == info->n_deleted)
        c->seg_queued = 0;       /* empty */
    if (info->n_added && !c->flush_queued && !(bufferevent_get_enabled(c->bev) & EV_WRITE)) {
        c->flush_queued = 1;
        event_active(c->flush_ev, EV_WRITE, 0);
    }
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct http_conn *c = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED)
        return;                  /* HTTPS: the handshake is done */
    if (what & BEV_EVENT_TIMEOUT && !c->lingering)
        log_debug("%s: connection timed out", c->peer);
    http_conn_free(c);
}

/*
 * The connection's deadline passed. Closing already (the lingering close,
 * or a 408): free the connection now. A new connection's stop after
 * HTTP_FRESH_IDLE_S: list it as idle if it is silent, and wait for the rest of
 * its head's time. Still reading a request head: answer 408 and close,
 * giving the answer LINGER_S to leave; the connection may be closed at
 * once meanwhile to make room for a new one.
 */
static void conn_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_conn *c = arg;
    if (c->closing || c->aborting || c->lingering) {
        http_conn_free(c);
        return;
    }
    if (c->fresh) {              /* its first HTTP_FRESH_IDLE_S: see conn_new */
        c->fresh = 0;
        http_idle_check(c);
        deadline_set(c, c->w->srv->o.header_timeout_s - HTTP_FRESH_IDLE_S);
        return;
    }
    log_debug("%s: request head not complete in %d s", c->peer, c->w->srv->o.header_timeout_s);
    conn_fail(c, 408, "request header timeout");
    http_conn_read(c, 0);
    deadline_set(c, LINGER_S);
    http_idle_add(c, 1);
}

void http_conn_free(struct http_conn *c)
{
    struct http_worker *w = c->w;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    struct http_req *r = c->req;
    if (r) {
        if (!r->resp_done && r->on_abort)
            r->on_abort(r);
        http_conn_finish(c);
    }
    http_idle_del(c);
    if (c->rev)
        event_free(c->rev);
    event_free(c->resume_ev);
    event_free(c->deadline_ev);
    evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_cb);
    event_free(c->flush_ev);
    bufferevent_free(c->bev);
    headblock_free(&c->hb);
    free(c);
    /* a descriptor and a slot are free: accepting may resume at once */
    __atomic_sub_fetch(&w->nconns, 1, __ATOMIC_RELAXED);
    struct http_listener *l = &w->srv->lis[w->idx];
    if (l->backoff) {
        l->backoff = 0;
        evtimer_del(l->retry_ev);
    }
    http_listener_update(w);
}

void http_conn_new(struct http_worker *w, int fd, const char *peer)
{
    http_conns_make_room(w);
    struct http_conn *c = xcalloc(1, sizeof(*c));
    c->w = w;
    c->hb.max = (size_t)w->srv->o.max_header_bytes;
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    SSL *ssl = w->srv->o.tls ? SSL_new(w->srv->o.tls) : NULL;
    if (ssl) {
        c->tls = 1;
        c->bev = bufferevent_openssl_socket_new(w->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        if (c->bev)      /* a client that closes without close_notify is no error */
            bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else if (!w->srv->o.tls) {
        c->bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!c->bev) {               /* (an OpenSSL bufferevent that failed freed ssl) */
        if (!ssl)
            close(fd);
        free(c);
        return;
    }
    /* libevent's default of 16 KiB per read callback caps body throughput */
    bufferevent_set_max_single_read(c->bev, FEED_CHUNK);
    bufferevent_set_max_single_write(c->bev, WRITE_MAX);
    c->resume_ev = event_new(w->base, -1, 0, conn_resume_cb, c);
    c->flush_ev = event_new(w->base, -1, 0, conn_flush_cb, c);
    c->deadline_ev = evtimer_new(w->base, conn_deadline_cb, c);
    c->out_cb = evbuffer_add_cb(bufferevent_get_output(c->bev), conn_outbuf_cb, c);
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    __atomic_add_fetch(&w->nconns, 1, __ATOMIC_RELAXED);
    http_listener_update(w);
    llhttp_init(&c->parser, HTTP_REQUEST, &parser_settings);
    c->parser.data = c;
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    struct timeval idle = {w->srv->o.idle_timeout_s, 0};
    if (!c->tls) {
        c->rev = event_new(w->base, fd, EV_READ | EV_PERSIST, conn_readable, c);
        c->read_want = READ_MIN;
    }
    http_conn_read_timeout(c, w->srv->o.idle_timeout_s);
    bufferevent_set_timeouts(c->bev, c->tls ? &idle : NULL, &idle);
    /* The first request's head is due header_timeout_s after the accept;
     * the timer stops on the way, after HTTP_FRESH_IDLE_S, to list the
     * connection as idle if it has sent nothing yet. */
    c->fresh = w->srv->o.header_timeout_s > HTTP_FRESH_IDLE_S;
    deadline_set(c, c->fresh ? HTTP_FRESH_IDLE_S : w->srv->o.header_timeout_s);
    if (!c->tls)   /* on by default; see conn_flush_cb (OpenSSL's writes as it needs) */
        bufferevent_disable(c->bev, EV_WRITE);
    http_conn_read(c, 1);
}

int http_req_tls(const struct http_req *r)
{
    return r->conn && r->conn->tls;
}

/* ---- server ----------------------------------------------------------- */

static void *worker_main(void *arg)
{
    struct http_worker *w = arg;
    if (w->srv->o.worker_init)
        w->srv->o.worker_init(w);
    event_base_dispatch(w->base);
    while (w->conns)
        http_conn_free(w->conns);
    if (w->srv->o.worker_fini)
        w->srv->o.worker_fini(w);
    return NULL;
}

/* SO_REUSEPORT would let a second daemon share our port silently; probe
 * with a plain bind first so that mistake is an error at start-up. */
static int port_free(const struct sockaddr_in *sin)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc = bind(fd, (const struct sockaddr *)sin, sizeof(*sin)) ? -errno : 0;
    close(fd);
    return rc;
}

static void settings_init(void)
{
    evthread_use_pthreads();
    llhttp_settings_init(&parser_settings);
    parser_settings.on_message_begin = on_message_begin;
    parser_settings.on_url = on_url;
    parser_settings.on_url_complete = on_url_complete;
    parser_settings.on_header_field = on_header_field;
    parser_settings.on_header_field_complete = on_header_field_complete;
    parser_settings.on_header_value = on_header_value;
    parser_settings.on_header_value_complete = on_header_value_complete;
    parser_settings.on_headers_complete = on_headers_complete;
    parser_settings.on_chunk_header = on_chunk_header;
    parser_settings.on_body = on_body;
    parser_settings.on_message_complete = on_message_complete;
}

struct http_server *http_server_new(const struct http_server_opts *o)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, settings_init);
    struct http_server *s = xcalloc(1, sizeof(*s));
    s->o = *o;
    if (s->o.header_timeout_s <= 0)
        s->o.header_timeout_s = HTTP_HEADER_TIMEOUT_S;
    if (s->o.max_connections <= 0)
        s->o.max_connections = HTTP_MAX_CONNECTIONS;
    s->n = o->workers > 0 ? o->workers : 1;
    s->w = xcalloc((size_t)s->n, sizeof(*s->w));
    s->lis = xcalloc((size_t)s->n, sizeof(*s->lis));
    for (int i = 0; i < s->n; i++) {
        struct http_worker *w = &s->w[i];
        w->idx = i;
        w->srv = s;
        w->ctx = o->ctx;
        w->base = event_base_new();
        w->q = loopq_new(w->base);
        http_listener_init(s, i);
    }
    return s;
}

void http_server_free(struct http_server *s)
{
    for (int i = 0; i < s->n; i++) {
        struct http_worker *w = &s->w[i];
        while (w->conns)
            http_conn_free(w->conns);
        if (s->lis[i].lis)
            evconnlistener_free(s->lis[i].lis);
        event_free(s->lis[i].retry_ev);
        loopq_free(w->q);
        event_base_free(w->base);
    }
    free(s->w);
    free(s->lis);
    free(s->threads);
    free(s);
}

struct http_server *http_server_start(const struct http_server_opts *o, char *err,
                                      size_t errlen)
{
    struct sockaddr_in sin = {0};
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)o->port);
    if (inet_pton(AF_INET, o->host, &sin.sin_addr) != 1) {
        snprintf(err, errlen, "listen address '%s' is not an IPv4 address", o->host);
        return NULL;
    }
    int rc = port_free(&sin);
    if (rc) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", o->host, o->port, strerror(-rc));
        return NULL;
    }
    struct http_server *s = http_server_new(o);
    for (int i = 0; i < s->n; i++) {
        if (http_listener_bind(s, i, &sin)) {
            snprintf(err, errlen, "cannot listen on %s:%d: %s", o->host, o->port,
                     strerror(errno));
            http_server_free(s);
            return NULL;
        }
    }
    s->threads = xcalloc((size_t)s->n, sizeof(*s->threads));
    for (int i = 0; i < s->n; i++)
        if (pthread_create(&s->threads[i], NULL, worker_main, &s->w[i]))
            abort();
    return s;
}

struct http_worker *http_server_worker(struct http_server *s, int i)
{
    return &s->w[i];
}

