/* libFuzzer target for the HTTP server's request side: raw bytes from a
 * client through the same code the daemons run (llhttp and its callbacks,
 * header gathering, the header limits, the framing checks, body delivery,
 * pipelining and the early-answer paths), with the real connection over a
 * socketpair. One server, made once, whose single worker loop runs on the
 * fuzzer's thread: no thread per input.
 *
 * Input: the first byte sets how the rest is written to the server (0: at
 * once; n: in pieces of n bytes with a loop pass between, which splits
 * spans and chunk framing across reads); the rest is what a client sends.
 * The path picks the handler's behaviour (see handler). The harness fails
 * when the server's output does not start as an HTTP/1.1 response, or when
 * a connection outlives its client. Built and run by `make fuzz`. */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PASSES_MAX 10000 /* loop passes a connection may take to finish */

static struct http_server *srv;
static struct http_worker *w;

struct body {
    size_t n;
    int mode;
};

static void reply_body(struct http_req *r)
{
    struct body *b = r->data;
    char out[64];
    int len = snprintf(out, sizeof(out), "len:%zu", b->n);
    if (b->mode) {
        http_resp_begin(r, 200, -1); /* chunked */
        http_resp_write(r, out, (size_t)len);
        http_resp_end(r);
    } else {
        http_reply(r, 200, "text/plain", out, (size_t)len);
    }
}

static void later_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_req *r = arg;
    (void)fd;
    (void)what;
    reply_body(r);
    free(r->data);
    r->data = NULL;
    http_req_unref(r);
}

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_req *r = arg;
    (void)fd;
    (void)what;
    http_req_resume(r);
    http_req_unref(r);
}

static int on_body(struct http_req *r, const char *p, size_t n)
{
    struct body *b = r->data;
    (void)p;
    b->n += n;
    if (b->mode == 2 && b->n > 16)
        return -EIO; /* the layer answers 500 in the handler's place */
    if (b->mode == 3) {
        /* a slow consumer: pause, resume in the next loop pass */
        http_req_pause(r);
        http_req_ref(r);
        event_base_once(r->w->base, -1, EV_TIMEOUT, resume_cb, r, NULL);
    }
    return 0;
}

static void on_end(struct http_req *r)
{
    struct body *b = r->data;
    if (b->mode == 4) {
        /* answered from a later loop pass */
        http_req_ref(r);
        event_base_once(r->w->base, -1, EV_TIMEOUT, later_cb, r, NULL);
        return;
    }
    reply_body(r);
    free(r->data);
    r->data = NULL;
}

static void on_abort(struct http_req *r)
{
    free(r->data);
    r->data = NULL;
}

/* /b0../b4: take the body (plain, chunked answer, failing, paced,
 * answered later); /q: query and header lookups; anything else: answered
 * at once, before any body (the early-answer paths). */
static void handler(struct http_req *r)
{
    if (r->path_len == 3 && r->path[0] == '/' && r->path[1] == 'b' && r->path[2] >= '0' &&
        r->path[2] <= '4') {
        struct body *b = calloc(1, sizeof(*b));
        b->mode = r->path[2] - '0';
        r->data = b;
        r->on_body = on_body;
        r->on_end = on_end;
        r->on_abort = on_abort;
        return;
    }
    if (http_path_is(r, "/q")) {
        char v[64];
        int n = http_query_get(r, "a", v, sizeof(v));
        const char *h = http_req_header(r, "x-h");
        http_resp_header(r, "X-Len", "%d", n);
        http_reply(r, 200, "text/plain", h ? h : "", h ? strlen(h) : 0);
        return;
    }
    http_reply_error(r, 404, "nothing at %.*s", (int)(r->path_len > 64 ? 64 : r->path_len),
                     r->path);
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    log_init("fuzz_http", LOGL_ERROR);
    struct http_server_opts o = {.workers = 1, .max_header_bytes = 512, .max_headers = 16,
                                 .idle_timeout_s = 60, .handler = handler};
    srv = http_server_new(&o);
    w = http_server_worker(srv, 0);
}

/* Read what the server sent; checks the output's first bytes. */
static void drain(int fd, char *first, size_t *nfirst)
{
    char buf[65536];
    ssize_t r;
    while ((r = read(fd, buf, sizeof(buf))) > 0) {
        size_t k = (size_t)r < 9 - *nfirst ? (size_t)r : 9 - *nfirst;
        memcpy(first + *nfirst, buf, k);
        *nfirst += k;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!srv)
        setup();
    if (size < 1)
        return 0;
    size_t step = data[0] ? data[0] : size;
    data++;
    size--;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
        abort();
    http_server_adopt(w, sv[0]);
    char first[9] = "";
    size_t nfirst = 0;
    for (size_t off = 0; off < size;) {
        size_t k = size - off < step ? size - off : step;
        ssize_t n = write(sv[1], data + off, k);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && errno != EAGAIN)
            break; /* the server closed: the rest goes nowhere */
        event_base_loop(w->base, EVLOOP_NONBLOCK);
        drain(sv[1], first, &nfirst);
    }
    shutdown(sv[1], SHUT_WR);
    int passes = 0;
    while (w->conns && passes++ < PASSES_MAX) {
        event_base_loop(w->base, EVLOOP_NONBLOCK);
        drain(sv[1], first, &nfirst);
    }
    close(sv[1]);
    if (w->conns) {
        fprintf(stderr, "fuzz_http: the connection outlived its client\n");
        abort();
    }
    /* timers the handler left (answers, resumes) let go of their
     * requests; what stays added is the worker's queue event */
    while (event_base_get_num_events(w->base, EVENT_BASE_COUNT_ADDED) > 1 && passes++ < PASSES_MAX)
        event_base_loop(w->base, EVLOOP_NONBLOCK);
    if (nfirst > 0 && strncmp(first, "HTTP/1.1 ", nfirst)) {
        fprintf(stderr, "fuzz_http: output starts with '%.*s'\n", (int)nfirst, first);
        abort();
    }
    return 0;
}
