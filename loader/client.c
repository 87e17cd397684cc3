/*
 * client: the loader's per-request path, on Shoal's HTTP client
 * (common/nodeclient.h): each loop thread has one nodeclient, whose keep-alive connections
 * its workers share. A worker's request is signed as its mode asks (SigV4
 * for native requests when a key is set, S3 requests always), PUT bodies
 * go out by reference from the shared buffer, and the answer's body is
 * counted (and hashed with --verify) as it streams. A redirect is followed
 * on the same worker; any other outcome is recorded in the thread's
 * statistics and the worker moves on (worker_next).
 *
 * Threads: everything here runs on the worker's loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodeclient.h"
#include "loader.h"
#include "sigv4.h"
#include "url.h"
#include "xxh.h"

const char *const op_names[OP_N] = {"GET", "PUT", "DELETE"};

#define HDRS_MAX 24

static void record(struct worker *w, int ok, enum err e, uint64_t bytes)
{
    struct thread *t = w->t;
    struct opstats *s = &t->st[w->op];
    pthread_mutex_lock(&t->mu);
    if (ok) {
        s->ops++;
        s->bytes += bytes;
        if (opt.batch && w->op == OP_GET)
            s->entries += (uint64_t)w->batch_n;
        hist_add(&s->h, now_us() - w->start_us);
        hist_add(&s->ttfb, w->ttfb_us);
    } else {
        s->errs[e]++;
    }
    pthread_mutex_unlock(&t->mu);
}

/* ---- the answer ------------------------------------------------------------------------ */

static int on_head(void *arg, struct nodeclient_xfer *x, int status)
{
    struct worker *w = arg;
    w->status = status;
    w->ttfb_us = now_us() - w->start_us;   /* from the request's start: redirects included */
    const char *v = nodeclient_header(x, "Content-Length");
    uint64_t n;
    w->clen = v && !parse_u64(v, strlen(v), &n) ? (int64_t)n : -1;
    v = nodeclient_header(x, "Location");
    snprintf(w->location, sizeof(w->location), "%s", v ? v : "");
    v = nodeclient_header(x, "X-Shoal-Checksum");
    snprintf(w->cksum, sizeof(w->cksum), "%s", v ? v : "");
    if (opt.verify)
        XXH3_64bits_reset(w->xs);
    return 0;
}

static int on_body(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct worker *w = arg;
    (void)x;
    w->body += n;
    if (opt.verify)
        XXH3_64bits_update(w->xs, p, n);
    return 0;
}

/* What a whole answer means for the worker's op. */
static enum err judge(struct worker *w)
{
    if (w->status >= 500)
        return E_5XX;
    if (w->status >= 400)
        return E_4XX;
    if (w->clen >= 0 && w->body != (uint64_t)w->clen)
        return E_SHORT;
    if (opt.verify && w->op == OP_GET && strlen(w->cksum) > 8 && opt.read_len < 0) {
        char got[32];
        snprintf(got, sizeof(got), "xxh3-64:%016llx",
                 (unsigned long long)XXH3_64bits_digest(w->xs));
        if (strcmp(got, w->cksum))
            return E_VERIFY;
    }
    return E_N;
}

static void on_end(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct worker *w = arg;
    (void)err;
    w->x = NULL;
    if (status == 0) {
        enum nodeclient_fail f = nodeclient_failure(x);
        record(w, 0,
               f == NODECLIENT_FAIL_CONNECT || f == NODECLIENT_FAIL_REQUEST ? E_CONNECT
               : f == NODECLIENT_FAIL_TIMEOUT                       ? E_TIMEOUT
                                                            : E_RESET,
               0);
        worker_next(w);
        return;
    }
    if (status == 307 || status == 302 || status == 301) {
        if (!w->location[0] || ++w->hops > 4) {
            record(w, 0, E_REDIRECT, 0);
            worker_next(w);
            return;
        }
        char loc[sizeof(w->location)];
        snprintf(loc, sizeof(loc), "%s", w->location);
        client_send(w, loc, w->op == OP_PUT);
        return;
    }
    enum err e = judge(w);
    record(w, e == E_N, e, w->op == OP_PUT ? w->size : w->body);
    if (e == E_N && w->op == OP_PUT && w->status / 100 == 2)
        worker_written(w);
    worker_next(w);
}

static const struct nodeclient_ops ops = {
    .on_headers = on_head,
    .on_data = on_body,
    .on_done = on_end,
};

/* ---- requests --------------------------------------------------------------------------- */

int client_sign_native(const char *method, const char *url, int with_body, char *lines[3])
{
    char host[NODECLIENT_HOST_MAX], hostport[NODECLIENT_HOST_MAX + 8];
    int port;
    const char *path;
    if (url_split(url, host, sizeof(host), &port, &path))
        return -1;
    snprintf(hostport, sizeof(hostport), "%s:%d", host, port);
    sigv4_header_lines(method, hostport, path, with_body ? SIGV4_UNSIGNED : SIGV4_EMPTY_SHA256,
                       opt.region, opt.access_key, opt.secret_key,
                       (time_t)(wall_ns() / 1000000000u), lines);
    return 0;
}

void client_send(struct worker *w, const char *url, int with_body)
{
    int batch = w->op == OP_GET && opt.batch;   /* w->batch holds the request */
    const char *method = batch ? "POST" : op_names[w->op];
    with_body |= batch;
    const char *hdrs[HDRS_MAX];
    char *owned[HDRS_MAX];
    int n = 0, no = 0;
    hdrs[n++] = "User-Agent: shoal-loader";
    if (w->op == OP_GET && opt.read_len > 0)
        hdrs[n++] = owned[no++] = xasprintf("Range: bytes=%lld-%lld", (long long)opt.read_off,
                                            (long long)(opt.read_off + opt.read_len - 1));
    if ((opt.mode == M_SHOAL || opt.mode == M_DIRECT) && opt.access_key &&
        !strstr(url, "shoal_sig=") && !client_sign_native(method, url, with_body, owned + no)) {
        for (int i = 0; i < 3; i++)
            hdrs[n++] = owned[no++];
    }
    struct s3_req q = {0};
    if (opt.mode == M_S3) {
        s3_req_build(&q, &s3, method, opt.bucket, w->name, "",
                     w->op == OP_PUT ? SIGV4_UNSIGNED : SIGV4_EMPTY_SHA256, NULL, 0,
                     (time_t)(wall_ns() / 1000000000u));
        for (int i = 0; i < q.n && n < HDRS_MAX - 1; i++)
            hdrs[n++] = q.hdrs[i];
    }
    /* Through a proxy the body waits for 100 Continue, so a redirect
     * costs no upload. */
    if (batch)
        hdrs[n++] = "Content-Type: application/json";
    else if (with_body && opt.mode == M_SHOAL && w->size > 0)
        hdrs[n++] = "Expect: 100-continue";
    w->status = 0;
    w->body = 0;
    w->clen = -1;
    long timeout_ms = (long)opt.timeout_s * 1000;
    if (batch)
        w->x = nodeclient_start_mem(w->t->hc, method, url, hdrs, n, w->batch.p, w->batch.n,
                                    timeout_ms, &ops, w);
    else if (with_body)
        w->x = nodeclient_start_mem(w->t->hc, method, url, hdrs, n, shared_body, (size_t)w->size,
                                    timeout_ms, &ops, w);
    else
        w->x = nodeclient_start(w->t->hc, method, url, hdrs, n, -1, timeout_ms, &ops, w);
    s3_req_free(&q);
    for (int i = 0; i < no; i++)
        free(owned[i]);
}

void client_worker_close(struct worker *w)
{
    XXH3_freeState(w->xs);
    w->xs = NULL;
    gbuf_free(&w->batch);
}

void client_worker_init(struct worker *w)
{
    w->xs = XXH3_createState();
}
