/* Unit tests for common/hc.c, the intra-cluster HTTP client, against a
 * small raw-socket server in this file (a thread per connection), so that
 * the server can misbehave on purpose: close idle connections, answer
 * late, answer garbage, end a body with the connection. */
#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "hc.h"
#include "util.h"

static int port;
static atomic_int accepted;

/* Read one request head and its Content-Length body; the path into path. */
static int read_request(int fd, char *path, size_t plen, size_t *body_len)
{
    char buf[65536];
    size_t n = 0;
    char *end = NULL;
    while (!(end = memmem(buf, n, "\r\n\r\n", 4))) {
        ssize_t r = read(fd, buf + n, sizeof(buf) - n - 1);
        if (r <= 0)
            return -1;
        n += (size_t)r;
    }
    buf[n] = '\0';
    sscanf(buf, "%*s %255s", path);
    (void)plen;
    char *cl = strcasestr(buf, "\r\nContent-Length: ");
    size_t want = cl ? strtoul(cl + 18, NULL, 10) : 0;
    size_t have = n - (size_t)(end + 4 - buf);
    while (have < want) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r <= 0)
            return -1;
        have += (size_t)r;
    }
    *body_len = want;
    return 0;
}

static void say(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char path[256], out[256];
    size_t blen;
    while (read_request(fd, path, sizeof(path), &blen) == 0) {
        if (!strcmp(path, "/hello")) {
            say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 43);
        } else if (!strcmp(path, "/len")) {
            int n = snprintf(out, sizeof(out), "%zu", blen);
            char head[128];
            int h = snprintf(head, sizeof(head), "HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n", n);
            say(fd, head, (size_t)h);
            say(fd, out, (size_t)n);
        } else if (!strcmp(path, "/hello-close")) {
            /* answers, then closes without saying so: the next request on
             * this pooled connection finds it gone */
            say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 43);
            break;
        } else if (!strcmp(path, "/eof-body")) {
            say(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-eof", 47);
            break;
        } else if (!strcmp(path, "/chunked")) {
            say(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 47);
            char chunk[4096 + 16];
            memset(chunk, 'c', sizeof(chunk));
            for (int i = 0; i < 256; i++) {
                say(fd, "1000\r\n", 6);
                say(fd, chunk, 4096);
                say(fd, "\r\n", 2);
            }
            say(fd, "0\r\n\r\n", 5);
        } else if (!strcmp(path, "/garbage")) {
            say(fd, "HTTP/9.9 nonsense\r\n\r\n", 21);
            break;
        } else if (!strcmp(path, "/silent")) {
            sleep(2);
            break;
        } else {
            say(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 45);
        }
    }
    close(fd);
    return NULL;
}

static void *acceptor(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        atomic_fetch_add(&accepted, 1);
        pthread_t t;
        pthread_create(&t, NULL, serve, (void *)(intptr_t)fd);
        pthread_detach(t);
    }
}

/* ---- the client side ---------------------------------------------------- */

static struct event_base *base;
static struct hc *cli;
static int in_call;              /* inside hc_request */
static int fired_inside;         /* a callback ran inside hc_request */
static int got_status, calls;
static char got_body[1 << 21];
static size_t got_len;
static char got_err[256];

static void done(void *arg, int status, const char *body, size_t len, const char *err)
{
    (void)arg;
    calls++;
    fired_inside |= in_call;
    got_status = status;
    got_len = len < sizeof(got_body) ? len : sizeof(got_body) - 1;
    memcpy(got_body, body, got_len);
    got_body[got_len] = '\0';
    snprintf(got_err, sizeof(got_err), "%s", err ? err : "");
    event_base_loopbreak(base);
}

static int call(const char *method, const char *url, const char *body, long timeout_ms)
{
    calls = 0;
    got_status = -1;
    in_call = 1;
    hc_request(cli, method, url, body, body ? strlen(body) : 0, "X-Test: 1", timeout_ms, done,
               NULL);
    in_call = 0;
    event_base_dispatch(base);
    return got_status;
}

static void test_url_split(void)
{
    char host[64];
    int p;
    const char *path;
    CHECK(hc_url_split("http://127.0.0.1:8080/a?b=c", host, sizeof(host), &p, &path) == 0 &&
          !strcmp(host, "127.0.0.1") && p == 8080 && !strcmp(path, "/a?b=c"));
    CHECK(hc_url_split("http://example.org", host, sizeof(host), &p, &path) == 0 &&
          !strcmp(host, "example.org") && p == 80 && !strcmp(path, "/"));
    CHECK(hc_url_split("http://[::1]:9/x", host, sizeof(host), &p, &path) == 0 &&
          !strcmp(host, "::1") && p == 9 && !strcmp(path, "/x"));
    CHECK(hc_url_split("http://h?q", host, sizeof(host), &p, &path) == 0 && !strcmp(path, "?q"));
    const char *bad[] = {"https://h/", "ftp://h", "http://", "http://:80/", "http://h:0/",
                         "http://h:65536/", "http://h:8x/", "http://u@h/", "http://[::1/",
                         "http://[::1]x/", "http://h/#frag", "http://h:/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(hc_url_split(bad[i], host, sizeof(host), &p, &path) == -1);
    CHECK(hc_url_split("http://a-rather-long-host-name-that-does-not-fit.example.org/", host, 16,
                       &p, &path) == -1);
}

int main(void)
{
    test_url_split();

    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    CHECK(bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lfd, 64) == 0);
    getsockname(lfd, (struct sockaddr *)&a, &al);
    port = ntohs(a.sin_port);
    pthread_t acc;
    pthread_create(&acc, NULL, acceptor, (void *)(intptr_t)lfd);

    base = event_base_new();
    cli = hc_new(base);
    char u[128];
#define URL(path) (snprintf(u, sizeof(u), "http://127.0.0.1:%d%s", port, path), u)

    /* an answer, then the same connection for the next requests */
    CHECK(call("GET", URL("/hello"), NULL, 5000) == 200 && !strcmp(got_body, "hello"));
    CHECK(call("PUT", URL("/len"), "twelve bytes", 5000) == 201 && !strcmp(got_body, "12"));
    CHECK(call("POST", URL("/len"), NULL, 5000) == 201 && !strcmp(got_body, "0"));
    CHECK(call("GET", URL("/nothing"), NULL, 5000) == 404 && got_len == 0);
    CHECK(atomic_load(&accepted) == 1);

    /* the peer closes a pooled connection: the next request still gets
     * its answer, on a new connection */
    CHECK(call("GET", URL("/hello-close"), NULL, 5000) == 200);
    CHECK(call("GET", URL("/hello"), NULL, 5000) == 200 && !strcmp(got_body, "hello"));
    CHECK(atomic_load(&accepted) == 2);

    /* bodies: chunked (1 MiB), and one that ends with the connection */
    CHECK(call("GET", URL("/chunked"), NULL, 5000) == 200 && got_len == (1u << 20) &&
          got_body[0] == 'c' && got_body[got_len - 1] == 'c');
    CHECK(call("GET", URL("/eof-body"), NULL, 5000) == 200 && !strcmp(got_body, "until-eof"));

    /* failures: status 0 with a reason, never from inside hc_request */
    CHECK(call("GET", URL("/garbage"), NULL, 5000) == 0 && got_err[0]);
    CHECK(call("GET", URL("/silent"), NULL, 300) == 0 && strstr(got_err, "timed out"));
    CHECK(call("GET", "https://127.0.0.1/", NULL, 5000) == 0 && strstr(got_err, "http://"));
    int free_port;
    {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t bl = sizeof(b);
        bind(s, (struct sockaddr *)&b, sizeof(b));
        getsockname(s, (struct sockaddr *)&b, &bl);
        free_port = ntohs(b.sin_port);
        close(s);            /* nobody listens there now */
    }
    snprintf(u, sizeof(u), "http://127.0.0.1:%d/", free_port);
    CHECK(call("GET", u, NULL, 5000) == 0 && got_err[0]);
    snprintf(u, sizeof(u), "http://localhost:%d/hello", port);
    CHECK(call("GET", u, NULL, 5000) == 200 && !strcmp(got_body, "hello"));
    CHECK(!fired_inside && calls == 1);

    /* hc_free with a request in flight: its callback never fires */
    calls = 0;
    hc_request(cli, "GET", URL("/silent"), NULL, 0, NULL, 5000, done, NULL);
    hc_free(cli);
    CHECK(calls == 0);
    event_base_free(base);
    shutdown(lfd, SHUT_RDWR);
    close(lfd);
    pthread_join(acc, NULL);
    return check_done("test_hc");
}
