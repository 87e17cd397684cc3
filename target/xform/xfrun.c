/*
 * xfrun: an object POSTed to a transform and its answer streamed back
 * (see xfrun.h), with the cluster's own HTTP client (nodeclient). The
 * upload is the data file spliced into the socket (pump_start_file), or
 * read by nodeclient itself over HTTPS (on_file), or copied from memory
 * for a small object; the answer's pieces go to the caller, its socket
 * when the caller takes it, and an error answer's first bytes into its
 * message.
 *
 * Thread: the loop given.
 */
#include "xfrun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http.h"
#include "nodeclient.h"
#include "pump.h"
#include "util.h"
#include "xfsup.h"

#define ERR_QUOTE 200            /* an error answer's bytes quoted in the message */
#define UP_IDLE_S 30             /* a transform that takes nothing for this long fails */
#define TAKE_MIN (64u << 10)     /* smaller answers come as pieces: a splice costs more */

struct xfrun {
    struct nodeclient_xfer *x;
    struct event_base *base;
    struct pump *pump;           /* the upload, while it is spliced */
    const struct xfrun_ops *ops;
    void *arg;
    char name[64];
    int fd;
    char *mem;
    uint64_t off, len, sent;     /* the upload: where, how much, how much went */
    int up_done;                 /* every byte of it went */
    int take_body;
    int ok;                      /* a 2xx answer */
    int stopped;                 /* the caller's on_head or on_data said stop */
    char err[ERR_QUOTE + 1];     /* an error answer's start */
    size_t elen;
};

static void xfrun_free(struct xfrun *f)
{
    pump_free(f->pump);
    if (f->fd >= 0)
        close(f->fd);
    free(f->mem);
    free(f);
}

/* ---- the upload ---------------------------------------------------------------------- */

static ssize_t up_read(void *arg, char *buf, size_t n)
{
    struct xfrun *f = arg;
    if (!f->mem)
        return NODECLIENT_READ_SOCKET;   /* the file, spliced (or read by nodeclient) */
    uint64_t left = f->len - f->sent;
    size_t k = n < left ? n : (size_t)left;
    memcpy(buf, f->mem + f->sent, k);
    f->sent += k;
    f->up_done = f->sent == f->len;
    return (ssize_t)k;
}

static void up_pumped(void *arg, const char *err, enum pump_side side)
{
    struct xfrun *f = arg;
    (void)side;
    pump_free(f->pump);
    f->pump = NULL;
    f->up_done = err == NULL;
    nodeclient_upload_moved(f->x, err == NULL);
}

static void up_socket(void *arg, struct nodeclient_xfer *x, int fd)
{
    struct xfrun *f = arg;
    f->pump = pump_start_file(f->base, f->fd, f->off, fd, f->len, UP_IDLE_S, up_pumped, f);
    if (!f->pump)
        nodeclient_upload_moved(x, 0);
}

static int up_file(void *arg, int *fd, uint64_t *off)
{
    struct xfrun *f = arg;
    *fd = f->fd;
    *off = f->off;
    return 0;
}

/* ---- the answer ---------------------------------------------------------------------- */

static int on_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct xfrun *f = arg;
    if (status < 200 || status > 299)
        return 0;                /* its message comes in the body */
    f->ok = 1;
    const char *len = nodeclient_header(x, "Content-Length");
    int64_t n = len ? strtoll(len, NULL, 10) : -1;
    if (f->ops->on_head(f->arg, nodeclient_header(x, "Content-Type"), n)) {
        f->stopped = 1;
        return -1;
    }
    /* the socket is the caller's only once the upload is all in it */
    return f->take_body && f->up_done && n >= (int64_t)TAKE_MIN ? NODECLIENT_TAKE_BODY : 0;
}

static int on_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct xfrun *f = arg;
    (void)x;
    if (!f->ok) {
        size_t k = n < ERR_QUOTE - f->elen ? n : ERR_QUOTE - f->elen;
        memcpy(f->err + f->elen, p, k);
        f->elen += k;
        return 0;
    }
    if (f->ops->on_data(f->arg, p, n)) {
        f->stopped = 1;
        return -1;
    }
    return 0;
}

static void on_taken(void *arg, struct nodeclient_body *b)
{
    struct xfrun *f = arg;
    f->ops->on_body(f->arg, b);
    xfrun_free(f);
}

/* The message of an error answer: its first line, printable. */
static void quote_err(struct xfrun *f)
{
    f->err[f->elen] = '\0';
    for (size_t i = 0; i < f->elen; i++)
        if (f->err[i] == '\n' || f->err[i] == '\r') {
            f->err[i] = '\0';
            break;
        } else if ((unsigned char)f->err[i] < 0x20) {
            f->err[i] = ' ';
        }
}

static void on_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct xfrun *f = arg;
    char msg[400];
    int st;
    enum nodeclient_fail how = status ? NODECLIENT_FAIL_NONE : nodeclient_failure(x);
    if (status >= 200 && status <= 299 && !f->stopped) {
        st = 0;
        msg[0] = '\0';
    } else if (status) {
        quote_err(f);
        st = 502;
        snprintf(msg, sizeof(msg), "transform '%s' answered %d: %s", f->name, status, f->err);
    } else if (how == NODECLIENT_FAIL_TIMEOUT) {
        st = 504;
        snprintf(msg, sizeof(msg), "transform '%s' took too long: %s", f->name, err);
    } else if (how == NODECLIENT_FAIL_CONNECT && !f->ok) {
        st = 503;
        snprintf(msg, sizeof(msg), "transform '%s' is not listening: %s", f->name, err);
    } else if (!f->ok && !f->stopped && xfsup_down(f->name)) {
        st = 503;
        snprintf(msg, sizeof(msg), "transform '%s' exited before it answered (%s); it is "
                 "being restarted: try again", f->name, err ? err : "no answer");
    } else {
        st = 502;
        snprintf(msg, sizeof(msg), "transform '%s' failed %s: %s", f->name,
                 f->ok ? "in the middle of its answer" : "before it answered",
                 f->stopped ? "stopped" : err ? err : "no answer");
    }
    f->x = NULL;
    f->ops->on_done(f->arg, st, msg);
    xfrun_free(f);
}

static const struct nodeclient_ops ops = {
    .on_headers = on_headers,
    .on_data = on_data,
    .on_read = up_read,
    .on_done = on_done,
    .on_taken = on_taken,
    .on_socket = up_socket,
    .on_file = up_file,
};

struct xfrun *xfrun_start(struct nodeclient *hc, struct event_base *base, long timeout_ms,
                          const struct xfrun_src *src, const struct xfrun_ops *xops, void *arg,
                          int *status, char *msg, size_t msglen)
{
    char url[512];
    int rc = xfsup_url(src->transform, url, sizeof(url));
    if (rc) {
        if (src->fd >= 0)
            close(src->fd);
        *status = rc == -ENOENT ? 404 : 503;
        snprintf(msg, msglen, rc == -ENOENT ? "transform '%s' not found"
                                            : "transform '%s' is starting: try again",
                 src->transform);
        return NULL;
    }
    struct xfrun *f = xcalloc(1, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", src->transform);
    f->ops = xops;
    f->arg = arg;
    f->base = base;
    f->fd = src->fd;
    f->off = src->off;
    f->len = src->len;
    f->up_done = src->len == 0;
    f->take_body = src->take_body && xops->on_body;
    if (src->mem) {
        f->mem = xmalloc(src->len ? src->len : 1);
        memcpy(f->mem, src->mem + src->off, src->len);
        f->off = 0;
    }
    char *en = http_pct_encode(src->name, strlen(src->name), 1);
    char hb[4][96 + 2 * 1024];
    snprintf(hb[0], sizeof(hb[0]), "X-Shoal-Bucket: %s", src->bucket);
    snprintf(hb[1], sizeof(hb[1]), "X-Shoal-Name: %.1024s", en);
    snprintf(hb[2], sizeof(hb[2]), "X-Shoal-Size: %llu", (unsigned long long)src->len);
    snprintf(hb[3], sizeof(hb[3]), "X-Shoal-Args: %.1024s", src->args);
    free(en);
    const char *hdrs[5] = {hb[0], hb[1], hb[2], hb[3], "Content-Type: application/octet-stream"};
    f->x = nodeclient_start(hc, "POST", url, hdrs, 5, (int64_t)src->len, timeout_ms, &ops, f);
    return f;
}

void xfrun_pause(struct xfrun *f)
{
    if (f->x)
        nodeclient_pause(f->x);
}

void xfrun_resume(struct xfrun *f)
{
    if (f->x)
        nodeclient_resume(f->x);
}

void xfrun_cancel(struct xfrun *f)
{
    if (f->x)
        nodeclient_cancel(f->x);
    xfrun_free(f);
}
