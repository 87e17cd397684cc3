/*
 * httpbody: request bodies read whole (see httpbody.h). The reader takes
 * the request's body hooks: wbody_add gathers into a growing buffer and
 * answers 413 itself once the bound is passed (dropping what follows),
 * wbody_end hands the body over, wbody_abort tells the caller it will
 * never come. The functions keep the node_ prefix their callers know.
 *
 * Threads: the request's loop thread.
 */
#include "httpbody.h"

#include <stdlib.h>

#include "err.h"
#include "http.h"
#include "util.h"

struct wbody {
    struct gbuf body;
    size_t max;
    void (*done)(struct http_req *r, void *arg, char *body, size_t len);
    void (*gone)(void *arg);
    void *arg;
    void (*done_json)(struct http_req *r, json_t *j);
};

static int wbody_add(struct http_req *r, const char *p, size_t len)
{
    struct wbody *wb = r->data;
    if (!wb)
        return 0; /* answered already; the rest is dropped */
    if (wb->body.n + len > wb->max) {
        size_t max = wb->max;
        if (wb->gone)
            wb->gone(wb->arg);
        gbuf_free(&wb->body);
        free(wb);
        r->data = NULL;
        r->on_abort = NULL;
        r->on_end = NULL;
        http_resp_close(r);
        /* 413 for a body of either API; the row's own 400 is S3's PUT limit */
        err_reply_status(r, 413, S3E_ENTITY_TOO_LARGE, "request body over %zu bytes", max);
        return 0;
    }
    gbuf_add(&wb->body, p, len);
    return 0;
}

static void wbody_abort(struct http_req *r)
{
    struct wbody *wb = r->data;
    if (wb->gone)
        wb->gone(wb->arg);
    gbuf_free(&wb->body);
    free(wb);
    r->data = NULL;
}

static void wbody_end(struct http_req *r)
{
    struct wbody *wb = r->data;
    r->data = NULL;
    r->on_abort = NULL;
    r->on_body = NULL;
    size_t n = wb->body.n;
    char *body = gbuf_take(&wb->body);
    if (wb->done) {
        wb->done(r, wb->arg, body, n);
    } else {
        json_error_t je;
        json_t *j = n ? json_loadb(body, n, 0, &je) : json_object();
        if (!j)
            http_reply_error(r, 400, "malformed JSON body: %s (line %d)", je.text, je.line);
        else
            wb->done_json(r, j);
    }
    free(body);
    free(wb);
}

static struct wbody *read_body(struct http_req *r, size_t max)
{
    struct wbody *wb = xcalloc(1, sizeof(*wb));
    wb->max = max;
    r->data = wb;
    r->on_body = wbody_add;
    r->on_end = wbody_end;
    r->on_abort = wbody_abort;
    return wb;
}

void node_read_body(struct http_req *r, size_t max,
                    void (*done)(struct http_req *r, void *arg, char *body, size_t len),
                    void (*gone)(void *arg), void *arg)
{
    struct wbody *wb = read_body(r, max);
    wb->done = done;
    wb->gone = gone;
    wb->arg = arg;
}

#define JSON_BODY_MAX (16u << 20)

void node_read_json(struct http_req *r, void (*done)(struct http_req *r, json_t *j))
{
    read_body(r, JSON_BODY_MAX)->done_json = done;
}
