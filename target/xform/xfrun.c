/*
 * xfrun: an object POSTed to a transform and its answer streamed back
 * (see xfrun.h). The upload is read from the object's data file with
 * pread as curl asks for it (the pages a GET checked are in memory); the
 * answer's pieces go to the caller, and an error answer's first bytes
 * into its message.
 *
 * Thread: the curlclient's loop.
 */
#include "xfrun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "curlclient.h"
#include "http.h"
#include "util.h"
#include "xfsup.h"

#define ERR_QUOTE 200            /* an error answer's bytes quoted in the message */

struct xfrun {
    struct curlclient_xfer *x;
    const struct xfrun_ops *ops;
    void *arg;                   /* NULL once cancelled */
    char name[64];
    int fd;
    char *mem;
    uint64_t off, len, sent;     /* the upload: where, how much, how much went */
    int ok;                      /* a 2xx answer */
    int stopped;                 /* the caller's on_head or on_data said stop */
    int paused;
    char err[ERR_QUOTE + 1];     /* an error answer's start */
    size_t elen;
};

static void xfrun_free(struct xfrun *f)
{
    if (f->fd >= 0)
        close(f->fd);
    free(f->mem);
    free(f);
}

static ssize_t up_read(void *arg, char *buf, size_t n)
{
    struct xfrun *f = arg;
    if (!f->arg)
        return -1;               /* cancelled */
    uint64_t left = f->len - f->sent;
    size_t k = n < left ? n : (size_t)left;
    if (!k)
        return 0;
    if (f->mem) {
        memcpy(buf, f->mem + f->sent, k);
    } else {
        ssize_t got;
        do
            got = pread(f->fd, buf, k, (off_t)(f->off + f->sent));
        while (got < 0 && errno == EINTR);
        if (got <= 0)
            return -1;           /* a file shorter than its record: the answer fails */
        k = (size_t)got;
    }
    f->sent += k;
    return (ssize_t)k;
}

static int on_headers(void *arg, struct curlclient_xfer *x, int status)
{
    struct xfrun *f = arg;
    if (!f->arg)
        return -1;
    if (status < 200 || status > 299)
        return 0;                /* its message comes in the body */
    f->ok = 1;
    const char *len = curlclient_header(x, "Content-Length");
    if (f->ops->on_head(f->arg, curlclient_header(x, "Content-Type"),
                        len ? strtoll(len, NULL, 10) : -1)) {
        f->stopped = 1;
        return -1;
    }
    return 0;
}

static int on_data(void *arg, struct curlclient_xfer *x, const char *p, size_t n)
{
    struct xfrun *f = arg;
    (void)x;
    if (!f->arg)
        return -1;
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

static void on_done(void *arg, struct curlclient_xfer *x, int status, const char *err)
{
    struct xfrun *f = arg;
    char msg[400];
    int st = 0;
    if (!f->arg) {
        xfrun_free(f);
        return;
    }
    enum curlclient_fail how = curlclient_failure(x);
    if (status >= 200 && status <= 299 && !f->stopped) {
        st = 0;
        msg[0] = '\0';
    } else if (status) {
        quote_err(f);
        st = 502;
        snprintf(msg, sizeof(msg), "transform '%s' answered %d: %s", f->name, status, f->err);
    } else if (how == CCF_TIMEOUT) {
        st = 504;
        snprintf(msg, sizeof(msg), "transform '%s' took too long: %s", f->name, err);
    } else if (how == CCF_CONNECT && !f->ok) {
        st = 503;
        snprintf(msg, sizeof(msg), "transform '%s' is not listening: %s", f->name, err);
    } else {
        st = 502;
        snprintf(msg, sizeof(msg), "transform '%s' failed %s: %s", f->name,
                 f->ok ? "in the middle of its answer" : "before it answered",
                 f->stopped ? "stopped" : err ? err : "no answer");
    }
    f->ops->on_done(f->arg, st, msg);
    xfrun_free(f);
}

static const struct curlclient_ops ops = {on_headers, on_data, up_read, on_done, NULL};

struct xfrun *xfrun_start(struct curlclient *cli, long timeout_ms, const struct xfrun_src *src,
                          const struct xfrun_ops *xops, void *arg, int *status, char *msg,
                          size_t msglen)
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
    f->fd = src->fd;
    f->off = src->off;
    f->len = src->len;
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
    struct curlclient_opt opt = {(int64_t)src->len, timeout_ms, 0, "transform"};
    f->x = curlclient_start(cli, "POST", url, hdrs, 5, &opt, &ops, f);
    return f;
}

void xfrun_pause(struct xfrun *f)
{
    if (!f->paused) {
        f->paused = 1;
        curlclient_pause(f->x);
    }
}

void xfrun_resume(struct xfrun *f)
{
    if (f->paused) {
        f->paused = 0;
        curlclient_resume(f->x);
    }
}

void xfrun_cancel(struct xfrun *f)
{
    f->arg = NULL;
    xfrun_resume(f);             /* its next piece sees it and stops */
}
