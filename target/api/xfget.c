/*
 * xfget: an inline transform on GET (see xfget.h). The transform's
 * answer is streamed to the client as it comes, with backpressure (the
 * transform is paused while the client's unsent bytes are past
 * XF_HIGH), or, a large one with a length over plain HTTP, spliced from
 * the transform's socket into the client's once the head is out; an
 * answer that breaks off after the head closes the
 * connection (http_resp_abort), so the client never takes a partial
 * body for a whole one.
 *
 * Thread: r's worker.
 */
#include "xfget.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "nodeclient.h"
#include "objname.h"
#include "pump.h"
#include "target.h"
#include "targetmetrics.h"
#include "util.h"
#include "xfer.h"
#include "xform.h"
#include "xfrun.h"
#include "xfsup.h"

#define XF_HIGH (8u << 20)       /* the client's unsent bytes that pause the transform */
#define XF_IDLE_S 30             /* a splice without progress for this long fails */

int xfget_asked(const struct http_req *r)
{
    char v[4];
    return http_query_get(r, "transform", v, sizeof(v)) != -1;
}

int xfget_refused(struct http_req *r)
{
    char name[XFORM_NAME_MAX + 2], url[512];
    int n = http_query_get(r, "transform", name, sizeof(name));
    if (n < 0 || !xform_valid_name(name, (size_t)n)) {
        http_reply_error(r, 400, "?transform= takes a transform's name (1..63 of A-Z a-z 0-9 "
                                 ". _ -)");
        return 1;
    }
    if (r->method != HTTP_M_GET) {
        if (r->method == HTTP_M_HEAD)
            http_reply_error(r, 501, "HEAD with ?transform is not implemented: the transformed "
                                     "object exists only as a GET answers it");
        else
            http_reply_error(r, 400, "?transform is for GET only");
        return 1;
    }
    if (http_req_header(r, "Range")) {
        http_reply_error(r, 501, "a Range with ?transform is not implemented");
        return 1;
    }
    int rc = xfsup_url(name, url, sizeof(url));
    if (rc == -ENOENT) {
        http_reply_error(r, 404, "transform '%s' not found", name);
        return 1;
    }
    if (rc) {
        http_resp_header_str(r, "Retry-After", "1");
        http_reply_error(r, 503, "transform '%s' is starting: try again", name);
        return 1;
    }
    return 0;
}

/* The caller's own query arguments, as they came: all but transform and
 * what Shoal's and S3's reads take themselves. A new string. */
static char *caller_args(const struct http_req *r)
{
    static const char *const own[] = {"transform", "provider", "versionId", "archpath",
                                      "archregx", "archmode", "partNumber"};
    static const char *const own_prefix[] = {"shoal_", "X-Amz-", "x-amz-", "response-"};
    size_t ql = strlen(r->query), o = 0;
    char *out = xmalloc(ql + 1);
    for (const char *q = r->query; *q;) {
        size_t n = strcspn(q, "&"), kn = strcspn(q, "=&");
        int skip = kn == 0;
        for (size_t i = 0; i < ARRAY_LEN(own) && !skip; i++)
            skip = kn == strlen(own[i]) && !memcmp(q, own[i], kn);
        for (size_t i = 0; i < ARRAY_LEN(own_prefix) && !skip; i++)
            skip = kn >= strlen(own_prefix[i]) && !memcmp(q, own_prefix[i], strlen(own_prefix[i]));
        if (!skip) {
            if (o)
                out[o++] = '&';
            memcpy(out + o, q, n);
            o += n;
        }
        q += n + (q[n] == '&');
    }
    out[o] = '\0';
    return out;
}

struct xfget {
    struct target *t;
    struct http_req *r;          /* NULL once the client left */
    struct xfrun *x;             /* while the answer comes through xfrun */
    struct nodeclient_body *b;   /* or its socket, taken */
    struct pump *pump;           /* spliced into the client's */
    char name[XFORM_NAME_MAX + 1];
    const char *cache;           /* a literal, or NULL */
    int64_t mtime_s;
    int begun;                   /* the client's answer has begun */
    uint64_t sent;
};

static void xg_unhook(struct xfget *g)
{
    struct http_req *r = g->r;
    g->r = NULL;
    r->data = NULL;
    r->on_abort = NULL;
    r->on_drain = NULL;
    http_req_unref(r);
}

static void xg_free(struct xfget *g, int whole)
{
    pump_free(g->pump);
    if (g->b)
        nodeclient_body_end(g->b, whole);
    free(g);
}

static void xg_gone(struct http_req *r)
{
    struct xfget *g = r->data;
    xg_unhook(g);
    if (g->x)
        xfrun_cancel(g->x);      /* no on_done comes: g goes here */
    xg_free(g, 0);
}

static void xg_splice(struct xfget *g);

static void xg_drained(struct http_req *r)
{
    struct xfget *g = r->data;
    if (g->b && !g->pump)
        xg_splice(g);            /* the head and the first bytes are out */
    else if (g->x && http_resp_pending(r) < XF_HIGH / 2)
        xfrun_resume(g->x);
}

static int xg_head(void *arg, const char *ctype, int64_t len)
{
    struct xfget *g = arg;
    struct http_req *r = g->r;
    char lm[64];
    time_t mt = (time_t)g->mtime_s;
    struct tm tmv;
    strftime(lm, sizeof(lm), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&mt, &tmv));
    http_resp_header_str(r, "Last-Modified", lm);
    http_resp_header_str(r, "Content-Type", ctype && *ctype ? ctype : "application/octet-stream");
    http_resp_header_str(r, "X-Shoal-Transform", g->name);
    if (g->cache)
        http_resp_header_str(r, "X-Shoal-Cache", g->cache);
    http_resp_begin(r, 200, len);
    g->begun = 1;
    return 0;
}

static int xg_data(void *arg, const char *p, size_t n)
{
    struct xfget *g = arg;
    http_resp_write(g->r, p, n);
    g->sent += n;
    if (http_resp_pending(g->r) > XF_HIGH)
        xfrun_pause(g->x);
    return 0;
}

static void xg_done(void *arg, int status, const char *msg)
{
    struct xfget *g = arg;
    struct http_req *r = g->r;
    g->x = NULL;
    if (!status) {
        http_resp_end(r);
        node_count_bytes(&g->t->node, 0, g->sent);
        targetmetrics_get(g->cache && !strcmp(g->cache, "miss"), g->sent);
    } else if (g->begun) {
        http_resp_abort(r);      /* never a body that looks whole */
    } else {
        if (status == 503)
            http_resp_header_str(r, "Retry-After", "1");
        http_reply_error(r, status, "%s", msg);
    }
    xg_unhook(g);
    xg_free(g, 0);
}

/* ---- the answer's socket spliced into the client's ----------------------------------- */

static void xg_pumped(void *arg, const char *err, enum pump_side side)
{
    struct xfget *g = arg;
    (void)side;
    struct http_req *r = g->r;
    uint64_t n = g->b->pre_len + g->b->left;
    if (err) {
        http_resp_abort(r);      /* never a body that looks whole */
    } else {
        http_resp_end(r);
        node_count_bytes(&g->t->node, 0, n);
        targetmetrics_get(g->cache && !strcmp(g->cache, "miss"), n);
    }
    xg_unhook(g);
    xg_free(g, err == NULL);
}

/* Once nothing is queued for the client, the rest goes socket to socket. */
static void xg_splice(struct xfget *g)
{
    int cfd = http_resp_fd(g->r);
    if (cfd < 0)
        return;                  /* output still queued: xg_drained comes back */
    g->pump = pump_start(g->r->w->base, g->b->fd, cfd, g->b->left, XF_IDLE_S, xg_pumped, g);
    if (!g->pump) {
        http_resp_abort(g->r);
        xg_unhook(g);
        xg_free(g, 0);
    }
}

static void xg_body(void *arg, struct nodeclient_body *b)
{
    struct xfget *g = arg;
    g->x = NULL;                 /* the run is over: the socket is ours */
    g->b = b;
    http_resp_write(g->r, b->pre, b->pre_len);
    if (!b->left) {
        xg_pumped(g, NULL, PUMP_IN);
        return;
    }
    xg_splice(g);
}

static const struct xfrun_ops xg_ops = {xg_head, xg_data, xg_done, xg_body};

void xfget_send(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, const struct objmeta *m, int fd, uint64_t off, uint64_t len,
                const char *mem)
{
    const char *prov, *bucket, *name;
    size_t nl;
    if (xfer_key_parts(mkey, klen, &prov, &bucket, &name, &nl)) {
        close(fd);
        http_reply_error(r, 500, "not an object's key");
        return;
    }
    struct xfget *g = xcalloc(1, sizeof(*g));
    g->t = t;
    g->r = r;
    g->cache = cache;
    g->mtime_s = (int64_t)(m->mtime_ns / 1000000000u);
    http_query_get(r, "transform", g->name, sizeof(g->name));
    char *oname = xstrndup(name, objname_base_len(name, nl));
    char *args = caller_args(r);
    struct xfrun_src src = {g->name, bucket, oname, args, mem ? -1 : fd, off, len, mem,
                            !http_req_tls(r)};
    if (mem)
        close(fd);
    http_req_ref(r);
    r->data = g;
    r->on_abort = xg_gone;
    r->on_drain = xg_drained;
    char msg[300];
    int status;
    g->x = xfrun_start(target_hc(r), r->w->base, (long)t->conf.transform_timeout_s * 1000, &src,
                       &xg_ops, g, &status, msg, sizeof(msg));
    free(oname);
    free(args);
    if (!g->x)
        xg_done(g, status, msg);
}
