/*
 * httpresp: the response side of the HTTP layer, and the helpers on a
 * request's fields.
 *
 * A response is a status line and headers (http_resp_begin, after any
 * http_resp_header), then a body in writes, file ranges or segments, then
 * http_resp_end; http_reply* do all of it at once. Everything goes to the
 * connection's output buffer; http.c writes it and decides what happens to
 * the connection once it is flushed. A request whose connection is gone
 * (r->conn NULL) takes the calls and drops the bytes.
 *
 * The helpers (status reasons, percent coding, header and query lookup)
 * are pure and run on any thread.
 */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <llhttp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "http_int.h"
#include "log.h"
#include "util.h"

#define DRAIN_MAX (1024 * 1024)     /* an unwanted body this small is read and dropped */
#define HTTP_COPY_MAX (32 * 1024) /* file ranges up to this are copied, not sendfile'd */

/* ---- helpers ---------------------------------------------------------- */

const char *http_reason(int s)
{
    switch (s) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 416: return "Range Not Satisfiable";
    case 422: return "Unprocessable Content";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int http_pct_decode(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (i + 2 >= n)
                return -1;
            int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            out[o++] = (char)(h * 16 + l);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return (int)o;
}

char *http_pct_encode(const char *s, size_t n, int keep_slash)
{
    char *out = xmalloc(3 * n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
            (keep_slash && c == '/')) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = "0123456789ABCDEF"[c >> 4];
            *o++ = "0123456789ABCDEF"[c & 15];
        }
    }
    *o = '\0';
    return out;
}

static int unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

/* One key of a query, n bytes at k, normalized into o (never longer):
 * an escaped unreserved byte written plain, every other escape with
 * upper-case hex. The end of o, or NULL on a malformed escape. */
static char *key_normalize(const char *k, size_t n, char *o)
{
    for (size_t i = 0; i < n; i++) {
        if (k[i] != '%') {
            *o++ = k[i];
            continue;
        }
        int h = i + 2 < n ? hexval(k[i + 1]) : -1;
        int l = i + 2 < n ? hexval(k[i + 2]) : -1;
        if (h < 0 || l < 0)
            return NULL;
        unsigned char c = (unsigned char)(h * 16 + l);
        if (unreserved(c)) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = "0123456789ABCDEF"[h];
            *o++ = "0123456789ABCDEF"[l];
        }
        i += 2;
    }
    return o;
}

int http_query_normalize(char *q)
{
    char *o = q;
    for (const char *p = q; *p;) {
        size_t len = strcspn(p, "&");
        size_t kl = strcspn(p, "=&");
        char *end = key_normalize(p, kl, o);
        if (!end)
            return -1;
        memmove(end, p + kl, len - kl + (p[len] == '&'));   /* the value as it came */
        o = end + len - kl + (p[len] == '&');
        p += len + (p[len] == '&');
    }
    *o = '\0';
    return 0;
}

int http_path_is(const struct http_req *r, const char *s)
{
    return r->path_len == strlen(s) && !memcmp(r->path, s, r->path_len);
}

const char *http_req_header(const struct http_req *r, const char *name)
{
    for (int i = 0; i < r->n_hdrs; i++)
        if (!strcasecmp(r->hdrs[i].name, name))
            return r->hdrs[i].value;
    return NULL;
}

int http_name_find(const char *name, size_t len, const struct http_name *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i].len == len && !strncasecmp(set[i].s, name, len))
            return (int)i;
    return -1;
}

int http_query_get(const struct http_req *r, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    const char *p = r->query;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t kl = eq ? (size_t)(eq - p) : len;
        if (kl == nl && !memcmp(p, name, nl)) {
            const char *v = eq ? eq + 1 : p + len;
            size_t vl = eq ? len - kl - 1 : 0;
            if (vl >= outlen)
                return -2;
            /* '+' means space in query strings */
            char tmp[vl + 1];
            for (size_t i = 0; i < vl; i++)
                tmp[i] = v[i] == '+' ? ' ' : v[i];
            int d = http_pct_decode(tmp, vl, out);
            return d < 0 ? -2 : d;
        }
        p += len + (amp ? 1 : 0);
    }
    return -1;
}

/* ---- responses -------------------------------------------------------- */

void http_date_update(struct http_worker *w)
{
    time_t now = time(NULL);
    if (now == w->date_sec)
        return;
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(w->date, sizeof(w->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    w->date_sec = now;
}

/* name: v's n bytes, a CR or LF in them as a space: a value never ends
 * the line and starts a header of its own */
static void resp_header_put(struct http_req *r, const char *name, const char *v, size_t n)
{
    if (!r->resp_hdrs)
        r->resp_hdrs = evbuffer_new();
    evbuffer_add(r->resp_hdrs, name, strlen(name));
    evbuffer_add(r->resp_hdrs, ": ", 2);
    size_t run = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] == '\r' || v[i] == '\n') {
            evbuffer_add(r->resp_hdrs, v + run, i - run);
            evbuffer_add(r->resp_hdrs, " ", 1);
            run = i + 1;
        }
    evbuffer_add(r->resp_hdrs, v + run, n - run);
    evbuffer_add(r->resp_hdrs, "\r\n", 2);
}

void http_resp_header(struct http_req *r, const char *name, const char *fmt, ...)
{
    if (r->resp_started)
        return;
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *v = n < (int)sizeof(line) ? line : NULL;
    if (!v) {                    /* longer than line: the whole of it, on the heap */
        v = xmalloc((size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(v, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    resp_header_put(r, name, v, (size_t)n);
    if (v != line)
        free(v);
}

void http_resp_header_str(struct http_req *r, const char *name, const char *value)
{
    if (!r->resp_started)
        resp_header_put(r, name, value, strlen(value));
}

void http_resp_abort(struct http_req *r)
{
    struct http_conn *c = r->conn;
    r->resp_done = 1;
    if (!c)
        return;
    /* What was already queued goes out, then the connection closes short
     * of the promised length (or without the last chunk). */
    c->aborting = 1;
    http_conn_read(c, 0);
    /* Freed from the write callback, never here: the caller may be inside
     * one of this connection's callbacks (on_drain, say). */
    bufferevent_enable(c->bev, EV_WRITE);
}

void http_resp_close(struct http_req *r)
{
    if (r->conn)
        r->conn->closing = 1;
}

void http_resp_begin(struct http_req *r, int status, int64_t length)
{
    struct http_conn *c = r->conn;
    if (r->resp_started)
        return;
    r->resp_started = 1;
    r->status = status;
    if (!c)
        return;
    /* An unwanted body still on its way decides whether we can keep the
     * connection: a small one is read and dropped, anything else closes. */
    if (!r->body_done) {
        int64_t left = r->content_length >= 0
                           ? r->content_length - (int64_t)r->body_received
                           : INT64_MAX;
        if ((r->expect_continue && !r->continue_sent) || left > DRAIN_MAX)
            c->closing = 1;
    }
    if (!llhttp_should_keep_alive(&c->parser) ||
        __atomic_load_n(&r->w->draining, __ATOMIC_RELAXED))
        c->closing = 1;          /* a stopping server keeps no connection */
    http_date_update(r->w);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    struct gbuf h = {0};
    gbuf_str(&h, "HTTP/1.1 ");
    gbuf_i64(&h, status);
    gbuf_strs(&h, " ", http_reason(status), "\r\nServer: shoal\r\nDate: ", r->w->date, "\r\n",
              NULL);
    if (length >= 0) {
        gbuf_str(&h, "Content-Length: ");
        gbuf_i64(&h, length);
        gbuf_add(&h, "\r\n", 2);
    } else {
        r->resp_chunked = 1;
        gbuf_str(&h, "Transfer-Encoding: chunked\r\n");
    }
    if (c->closing)
        gbuf_str(&h, "Connection: close\r\n");
    else if (c->parser.http_minor == 0)
        gbuf_str(&h, "Connection: keep-alive\r\n");
    evbuffer_add(out, h.p, h.n);
    gbuf_free(&h);
    if (r->resp_hdrs)
        evbuffer_add_buffer(out, r->resp_hdrs);
    evbuffer_add(out, "\r\n", 2);
}

void http_resp_write(struct http_req *r, const void *p, size_t n)
{
    if (!r->conn || r->head_only || n == 0 || r->resp_done)
        return;
    struct evbuffer *out = bufferevent_get_output(r->conn->bev);
    if (r->resp_chunked)
        evbuffer_add_printf(out, "%zx\r\n", n);
    evbuffer_add(out, p, n);
    if (r->resp_chunked)
        evbuffer_add(out, "\r\n", 2);
}

void http_resp_buffer(struct http_req *r, struct evbuffer *b)
{
    size_t n = evbuffer_get_length(b);
    if (!r->conn || r->head_only || n == 0 || r->resp_done) {
        evbuffer_drain(b, n);
        return;
    }
    struct evbuffer *out = bufferevent_get_output(r->conn->bev);
    if (r->resp_chunked)
        evbuffer_add_printf(out, "%zx\r\n", n);
    evbuffer_add_buffer(out, b);
    if (r->resp_chunked)
        evbuffer_add(out, "\r\n", 2);
}

/* Copy a small file range into the output, so headers and body leave in
 * one write; 0, or -1 when the file is shorter than promised. */
static int add_file_copy(struct evbuffer *out, int fd, int64_t off, int64_t len)
{
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(out, len, &v, 1) != 1)
        return -1;
    size_t got = 0;
    while (got < (size_t)len) {
        ssize_t n = pread(fd, (char *)v.iov_base + got, (size_t)len - got, off + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    v.iov_len = got;
    return evbuffer_commit_space(out, &v, 1);
}

/* A file segment went into out behind ahead bytes: the first one there
 * has only memory (its head) ahead of it, which the flush sends with
 * MSG_MORE (http.c: conn_flush_cb), when it is small enough to be made
 * contiguous for it at no cost worth counting. */
#define MORE_HEAD_MAX (16u << 10)

static void seg_added(struct http_conn *c, size_t ahead)
{
    if (!c->seg_queued && !c->tls && ahead <= MORE_HEAD_MAX)
        c->more_head = ahead;
    c->seg_queued = 1;
}

void http_resp_file(struct http_req *r, int fd, int64_t off, int64_t len)
{
    if (!r->conn || r->head_only || len == 0 || r->resp_done) {
        close(fd);
        return;
    }
    /* Added straight to the socket's output buffer, which drains to an fd,
     * so libevent sends the segment with sendfile(2); small ranges are
     * copied instead, which saves a system call and a packet. */
    struct evbuffer *out = bufferevent_get_output(r->conn->bev);
    if (r->resp_chunked)
        evbuffer_add_printf(out, "%llx\r\n", (unsigned long long)len);
    size_t ahead = evbuffer_get_length(out);
    if (len <= HTTP_COPY_MAX) {
        if (add_file_copy(out, fd, off, len) < 0)
            r->conn->closing = 1;
        close(fd);
    } else if (evbuffer_add_file(out, fd, off, len) < 0) {
        close(fd);
        r->conn->closing = 1;
    } else {
        seg_added(r->conn, ahead);
    }
    if (r->resp_chunked)
        evbuffer_add(out, "\r\n", 2);
}

void http_resp_segment(struct http_req *r, struct evbuffer_file_segment *seg, int64_t off,
                       int64_t len)
{
    if (!r->conn || r->head_only || len == 0 || r->resp_done)
        return;
    struct evbuffer *out = bufferevent_get_output(r->conn->bev);
    if (r->resp_chunked)
        evbuffer_add_printf(out, "%llx\r\n", (unsigned long long)len);
    size_t ahead = evbuffer_get_length(out);
    if (evbuffer_add_file_segment(out, seg, off, len) < 0)
        r->conn->closing = 1;
    else
        seg_added(r->conn, ahead);
    if (r->resp_chunked)
        evbuffer_add(out, "\r\n", 2);
}

int http_resp_fd(const struct http_req *r)
{
    if (!r->conn || r->conn->tls || r->head_only || r->resp_done || r->resp_chunked ||
        evbuffer_get_length(bufferevent_get_output(r->conn->bev)))
        return -1;
    return bufferevent_getfd(r->conn->bev);
}

size_t http_resp_pending(const struct http_req *r)
{
    return r->conn ? evbuffer_get_length(bufferevent_get_output(r->conn->bev)) : 0;
}

void http_resp_end(struct http_req *r)
{
    if (r->resp_done)
        return;
    if (!r->resp_started)
        http_resp_begin(r, 200, 0);
    r->resp_done = 1;
    struct http_conn *c = r->conn;
    if (!c)
        return;
    if (c->w->srv->o.on_done)
        c->w->srv->o.on_done(r);
    if (r->resp_chunked && !r->head_only)
        evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5);
    if (c->closing) {
        bufferevent_enable(c->bev, EV_WRITE);
        return;
    }
    /* Inside the parser, on_message_complete finishes the request. */
    if (r->body_done && !c->in_parse && c->req == r) {
        http_conn_finish(c);
        c->paused = 0;
        llhttp_resume(&c->parser);
        event_active(c->resume_ev, EV_TIMEOUT, 0);
    }
}

void http_reply(struct http_req *r, int status, const char *ctype, const void *body,
                size_t len)
{
    if (ctype)
        http_resp_header_str(r, "Content-Type", ctype);
    http_resp_begin(r, status, (int64_t)len);
    http_resp_write(r, body, len);
    http_resp_end(r);
}

void http_reply_json(struct http_req *r, int status, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s) {
        http_reply(r, 500, "application/json", "{\"error\":\"encoding failed\"}", 27);
        return;
    }
    size_t n = strlen(s);
    s[n] = '\n'; /* json_dumps left room for the NUL; a newline reads better */
    http_reply(r, status, "application/json", s, n + 1);
    free(s);
}

void http_reply_error(struct http_req *r, int status, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* A message may quote what the client sent (a path, a name), which
     * need not be UTF-8, and a JSON or XML body cannot carry such bytes:
     * they are written out as \xHH, and the answer keeps its status. */
    size_t n = strlen(buf);
    char *esc = utf8_valid_prefix(buf, n) == n ? NULL : utf8_printable(buf);
    const char *msg = esc ? esc : buf;
    if (status >= 500)
        log_warn_rl("%s %s -> %d: %s", r->method_name, r->target ? r->target : "-", status, msg);
    else
        log_debug("%s %s -> %d: %s", r->method_name, r->target ? r->target : "-", status,
                  msg);
    if (r->on_error)
        r->on_error(r, status, msg);
    else
        http_reply_json(r, status, json_pack("{s:s, s:i}", "error", msg, "status", status));
    free(esc);
}

