/*
 * backendmpu: create, parts, complete, or abort (see backendmpu.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backendmpu.h"
#include "log.h"
#include "sigv4.h"
#include "util.h"

struct backendmpu {
    struct curlclient *cli;
    struct backend b;
    char *key;
    int fd;
    uint64_t size, part_size;
    int nparts, part;            /* parts in all, the one on its way (1-based) */
    char upload_id[256];
    char (*etags)[OBJMETA_ETAG_MAX + 1];
    struct backend_obj fail;     /* the first failure, reported after the abort */
    backend_done_fn cb;
    void *arg;
};

/* The query naming the upload (and a part, when part > 0). */
static char *query(const struct backendmpu *u, int part)
{
    char *id = sigv4_uri_encode(u->upload_id, strlen(u->upload_id), 0);
    char *q = part ? xasprintf("partNumber=%d&uploadId=%s", part, id)
                   : xasprintf("uploadId=%s", id);
    free(id);
    return q;
}

static void backendmpu_end(struct backendmpu *u, const struct backend_obj *o)
{
    u->cb(u->arg, o);
    backend_free(&u->b);
    free(u->key);
    free(u->etags);
    free(u);
}

static void aborted(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct backendmpu *u = arg;
    (void)body;
    (void)len;
    if (o->status < 200 || o->status > 299)
        log_warn("backend %s: the multipart upload of %s could not be aborted (%d)",
                 u->b.label, u->key, o->status);
    backendmpu_end(u, &u->fail);
}

/* Failed: the upload goes (its parts with it), then the caller hears why. */
static void backendmpu_fail(struct backendmpu *u, const struct backend_obj *o)
{
    u->fail = *o;
    if (!u->fail.status || (u->fail.status >= 200 && u->fail.status < 300)) {
        u->fail.status = 502;    /* a 200 that carried an error */
        snprintf(u->fail.err, sizeof(u->fail.err), "the multipart upload failed");
    }
    if (!u->upload_id[0]) {
        backendmpu_end(u, &u->fail);
        return;
    }
    char *q = query(u, 0);
    struct backend_req rq = {.method = "DELETE", .key = u->key, .query = q, .fd = -1};
    backend_call(u->cli, &u->b, &rq, aborted, u);
    free(q);
}

static void completed(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct backendmpu *u = arg;
    if (o->status != 200 || memmem(body, len, "<Error>", 7)) {
        backendmpu_fail(u, o);
        return;
    }
    backendmpu_end(u, o);
}

static void complete(struct backendmpu *u)
{
    struct gbuf x = {0};
    gbuf_str(&x, "<CompleteMultipartUpload>");
    for (int i = 0; i < u->nparts; i++) {
        char part[OBJMETA_ETAG_MAX + 96];
        snprintf(part, sizeof(part), "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>",
                 i + 1, u->etags[i]);
        gbuf_str(&x, part);
    }
    gbuf_str(&x, "</CompleteMultipartUpload>");
    char *q = query(u, 0);
    struct backend_req rq = {
        .method = "POST", .key = u->key, .query = q, .fd = -1, .mem = x.p, .mem_len = x.n};
    backend_call(u->cli, &u->b, &rq, completed, u);
    free(q);
    gbuf_free(&x);               /* backend_call copied the body */
}

static void send_part(struct backendmpu *u);

static void part_sent(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct backendmpu *u = arg;
    (void)body;
    (void)len;
    if (o->status != 200 || !o->etag[0]) {
        backendmpu_fail(u, o);
        return;
    }
    snprintf(u->etags[u->part - 1], sizeof(u->etags[0]), "%s", o->etag);
    if (u->part == u->nparts)
        complete(u);
    else
        send_part(u);
}

static void send_part(struct backendmpu *u)
{
    u->part++;
    uint64_t off = (uint64_t)(u->part - 1) * u->part_size;
    uint64_t n = u->size - off < u->part_size ? u->size - off : u->part_size;
    char *q = query(u, u->part);
    struct backend_req rq = {
        .method = "PUT", .key = u->key, .query = q, .fd = u->fd, .off = (int64_t)off,
        .size = (int64_t)n};
    backend_call(u->cli, &u->b, &rq, part_sent, u);
    free(q);
}

static void created(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct backendmpu *u = arg;
    const char *s = o->status == 200 ? memmem(body, len, "<UploadId>", 10) : NULL;
    const char *e = s ? memmem(s, len - (size_t)(s - body), "</UploadId>", 11) : NULL;
    if (!s || !e || e - s - 10 <= 0 || e - s - 10 >= (long)sizeof(u->upload_id)) {
        backendmpu_fail(u, o);
        return;
    }
    snprintf(u->upload_id, sizeof(u->upload_id), "%.*s", (int)(e - s - 10), s + 10);
    send_part(u);
}

void backendmpu_put(struct curlclient *cli, const struct backend *b, const char *key, int fd,
                    uint64_t size, uint64_t part_size, backend_done_fn cb, void *arg)
{
    struct backendmpu *u = xcalloc(1, sizeof(*u));
    u->cli = cli;
    backend_copy(&u->b, b);
    u->key = xstrdup(key);
    u->fd = fd;
    u->size = size;
    u->part_size = part_size;
    u->nparts = (int)((size + part_size - 1) / part_size);
    u->etags = xcalloc((size_t)u->nparts, sizeof(*u->etags));
    u->cb = cb;
    u->arg = arg;
    struct backend_req rq = {.method = "POST", .key = key, .query = "uploads=", .fd = -1};
    backend_call(cli, &u->b, &rq, created, u);
}
