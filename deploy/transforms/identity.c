/*
 * shoal-transform-identity: a Shoal transform in C (see the README's
 * Transforms): answers each object's bytes as they are, or, with the
 * argument repeat=N (1..1000), N times over. It speaks the contract with
 * libevent's HTTP server: listen on 127.0.0.1 at the port in $PORT (or
 * the first argument; a second one is the address, for a pod of its own:
 * deploy/k8s/transforms), take POST / with the object as the body and
 * X-Shoal-Args (the caller's extra query arguments, URL-encoded), answer
 * the transformed bytes with status 200, or an error status with a line
 * that says why.
 *
 * The body is taken whole before the answer starts (libevent's server
 * reads a request whole), up to 1 GiB. A process per CPU serves the one
 * listening socket; the others die with the first. Register it with
 *
 *   PUT /v1/transforms/identity  {"command": ["/usr/local/bin/shoal-transform-identity"]}
 *
 * and use it as GET /v1/objects/B/O?transform=identity[&repeat=3], or in a
 * job of kind transform, as the same-bytes transform a copy is measured
 * against.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY_MAX (1LL << 30)
#define REPEAT_MAX 1000

static void fail(struct evhttp_request *req, int status, const char *why)
{
    struct evbuffer *out = evbuffer_new();
    evbuffer_add_printf(out, "%s\n", why);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain");
    evhttp_send_reply(req, status, "Error", out);
    evbuffer_free(out);
}

/* The argument repeat: 1 when not given, 0 when malformed. */
static long repeat_of(struct evhttp_request *req)
{
    const char *args = evhttp_find_header(evhttp_request_get_input_headers(req), "X-Shoal-Args");
    struct evkeyvalq kv;
    long n = 1;
    if (!args || evhttp_parse_query_str(args, &kv))
        return args ? 0 : 1;
    const char *v = evhttp_find_header(&kv, "repeat");
    if (v) {
        char *end;
        n = strtol(v, &end, 10);
        if (*end || n < 1 || n > REPEAT_MAX)
            n = 0;
    }
    evhttp_clear_headers(&kv);
    return n;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        fail(req, 405, "POST the object's bytes");
        return;
    }
    long n = repeat_of(req);
    if (!n) {
        fail(req, 400, "repeat takes 1..1000");
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    if ((long long)len * n > BODY_MAX) {
        fail(req, 400, "the answer would be over 1 GiB");
        return;
    }
    struct evbuffer *out = evbuffer_new();
    if (n > 1) {
        const char *bytes = (const char *)evbuffer_pullup(in, -1);
        for (long i = 1; i < n; i++)
            evbuffer_add(out, bytes, len);
    }
    evbuffer_add_buffer(out, in);   /* the last (or only) copy moves */
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "application/octet-stream");
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

/* Each connection's buffers move up to 1 MiB a read or write (libevent's
 * default is 16 KiB): objects are large. */
static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
    (void)arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev) {
        bufferevent_set_max_single_read(bev, 1 << 20);
        bufferevent_set_max_single_write(bev, 1 << 20);
    }
    return bev;
}

/* The listening socket, bound in the first process before the others fork. */
static int listen_on(const char *addr, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST}, *ai;
    if (getaddrinfo(addr, port, &hints, &ai))
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0), one = 1;
    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
                    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1024) ||
                    evutil_make_socket_nonblocking(fd))) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* One process's server on the shared socket, until it is stopped. */
static int serve(int fd)
{
    struct event_base *base = event_base_new();
    struct evhttp *http = base ? evhttp_new(base) : NULL;
    if (!http || evhttp_accept_socket(http, fd)) {
        fprintf(stderr, "cannot make an HTTP server\n");
        return 1;
    }
    evhttp_set_max_body_size(http, BODY_MAX);
    evhttp_set_allowed_methods(http, EVHTTP_REQ_POST | EVHTTP_REQ_GET);
    evhttp_set_gencb(http, on_request, NULL);
    evhttp_set_bevcb(http, make_bev, NULL);
    event_base_dispatch(base);
    return 0;
}

int main(int argc, char **argv)
{
    const char *port = argc > 1 ? argv[1] : getenv("PORT");
    const char *addr = argc > 2 ? argv[2] : "127.0.0.1";
    if (!port || !atoi(port)) {
        fprintf(stderr, "usage: %s [PORT [ADDRESS]] (or PORT in the environment)\n", argv[0]);
        return 2;
    }
    int fd = listen_on(addr, port);
    if (fd < 0) {
        fprintf(stderr, "cannot listen on %s:%s\n", addr, port);
        return 1;
    }
    /* a process per CPU on the one socket; the others go with the first */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 1; i < cpus && i < 64; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            return serve(fd);
        }
    }
    printf("identity transform on port %s, %ld processes\n", port, cpus < 1 ? 1 : cpus);
    fflush(stdout);
    return serve(fd);
}
