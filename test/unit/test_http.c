/* The HTTP layer against raw bytes from a socket: split headers,
 * pipelining (with an asynchronous handler in the middle), chunked bodies,
 * header limits, malformed requests and Expect: 100-continue; the framing
 * refused before any handler runs (lengths, transfer codings, chunk CRLFs);
 * the defences against clients that hold resources: the request head's
 * deadline, max_connections (idle connections closed to make room), and
 * accept failing for want of descriptors. */
#include <arpa/inet.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "http.h"
#include "util.h"

static int port;

struct sum {
    size_t n;
};

static int sum_body(struct http_req *r, const char *p, size_t n)
{
    (void)p;
    ((struct sum *)r->data)->n += n;
    return 0;
}

static void sum_end(struct http_req *r)
{
    char out[64];
    int len = snprintf(out, sizeof(out), "len:%zu", ((struct sum *)r->data)->n);
    free(r->data);
    r->data = NULL;
    http_reply(r, 200, "text/plain", out, (size_t)len);
}

static void sum_abort(struct http_req *r)
{
    free(r->data);
}

static void slow_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_req *r = arg;
    http_reply(r, 200, "text/plain", "slow", 4);
    http_req_unref(r);
}

/* /paced: pauses the body after every piece and resumes 1 ms later, as a
 * handler waiting on a slow consumer would. */
static int paced_pieces, paced_resumed;

static void paced_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_req *r = arg;
    paced_resumed++;
    http_req_resume(r);
    http_req_unref(r);
}

static int paced_body(struct http_req *r, const char *p, size_t n)
{
    sum_body(r, p, n);
    paced_pieces++;
    http_req_pause(r);
    struct timeval tv = {0, 1000};
    http_req_ref(r);
    event_base_once(r->w->base, -1, EV_TIMEOUT, paced_resume, r, &tv);
    return 0;
}

/* /file and /chunks: FILE_LEN bytes of a known pattern, sent with
 * sendfile (past HTTP_COPY_MAX), whole or as two chunks around "mid". */
#define FILE_LEN (200u << 10)
static int file_fd = -1;

static unsigned char pattern_at(size_t i)
{
    return (unsigned char)(i * 7 % 251);
}

static int handled; /* requests that reached the handler */

static void handler(struct http_req *r)
{
    __atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
    if (r->path_len == 6 && !memcmp(r->path, "/hello", 6)) {
        http_reply(r, 200, "text/plain", "hello", 5);
    } else if (r->path_len == 4 && !memcmp(r->path, "/sum", 4)) {
        r->data = calloc(1, sizeof(struct sum));
        r->on_body = sum_body;
        r->on_end = sum_end;
        r->on_abort = sum_abort;
    } else if (r->path_len == 6 && !memcmp(r->path, "/paced", 6)) {
        r->data = calloc(1, sizeof(struct sum));
        r->on_body = paced_body;
        r->on_end = sum_end;
        r->on_abort = sum_abort;
    } else if (r->path_len == 5 && !memcmp(r->path, "/hdrs", 5)) {
        http_resp_header_str(r, "X-Plain", "a\r\nX-Injected: 1\nb");
        http_resp_header(r, "X-Num", "%d-%s", 42, "z");
        http_reply(r, 201, "text/plain", "ok", 2);
    } else if (r->path_len == 5 && !memcmp(r->path, "/file", 5)) {
        http_resp_header(r, "Content-Type", "application/octet-stream");
        http_resp_begin(r, 200, FILE_LEN);
        http_resp_file(r, dup(file_fd), 0, FILE_LEN);
        http_resp_end(r);
    } else if (r->path_len == 7 && !memcmp(r->path, "/chunks", 7)) {
        http_resp_begin(r, 200, -1);
        http_resp_file(r, dup(file_fd), 0, FILE_LEN / 2);
        http_resp_write(r, "mid", 3);
        http_resp_file(r, dup(file_fd), FILE_LEN / 2, FILE_LEN - FILE_LEN / 2);
        http_resp_end(r);
    } else if (r->path_len == 5 && !memcmp(r->path, "/slow", 5)) {
        struct timeval tv = {0, 50000};
        http_req_ref(r);
        event_base_once(r->w->base, -1, EV_TIMEOUT, slow_cb, r, &tv);
    } else if (r->path_len == 6 && !memcmp(r->path, "/query", 6)) {
        char v[32];
        int n = http_query_get(r, "a", v, sizeof(v));
        http_reply(r, 200, "text/plain", n >= 0 ? v : "none", n >= 0 ? (size_t)n : 4);
    } else {
        http_reply_error(r, 404, "nothing at %.*s", (int)r->path_len, r->path);
    }
}

/* Connect fd (a TCP socket) to 127.0.0.1:p; 0 or -1. */
static int dial_fd(int fd, int p)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    return connect(fd, (struct sockaddr *)&sin, sizeof(sin));
}

/* A new connection to 127.0.0.1:p, or -1. */
static int dial(int p)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && dial_fd(fd, p)) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_str(int fd, const char *s)
{
    ssize_t w = send(fd, s, strlen(s), MSG_NOSIGNAL);
    (void)w;
}

/* Read what fd has into out (appending at *got) for up to ms; returns 1
 * when the server closed (EOF or reset), 0 otherwise. Stops early once
 * out holds want, when want is set. */
static int read_for(int fd, int ms, char *out, size_t cap, size_t *got, const char *want)
{
    uint64_t end = mono_ms() + (uint64_t)ms;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    for (uint64_t now; (now = mono_ms()) < end;) {
        if (poll(&pfd, 1, (int)(end - now)) <= 0)
            continue;
        ssize_t r = read(fd, out + *got, cap - 1 - *got);
        if (r <= 0)
            return 1;
        *got += (size_t)r;
        out[*got] = '\0';
        if (want && strstr(out, want))
            return 0;
    }
    return 0;
}

/* Send req (in pieces of `step` bytes, 0 = at once), read until EOF or
 * 2 s of silence; returns the bytes read into out. */
static size_t roundtrip(const char *req, size_t n, size_t step, char *out, size_t cap)
{
    int fd = dial(port);
    if (fd < 0)
        return 0;
    for (size_t off = 0; off < n;) {
        size_t k = step ? (n - off < step ? n - off : step) : n - off;
        ssize_t w = send(fd, req + off, k, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        off += (size_t)w;
        if (step)
            usleep(1000);
    }
    size_t got = 0;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (got < cap - 1 && poll(&pfd, 1, 2000) > 0) {
        ssize_t r = read(fd, out + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    out[got] = '\0';
    close(fd);
    return got;
}

/* Is req (sent in pieces of step bytes) answered 400 alone, with the
 * connection closed? Prints the exchange when not. */
static int is_refused(const char *req, size_t step, char *out, size_t cap)
{
    size_t got = roundtrip(req, strlen(req), step, out, cap);
    int ok = got > 0 && !strncmp(out, "HTTP/1.1 400", 12) && strstr(out, "Connection: close") &&
             !strstr(out, "len:");
    if (!ok)
        fprintf(stderr, "not refused:\n%s\n--- answer:\n%s\n", req, out);
    return ok;
}

static int count(const char *hay, const char *needle)
{
    int c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        c++;
    return c;
}

/* Does the answer at *p (of the bytes up to end) have status 200 and the
 * pattern's FILE_LEN bytes as its body (chunked: the two chunks around
 * "mid")? Moves *p past it. */
static int file_answer(const char **p, const char *end, int chunked)
{
    const char *h = *p, *b = strstr(h, "\r\n\r\n");
    if (!b || strncmp(h, "HTTP/1.1 200", 12))
        return 0;
    b += 4;
    size_t i = 0;
    while (i < FILE_LEN) {
        size_t n = FILE_LEN - i;
        if (chunked) {
            char *e;
            n = strtoul(b, &e, 16);
            if (e == b || strncmp(e, "\r\n", 2))
                return 0;
            b = e + 2;
            if (n == 3 && end - b >= 5 && !memcmp(b, "mid\r\n", 5)) {
                b += 5;
                continue;
            }
        }
        if ((size_t)(end - b) < n || n > FILE_LEN - i)
            return 0;
        for (size_t k = 0; k < n; k++)
            if ((unsigned char)b[k] != pattern_at(i + k))
                return 0;
        b += n;
        i += n;
        if (chunked && strncmp(b, "\r\n", 2))
            return 0;
        if (chunked)
            b += 2;
    }
    if (chunked) {
        if (strncmp(b, "0\r\n\r\n", 5))
            return 0;
        b += 5;
    }
    *p = b;
    return 1;
}

/* Send piece (NULL: nothing) on fd every 200 ms for up to 3 s; returns
 * the milliseconds until the server closed, or 0 when it did not. What it
 * answered is in out. */
static uint64_t trickle(int fd, const char *piece, char *out, size_t cap)
{
    size_t got = 0;
    out[0] = '\0';
    uint64_t t0 = mono_ms();
    for (int i = 0; i < 15; i++) {
        if (piece)
            send_str(fd, piece);
        if (read_for(fd, 200, out, cap, &got, NULL))
            return mono_ms() - t0;
    }
    return 0;
}

/* Send req on fd and read until out holds want (or 2 s passed). */
static void ask(int fd, const char *req, const char *want, char *out, size_t cap)
{
    size_t got = 0;
    out[0] = '\0';
    send_str(fd, req);
    read_for(fd, 2000, out, cap, &got, want);
}

/* header_timeout_s = 1 on port p: a head trickled in, or never sent, is
 * cut off after a second; an idle keep-alive connection and a slow body
 * are not. */
static void test_head_deadline(int p)
{
    static char out[1 << 16];
    const char *get = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    int fd = dial(p);
    send_str(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n");
    uint64_t dt = trickle(fd, "X-Slow: b\r\n", out, sizeof(out));
    CHECK(dt >= 800 && dt < 2500);
    CHECK(!strncmp(out, "HTTP/1.1 408", 12));
    close(fd);

    /* connected, silent: the first head is due a second after the accept */
    fd = dial(p);
    dt = trickle(fd, NULL, out, sizeof(out));
    CHECK(dt >= 800 && dt < 2500);
    close(fd);

    /* stray blank lines between requests start the clock as well */
    fd = dial(p);
    ask(fd, get, "hello", out, sizeof(out));
    dt = trickle(fd, "\r\n", out, sizeof(out));
    CHECK(dt > 0 && dt < 2500);
    close(fd);

    /* between requests the idle timeout rules, not the head's deadline */
    fd = dial(p);
    ask(fd, get, "hello", out, sizeof(out));
    usleep(1500 * 1000);
    ask(fd, get, "hello", out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 200", 12) && strstr(out, "hello"));
    close(fd);

    /* a body slower than the deadline is the handler's business */
    fd = dial(p);
    send_str(fd, "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n");
    for (int i = 0; i < 3; i++) {
        usleep(400 * 1000);
        send_str(fd, "b");
    }
    usleep(400 * 1000);
    ask(fd, "b", "len:4", out, sizeof(out));
    CHECK(strstr(out, "len:4") != NULL);
    close(fd);
}

/* max_connections = 2, one worker, header_timeout_s = 1, on port p:
 * connections with requests under way hold their places, and a third
 * waits in the backlog until their heads are past the deadline; idle ones
 * make room for new ones at once, the longest idle first, and a request
 * under way (a slow body) is never cut for that. */
static void test_max_connections(int p)
{
    static char out[1 << 16];
    const char *get = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    int fds[2];
    uint64_t t0 = mono_ms();
    for (int i = 0; i < 2; i++) {
        fds[i] = dial(p);
        send_str(fds[i], "GET /hello HTTP/1.1\r\nHost: x\r\n");
    }
    int third = dial(p);
    send_str(third, get);
    size_t got = 0;
    read_for(third, 300, out, sizeof(out), &got, "hello");
    CHECK(got == 0);
    /* the 408'd heads are closed for it, not left to their 2 s linger */
    read_for(third, 3000, out, sizeof(out), &got, "hello");
    CHECK(strstr(out, "hello") != NULL && mono_ms() - t0 < 1800);
    close(fds[0]);
    close(fds[1]);
    close(third);
    usleep(200 * 1000);

    /* two idle: a third is served at once; the longer idle one is closed */
    int a = dial(p), b = dial(p);
    ask(a, get, "hello", out, sizeof(out));
    usleep(20 * 1000);
    ask(b, get, "hello", out, sizeof(out));
    third = dial(p);
    t0 = mono_ms();
    ask(third, get, "hello", out, sizeof(out));
    CHECK(strstr(out, "hello") != NULL && mono_ms() - t0 < 1000);
    got = 0;
    CHECK(read_for(a, 500, out, sizeof(out), &got, NULL) == 1 && got == 0);
    ask(b, get, "hello", out, sizeof(out));
    CHECK(strstr(out, "hello") != NULL);
    close(a);
    close(b);
    close(third);
    usleep(200 * 1000);

    /* a body under way is kept, though its connection is the older one */
    int put = dial(p);
    send_str(put, "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab");
    usleep(20 * 1000);
    b = dial(p);
    ask(b, get, "hello", out, sizeof(out));
    third = dial(p);
    ask(third, get, "hello", out, sizeof(out));
    CHECK(strstr(out, "hello") != NULL);
    got = 0;
    CHECK(read_for(b, 500, out, sizeof(out), &got, NULL) == 1 && got == 0);
    ask(put, "cd", "len:4", out, sizeof(out));
    CHECK(strstr(out, "len:4") != NULL);
    close(put);
    close(b);
    close(third);
}

/* Accept failing with EMFILE on port p: the workers back off instead of
 * spinning, and serve the waiting connections once descriptors are back. */
static void test_accept_emfile(int p)
{
    static char out[1 << 16];
    enum { K = 3 };
    int fds[K];
    for (int i = 0; i < K; i++)
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    /* the lowest free descriptor number becomes the limit: none is left */
    int lowest = open("/dev/null", O_RDONLY);
    close(lowest);
    struct rlimit old, tight;
    getrlimit(RLIMIT_NOFILE, &old);
    tight = old;
    tight.rlim_cur = (rlim_t)lowest;
    CHECK(setrlimit(RLIMIT_NOFILE, &tight) == 0);
    for (int i = 0; i < K; i++) {
        CHECK(dial_fd(fds[i], p) == 0);
        send_str(fds[i], "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    }
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    usleep(1000 * 1000);
    getrusage(RUSAGE_SELF, &r1);
    setrlimit(RLIMIT_NOFILE, &old);
    long cpu_us = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) * 1000000L +
                  (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) +
                  (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000000L +
                  (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
    CHECK(cpu_us < 250000);
    if (cpu_us >= 250000)
        fprintf(stderr, "EMFILE: %ld us of CPU in 1 s\n", cpu_us);
    for (int i = 0; i < K; i++) {
        ask(fds[i], "", "hello", out, sizeof(out));
        CHECK(strstr(out, "hello") != NULL);
        close(fds[i]);
    }
}

int main(void)
{
    char err[256];
    static char out[1 << 20];
    port = 10000 + (int)(getpid() % 20000); /* below the ephemeral range */
    char fpath[] = "/tmp/test_http.XXXXXX";
    file_fd = mkstemp(fpath);
    CHECK(file_fd >= 0);
    unlink(fpath);
    static unsigned char pat[FILE_LEN];
    for (size_t i = 0; i < FILE_LEN; i++)
        pat[i] = pattern_at(i);
    CHECK(write(file_fd, pat, FILE_LEN) == (ssize_t)FILE_LEN);
    struct http_server_opts o = {.host = "127.0.0.1", .port = port, .workers = 2,
                                 .max_header_bytes = 4096, .max_headers = 20,
                                 .idle_timeout_s = 5, .handler = handler};
    struct http_server *s = http_server_start(&o, err, sizeof(err));
    CHECK(s != NULL);
    if (!s) {
        fprintf(stderr, "%s\n", err);
        return check_done("test_http");
    }
    /* a second server on the same port is refused, not silently shared */
    CHECK(http_server_start(&o, err, sizeof(err)) == NULL && strstr(err, "cannot listen"));

    /* headers split byte by byte */
    const char *req = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Long-Header-Name: some value\r\n"
                      "Connection: close\r\n\r\n";
    roundtrip(req, strlen(req), 1, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 200 OK", 15) && strstr(out, "\r\n\r\nhello"));

    /* headers as they are and formatted; a CR or LF in a value is a space */
    req = "GET /hdrs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    const char *head = "HTTP/1.1 201 Created\r\nServer: shoal\r\nDate: ";
    CHECK(!strncmp(out, head, strlen(head)));
    CHECK(strstr(out, "\r\nContent-Length: 2\r\n") && strstr(out, "\r\nConnection: close\r\n"));
    CHECK(strstr(out, "\r\nX-Plain: a  X-Injected: 1 b\r\n") != NULL);
    CHECK(strstr(out, "\r\nX-Num: 42-z\r\n") && !strstr(out, "\r\nX-Injected"));
    CHECK(strstr(out, "\r\n\r\nok") != NULL);

    /* pipelined: three requests in one write, the middle one answered
     * asynchronously; answers come back complete and in order */
    req = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
          "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
          "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nabcde";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    char *a = strstr(out, "hello"), *b = strstr(out, "slow"), *c = strstr(out, "len:5");
    CHECK(a && b && c && a < b && b < c);
    CHECK(count(out, "HTTP/1.1 200") == 3);

    /* sendfile'd bodies behind their heads (sent with MSG_MORE), pipelined
     * with one another and with an answer from memory, then chunked, on a
     * kept connection: every byte in its place; then the same to a client
     * that reads late through a small window, so that the server's writes
     * stop short and finish later */
    req = "GET /file HTTP/1.1\r\nHost: x\r\n\r\n"
          "GET /file HTTP/1.1\r\nHost: x\r\n\r\n"
          "GET /chunks HTTP/1.1\r\nHost: x\r\n\r\n"
          "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int slow = 0; slow < 2; slow++) {
        int ffd = socket(AF_INET, SOCK_STREAM, 0), rcv = 4096;
        if (slow)
            setsockopt(ffd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
        CHECK(ffd >= 0 && dial_fd(ffd, port) == 0);
        send_str(ffd, req);
        if (slow)
            usleep(200000);
        size_t fgot = 0;
        read_for(ffd, 3000, out, sizeof(out), &fgot, "\r\n\r\nhello");
        close(ffd);
        const char *fp = out, *fend = out + fgot;
        CHECK(file_answer(&fp, fend, 0));
        CHECK(file_answer(&fp, fend, 0));
        CHECK(file_answer(&fp, fend, 1));
        CHECK(!strncmp(fp, "HTTP/1.1 200", 12) && strstr(fp, "\r\n\r\nhello"));
    }

    /* chunked body, chunk boundaries split across writes */
    req = "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
          "\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n";
    roundtrip(req, strlen(req), 3, out, sizeof(out));
    CHECK(strstr(out, "len:8") != NULL);

    /* bad chunk framing: 400 and close */
    req = "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 400", 12) && strstr(out, "Connection: close"));

    /* header block over the limit: 431 */
    static char big[8192];
    int n = snprintf(big, sizeof(big), "GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(big + n, 'a', 5000);
    strcpy(big + n + 5000, "\r\n\r\n");
    roundtrip(big, strlen(big), 0, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 431", 12));

    /* too many headers: 431 */
    n = snprintf(big, sizeof(big), "GET /hello HTTP/1.1\r\n");
    for (int i = 0; i < 30; i++)
        n += snprintf(big + n, sizeof(big) - (size_t)n, "X-H%d: v\r\n", i);
    snprintf(big + n, sizeof(big) - (size_t)n, "\r\n");
    roundtrip(big, strlen(big), 0, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 431", 12));

    /* malformed request line: 400, connection closed (EOF ends the read) */
    req = "GARBAGE\r\n\r\n";
    size_t got = roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(got > 0 && !strncmp(out, "HTTP/1.1 400", 12) && strstr(out, "Connection: close"));

    /* conflicting lengths are refused (request smuggling) */
    req = "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n"
          "\r\n0\r\n\r\n";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 400", 12));

    /* framing the parser must refuse before the handler sees the request:
     * 400 and the connection closed */
    static const char *const refused[] = {
        /* a length past int64 used to wrap to -1 and be taken as 0 */
        "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\nabc",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\nabc",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551616\r\n\r\nabc",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nabc",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc",
        /* transfer codings other than chunked alone */
        "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
        "3\r\nabc\r\n0\r\n\r\n",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"
        "\r\n3\r\nabc\r\n0\r\n\r\n",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
        "3\r\nabc\r\n0\r\n\r\n",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\nabc",
        /* both lengths (request smuggling), whatever the coding */
        "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: gzip, chunked\r\n"
        "\r\n3\r\nabc\r\n0\r\n\r\n",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n"
        "\r\n3\r\nabc\r\n0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        int before = __atomic_load_n(&handled, __ATOMIC_RELAXED);
        CHECK(is_refused(refused[i], 0, out, sizeof(out)) &&
              __atomic_load_n(&handled, __ATOMIC_RELAXED) == before);
    }
    /* the largest length is the handler's to judge (S3 answers
     * EntityTooLarge); the body it will not read closes the connection */
    req = "PUT /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\nabc";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 200", 12) && strstr(out, "Connection: close"));
    /* the coding's name is case-insensitive */
    req = "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked \r\nConnection: close\r\n"
          "\r\n3\r\nabc\r\n0\r\n\r\n";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(strstr(out, "len:3") != NULL);

    /* chunk data not followed by CRLF: the lenient parser skips any two
     * bytes there; refused whether they arrive with the data or later */
    static const char *const bad_chunks[] = {
        "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhelloXX0\r\n\r\n",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\rX3\r\nabc\r\n0\r\n\r\n",
        "PUT /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3\r\nabc\r\n5\r\nhello\n\n0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad_chunks) / sizeof(bad_chunks[0]); i++)
        for (size_t step = 0; step <= 1; step++)
            CHECK(is_refused(bad_chunks[i], step, out, sizeof(out)));

    /* Expect: 100-continue gets the interim answer before the body */
    req = "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n"
          "Connection: close\r\n\r\nok";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200", 37) && strstr(out, "len:2"));

    /* an early answer to an unwanted small body keeps the connection: the
     * body is read and dropped and the next request is answered */
    req = "PUT /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"
          "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 404", 12) && strstr(out, "hello"));

    /* a paused body resumes and arrives whole, followed by a pipelined GET */
    static char paced[(256 << 10) + 256];
    n = snprintf(paced, sizeof(paced), "PUT /paced HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n",
                 256 << 10);
    memset(paced + n, 'p', 256 << 10);
    strcpy(paced + n + (256 << 10), "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    roundtrip(paced, strlen(paced), 0, out, sizeof(out));
    CHECK(strstr(out, "len:262144") != NULL && strstr(out, "hello") != NULL);
    CHECK(paced_pieces > 1);

    /* query decoding */
    req = "GET /query?x=1&a=b%20c+d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(strstr(out, "\r\n\r\nb c d") != NULL);

    /* a bad escape in the path */
    req = "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(!strncmp(out, "HTTP/1.1 400", 12));

    /* an error that quotes bytes that are not UTF-8 keeps its status and
     * shows them escaped (jansson refused the message: 500) */
    static const char *const not_utf8[] = {
        "GET /x%FFy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "GET /x\xffy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(not_utf8) / sizeof(not_utf8[0]); i++) {
        roundtrip(not_utf8[i], strlen(not_utf8[i]), 0, out, sizeof(out));
        CHECK(!strncmp(out, "HTTP/1.1 404", 12) &&
              strstr(out, "{\"error\":\"nothing at /x\\\\xFFy\",\"status\":404}"));
    }

    /* HTTP/1.0 without keep-alive closes after the answer */
    req = "GET /hello HTTP/1.0\r\n\r\n";
    got = roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(strstr(out, "Connection: close") && strstr(out, "hello"));

    test_accept_emfile(port);

    /* a second server, one worker, tight limits */
    struct http_server_opts o2 = o;
    o2.port = port + 1;
    o2.workers = 1;
    o2.header_timeout_s = 1;
    o2.max_connections = 2;
    struct http_server *s2 = http_server_start(&o2, err, sizeof(err));
    CHECK(s2 != NULL);
    if (s2) {
        test_head_deadline(o2.port);
        test_max_connections(o2.port);
        http_server_stop(s2);
    }

    /* let the last resume timer fire: a timer pending at stop would hold
     * its request */
    usleep(100000);
    CHECK(paced_resumed == paced_pieces);
    http_server_stop(s);
    return check_done("test_http");
}
