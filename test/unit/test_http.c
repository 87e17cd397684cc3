/* The HTTP layer against raw bytes from a socket: split headers,
 * pipelining (with an asynchronous handler in the middle), chunked bodies,
 * header limits, malformed requests and Expect: 100-continue. */
#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "http.h"

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

static void handler(struct http_req *r)
{
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
    } else if (r->path_len == 5 && !memcmp(r->path, "/slow", 5)) {
        struct timeval tv = {0, 50000};
        http_req_ref(r);
        event_base_once(r->w->base, -1, EV_TIMEOUT, slow_cb, r, &tv);
    } else if (r->path_len == 6 && !memcmp(r->path, "/query", 6)) {
        char v[32];
        int n = http_query_get(r, "a", v, sizeof(v));
        http_reply(r, 200, "text/plain", n >= 0 ? v : "none", n >= 0 ? (size_t)n : 4);
    } else {
        http_reply_error(r, 404, "nothing here");
    }
}

/* Send req (in pieces of `step` bytes, 0 = at once), read until EOF or
 * 2 s of silence; returns the bytes read into out. */
static size_t roundtrip(const char *req, size_t n, size_t step, char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
        close(fd);
        return 0;
    }
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

static int count(const char *hay, const char *needle)
{
    int c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        c++;
    return c;
}

int main(void)
{
    char err[256];
    static char out[1 << 20];
    port = 10000 + (int)(getpid() % 20000); /* below the ephemeral range */
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

    /* pipelined: three requests in one write, the middle one answered
     * asynchronously; answers come back complete and in order */
    req = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
          "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
          "PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nabcde";
    roundtrip(req, strlen(req), 0, out, sizeof(out));
    char *a = strstr(out, "hello"), *b = strstr(out, "slow"), *c = strstr(out, "len:5");
    CHECK(a && b && c && a < b && b < c);
    CHECK(count(out, "HTTP/1.1 200") == 3);

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

    /* HTTP/1.0 without keep-alive closes after the answer */
    req = "GET /hello HTTP/1.0\r\n\r\n";
    got = roundtrip(req, strlen(req), 0, out, sizeof(out));
    CHECK(strstr(out, "Connection: close") && strstr(out, "hello"));

    /* let the last resume timer fire: a timer pending at stop would hold
     * its request */
    usleep(100000);
    CHECK(paced_resumed == paced_pieces);
    http_server_stop(s);
    return check_done("test_http");
}
