/*
 * shoal-transform-identity: a Shoal transform in C (see the README's
 * Transforms): answers each object's bytes as they are, or, with the
 * argument repeat=N (1..1000), N times over. It speaks the contract on
 * 127.0.0.1 at the port in $PORT (or the first argument; a second one is
 * the address, for a pod of its own: deploy/k8s/transforms): POST / with
 * the object as the body (a Content-Length) and X-Shoal-Args (the
 * caller's extra query arguments, URL-encoded); the answer is the
 * transformed bytes with status 200, or an error status with a line that
 * says why.
 *
 * The bytes never enter its memory: the body is spliced from the socket
 * into pipes and from the pipes into the answer (the kernel moves page
 * references), held whole first when the pipes can hold it (up to
 * HOLD_MAX), so that the caller has sent everything before the answer
 * starts; a larger body is streamed through, the answer starting once
 * the pipes are full. With repeat > 1 the body is read into memory and
 * written N times. The request's head is parsed with llhttp. A thread per
 * connection, keep-alive; an error answer closes the connection.
 *
 * Register it with
 *
 *   PUT /v1/transforms/identity  {"command": ["/usr/local/bin/shoal-transform-identity"]}
 *
 * and use it as GET /v1/objects/B/O?transform=identity[&repeat=3], or in a
 * job of kind transform, as the same-bytes transform a copy is measured
 * against.
 */
#include <errno.h>
#include <fcntl.h>
#include <llhttp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY_MAX (1LL << 30)
#define REPEAT_MAX 1000
#define HEAD_MAX (64 << 10)      /* a request's head, at most */
#define ARGS_MAX 4096            /* X-Shoal-Args, at most */
#define PIPES 16                 /* pipes a connection holds a body in */
#define PIPE_BYTES (1 << 20)     /* each asked to hold this much */
#define HOLD_MAX (16LL << 20)    /* bodies up to this are held whole before the answer */

/* One request's head, as llhttp parsed it. */
struct head {
    char field[32];              /* the header field being read (only short ones matter) */
    size_t flen;
    int in_args;                 /* its value is X-Shoal-Args' */
    char args[ARGS_MAX + 1];
    size_t alen;
    int args_long;
    int done;                    /* the head is whole: what follows is llhttp's view of it */
    int post, sized, keep;
    long long len;
};

struct conn {
    int fd;
    char buf[HEAD_MAX];
    size_t have;                 /* bytes in buf: the head, then the body's first bytes */
    int pipe[PIPES][2];
    size_t held[PIPES];
    int pipes;                   /* made so far */
};

static int on_field(llhttp_t *p, const char *at, size_t n)
{
    struct head *h = p->data;
    size_t k = n < sizeof(h->field) - 1 - h->flen ? n : sizeof(h->field) - 1 - h->flen;
    memcpy(h->field + h->flen, at, k);
    h->flen += k;
    h->field[h->flen] = '\0';
    return 0;
}

static int on_field_done(llhttp_t *p)
{
    struct head *h = p->data;
    h->in_args = !strcasecmp(h->field, "X-Shoal-Args");
    h->flen = 0;
    return 0;
}

static int on_value(llhttp_t *p, const char *at, size_t n)
{
    struct head *h = p->data;
    if (!h->in_args)
        return 0;
    if (h->alen + n > ARGS_MAX) {
        h->args_long = 1;
        return 0;
    }
    memcpy(h->args + h->alen, at, n);
    h->alen += n;
    h->args[h->alen] = '\0';
    return 0;
}

static int on_value_done(llhttp_t *p)
{
    ((struct head *)p->data)->in_args = 0;
    return 0;
}

/* Taken here: once a message ends, llhttp starts over for the next. */
static int on_head_done(llhttp_t *p)
{
    struct head *h = p->data;
    h->done = 1;
    h->post = p->method == HTTP_POST;
    h->sized = (p->flags & F_CONTENT_LENGTH) != 0;
    h->len = (long long)p->content_length;
    h->keep = llhttp_should_keep_alive(p);
    return 0;
}

static const llhttp_settings_t settings = {
    .on_headers_complete = on_head_done,
    .on_header_field = on_field,
    .on_header_field_complete = on_field_done,
    .on_header_value = on_value,
    .on_header_value_complete = on_value_done,
};

/* The argument repeat in args (URL-encoded pairs): 1 when not given, 0
 * when malformed. */
static long repeat_of(const char *args)
{
    for (const char *p = args; *p;) {
        const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
        if (end - p >= 7 && !strncmp(p, "repeat=", 7)) {
            char *stop;
            long n = strtol(p + 7, &stop, 10);
            return stop == end && n >= 1 && n <= REPEAT_MAX ? n : 0;
        }
        p = amp ? amp + 1 : end;
    }
    return 1;
}

/* n bytes through the socket, to it (send) or from it; flags as for
 * send(2) or recv(2). */
static int move_all(int fd, char *p, size_t n, int send_, int flags)
{
    while (n) {
        ssize_t k = send_ ? send(fd, p, n, flags) : recv(fd, p, n, flags);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_all(int fd, const char *p, size_t n, int more)
{
    return move_all(fd, (char *)p, n, 1, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
}

/* An error answer; the connection closes after it. */
static void fail(struct conn *c, int status, const char *reason, const char *why)
{
    char out[512];
    int n = snprintf(out, sizeof(out), "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
                     status, reason, strlen(why) + 1, why);
    write_all(c->fd, out, (size_t)n, 0);
}

/* The answer's head; more: its body follows at once. */
static int send_head(struct conn *c, long long len, int more)
{
    char out[160];
    int n = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream"
                     "\r\nContent-Length: %lld\r\n\r\n", len);
    return write_all(c->fd, out, (size_t)n, more);
}

/* n bytes from the socket into memory (after the first bytes in buf). */
static int read_all(int fd, char *p, size_t n)
{
    return move_all(fd, p, n, 0, 0);
}

/* Everything pipe i holds, into the socket; more: bytes follow (the
 * last ones must not wait in a corked socket). */
static int drain(struct conn *c, int i, int more)
{
    while (c->held[i]) {
        ssize_t k = splice(c->pipe[i][0], NULL, c->fd, NULL, c->held[i],
                           SPLICE_F_MOVE | (more ? SPLICE_F_MORE : 0));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c->held[i] -= (size_t)k;
    }
    return 0;
}

/* Pipe i, made (and widened) on its first use; -1 when it cannot be. */
static int pipe_at(struct conn *c, int i)
{
    for (; c->pipes <= i; c->pipes++) {
        if (pipe2(c->pipe[c->pipes], O_CLOEXEC))
            return -1;
        fcntl(c->pipe[c->pipes][1], F_SETPIPE_SZ, PIPE_BYTES);   /* else its default */
        c->held[c->pipes] = 0;
    }
    return 0;
}

/* The body's first bytes (in buf) then the rest of len from the socket,
 * into the pipes until they are full; the answer starts once all is
 * held or they are full, and the rest streams through the first. */
static int answer_spliced(struct conn *c, size_t first, long long len)
{
    long long left = len - (long long)first;
    int i = 0, begun = 0;
    if (pipe_at(c, 0) || (first && write(c->pipe[0][1], c->buf, first) != (ssize_t)first))
        return -1;
    c->held[0] = first;
    while (left > 0) {
        if (!begun && i < PIPES && pipe_at(c, i))
            i = PIPES;           /* out of descriptors: what is held will do */
        if (!begun && (i >= PIPES || len > HOLD_MAX)) {   /* streamed from here on */
            if (send_head(c, len, 1))
                return -1;
            for (int j = 0; j < c->pipes && j <= i && j < PIPES; j++)
                if (drain(c, j, 1))
                    return -1;
            begun = 1;
            i = 0;
        }
        ssize_t k = splice(c->fd, NULL, c->pipe[i][1], NULL, (size_t)left,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN && !begun) {
            i++;                 /* this pipe is full: the next */
            continue;
        }
        if (k <= 0 && !(k < 0 && errno == EAGAIN))
            return -1;           /* the caller went away */
        if (k > 0) {
            c->held[i] += (size_t)k;
            left -= k;
        }
        if (begun && drain(c, 0, left > 0))
            return -1;
    }
    if (!begun && send_head(c, len, 1))
        return -1;
    for (int j = 0; j < c->pipes; j++)
        if (drain(c, j, j + 1 < c->pipes && c->held[j + 1]))
            return -1;
    return 0;
}

/* The body n times over: read into memory, written n times. */
static int answer_repeated(struct conn *c, size_t first, long long len, long n)
{
    char *body = malloc(len ? (size_t)len : 1);
    if (!body)
        return -1;
    memcpy(body, c->buf, first);
    int rc = read_all(c->fd, body + first, (size_t)len - first);
    rc = rc ? rc : send_head(c, len * n, 1);
    for (long i = 0; i < n && rc == 0; i++)
        rc = write_all(c->fd, body, (size_t)len, i + 1 < n);
    free(body);
    return rc;
}

/* The next request's head into buf: its length, 0 at the end of the
 * connection, -1 when it is too long. */
static ssize_t read_head(struct conn *c)
{
    for (;;) {
        char *end = memmem(c->buf, c->have, "\r\n\r\n", 4);
        if (end)
            return end + 4 - c->buf;
        if (c->have == sizeof(c->buf))
            return -1;
        ssize_t k = recv(c->fd, c->buf + c->have, sizeof(c->buf) - c->have, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return 0;
        c->have += (size_t)k;
    }
}

/* One request answered: 1 to keep the connection, 0 to close it. */
static int one_request(struct conn *c, llhttp_t *p, struct head *h)
{
    ssize_t hl = read_head(c);
    if (hl <= 0) {
        if (hl < 0)
            fail(c, 431, "Request Header Fields Too Large", "the request's head is too long");
        return 0;
    }
    memset(h, 0, sizeof(*h));
    llhttp_reset(p);
    p->data = h;
    if (llhttp_execute(p, c->buf, (size_t)hl) != HPE_OK || !h->done) {
        fail(c, 400, "Bad Request", "not an HTTP request");
        return 0;
    }
    if (!h->post) {
        fail(c, 405, "Method Not Allowed", "POST the object's bytes");
        return 0;
    }
    if (!h->sized) {
        fail(c, 411, "Length Required", "the object comes with a Content-Length");
        return 0;
    }
    long n = h->args_long ? 0 : repeat_of(h->args);
    long long len = h->len;
    if (!n) {
        fail(c, 400, "Bad Request", "repeat takes 1..1000");
        return 0;
    }
    if (len > BODY_MAX / n) {
        fail(c, 400, "Bad Request", "the answer would be over 1 GiB");
        return 0;
    }
    int keep = h->keep;
    size_t rest = c->have - (size_t)hl, first = (long long)rest < len ? rest : (size_t)len;
    memmove(c->buf, c->buf + hl, rest);
    int rc;
    if (n > 1)
        rc = answer_repeated(c, first, len, n);
    else if ((long long)first == len)   /* all here: one write */
        rc = send_head(c, len, first > 0) || write_all(c->fd, c->buf, first, 0);
    else
        rc = answer_spliced(c, first, len);
    c->have = rest - first;      /* a next request's first bytes */
    memmove(c->buf, c->buf + first, c->have);
    return rc == 0 && keep;
}

static void *serve(void *arg)
{
    struct conn *c = arg;
    llhttp_t p;
    struct head h;
    llhttp_init(&p, HTTP_REQUEST, &settings);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    while (one_request(c, &p, &h))
        ;
    for (int i = 0; i < c->pipes; i++) {
        close(c->pipe[i][0]);
        close(c->pipe[i][1]);
    }
    close(c->fd);
    free(c);
    return NULL;
}

static int listen_on(const char *addr, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICHOST}, *ai;
    if (getaddrinfo(addr, port, &hints, &ai))
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
                    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1024))) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
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
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;            /* a connection holds a body in up to PIPES pipes */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 << 10);
    printf("identity transform on port %s\n", port);
    fflush(stdout);
    for (;;) {
        int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
                usleep(10000);   /* out of descriptors: wait for a connection to end */
                continue;
            }
            perror("accept");
            return 1;
        }
        struct conn *c = calloc(1, sizeof(*c));
        pthread_t th;
        if (!c || (c->fd = cfd, pthread_create(&th, &attr, serve, c))) {
            close(cfd);
            free(c);
        }
    }
}
