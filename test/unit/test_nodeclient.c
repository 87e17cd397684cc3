/* Unit tests for common/nodeclient.c, the intra-cluster HTTP client, against a
 * small raw-socket server in this file (a thread per connection), so that
 * the server can misbehave on purpose: close idle connections, answer
 * late, answer garbage, end a body with the connection. */
#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "nodeclient.h"
#include "util.h"

static int port;
static atomic_int accepted;

/* Read one request head and its Content-Length body; the path into path. */
static uint32_t body_sum;        /* the last request body's bytes, added */

/* One byte of a body: from what came with the head, then the socket. */
static int body_byte(int fd, const char **pre, size_t *pre_n)
{
    unsigned char c;
    if (*pre_n) {
        (*pre_n)--;
        return (unsigned char)*(*pre)++;
    }
    return read(fd, &c, 1) == 1 ? c : -1;
}

/* A chunked body (its first pre_n bytes at pre), strictly framed: its
 * decoded length and byte sum. */
static int read_chunked(int fd, const char *pre, size_t pre_n, size_t *body_len)
{
    body_sum = 0;
    *body_len = 0;
    for (;;) {
        char line[32];
        size_t ln = 0;
        int c;
        while ((c = body_byte(fd, &pre, &pre_n)) != '\n') {
            if (c < 0 || ln + 1 >= sizeof(line))
                return -1;
            line[ln++] = (char)c;
        }
        if (ln == 0 || line[ln - 1] != '\r')
            return -1;
        line[ln - 1] = '\0';
        char *e;
        size_t size = strtoul(line, &e, 16);
        if (e == line || *e)
            return -1;
        for (size_t i = 0; i < size; i++) {
            if ((c = body_byte(fd, &pre, &pre_n)) < 0)
                return -1;
            body_sum += (unsigned)c;
        }
        *body_len += size;
        if (body_byte(fd, &pre, &pre_n) != '\r' || body_byte(fd, &pre, &pre_n) != '\n')
            return -1;
        if (size == 0)
            return 0;
    }
}

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
    if (strcasestr(buf, "\r\nExpect: 100-continue")) {
        if (!strcmp(path, "/early")) {   /* answered before any body */
            *body_len = 0;
            return 0;
        }
        const char go[] = "HTTP/1.1 100 Continue\r\n\r\n";
        /* /no-continue: a server that ignores Expect and waits for the body */
        if (strcmp(path, "/no-continue") && write(fd, go, sizeof(go) - 1) < 0)
            return -1;
    }
    size_t have = n - (size_t)(end + 4 - buf);
    if (strcasestr(buf, "\r\nTransfer-Encoding: chunked"))
        return read_chunked(fd, end + 4, have, body_len);
    body_sum = 0;
    for (char *b = end + 4; b < buf + n; b++)
        body_sum += (unsigned char)*b;
    while (have < want) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r <= 0)
            return -1;
        for (ssize_t i = 0; i < r; i++)
            body_sum += (unsigned char)buf[i];
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

/* A string literal, without its NUL. */
#define SAY(fd, lit) say((fd), (lit), sizeof(lit) - 1)

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char path[256], out[256];
    size_t blen;
    while (read_request(fd, path, sizeof(path), &blen) == 0) {
        if (!strcmp(path, "/hello")) {
            SAY(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        } else if (!strcmp(path, "/len")) {
            int n = snprintf(out, sizeof(out), "%zu", blen);
            char head[128];
            int h = snprintf(head, sizeof(head),
                             "HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n", n);
            say(fd, head, (size_t)h);
            say(fd, out, (size_t)n);
        } else if (!strcmp(path, "/sum") || !strcmp(path, "/no-continue")) {
            int n = snprintf(out, sizeof(out), "%zu %u", blen, body_sum);
            char head[128];
            int h =
                snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", n);
            say(fd, head, (size_t)h);
            say(fd, out, (size_t)n);
        } else if (!strcmp(path, "/hdrs")) {
            const char a[] = "HTTP/1.1 200 OK\r\nX-One: 1\r\nX-Empty:\r\nx-two:  two words  \r\n"
                             "Content-Length: 2\r\n\r\nok";
            say(fd, a, sizeof(a) - 1);
        } else if (!strcmp(path, "/big")) {
            static char big[8 << 20];
            for (size_t i = 0; i < sizeof(big); i++)
                big[i] = (char)(i * 7);
            const char h[] = "HTTP/1.1 200 OK\r\nContent-Length: 8388608\r\n\r\n";
            say(fd, h, sizeof(h) - 1);
            say(fd, big, sizeof(big));
        } else if (!strcmp(path, "/early")) {
            SAY(fd, "HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno");
            break;               /* the body never came: the connection ends */
        } else if (!strcmp(path, "/hello-close")) {
            /* answers, then closes without saying so: the next request on
             * this pooled connection finds it gone */
            SAY(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
            break;
        } else if (!strcmp(path, "/eof-body")) {
            SAY(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-eof");
            break;
        } else if (!strcmp(path, "/chunked")) {
            SAY(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            char chunk[4096 + 16];
            memset(chunk, 'c', sizeof(chunk));
            for (int i = 0; i < 256; i++) {
                SAY(fd, "1000\r\n");
                say(fd, chunk, 4096);
                SAY(fd, "\r\n");
            }
            SAY(fd, "0\r\n\r\n");
        } else if (!strcmp(path, "/garbage")) {
            SAY(fd, "HTTP/9.9 nonsense\r\n\r\n");
            break;
        } else if (!strcmp(path, "/silent")) {
            sleep(2);
            break;
        } else {
            SAY(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
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

#define URL(path) (snprintf(u, sizeof(u), "http://127.0.0.1:%d%s", port, path), u)

static struct event_base *base;
static struct nodeclient *cli;
static int in_call;              /* inside nodeclient_request */
static int fired_inside;         /* a callback ran inside nodeclient_request */
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
    nodeclient_request(cli, method, url, body, body ? strlen(body) : 0, "X-Test: 1", timeout_ms,
                       done, NULL);
    in_call = 0;
    event_base_dispatch(base);
    return got_status;
}


/* ---- streaming ---------------------------------------------------------- */

struct stream {
    int status, done, headers;
    char err[256];
    uint64_t got;
    uint32_t sum;
    int pauses, bad_order;
    uint64_t while_paused;       /* bytes delivered while paused */
    int paused;
    struct nodeclient_xfer *x;
    /* upload */
    uint64_t up_total, up_given;
    uint32_t up_sum;
    int up_pause_once, up_fail;
    int stop_at_headers;
    enum nodeclient_fail fail;
    int reached;                 /* nodeclient_reached, in on_done */
    char text[64];               /* the answer's first bytes */
};

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct stream *st = arg;
    (void)fd;
    (void)what;
    st->paused = 0;
    if (!st->done)               /* x lives until on_done */
        nodeclient_resume(st->x);
}

static void resume_up_cb(evutil_socket_t fd, short what, void *arg)
{
    struct stream *st = arg;
    (void)fd;
    (void)what;
    if (!st->done)
        nodeclient_resume_upload(st->x);
}

static int st_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct stream *st = arg;
    st->headers = status;
    st->x = x;
    return st->stop_at_headers ? -1 : 0;
}

static int st_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct stream *st = arg;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != (char)((st->got + i) * 7))
            st->bad_order = 1;
        if (st->got + i < sizeof(st->text) - 1)
            st->text[st->got + i] = p[i];
    }
    if (st->paused)
        st->while_paused += n;
    st->got += n;
    /* pause every MiB, resumed 20 ms later */
    if (!st->paused && st->got / (1 << 20) > (uint64_t)st->pauses) {
        st->pauses++;
        st->paused = 1;
        st->x = x;
        nodeclient_pause(x);
        struct timeval tv = {0, 20000};
        event_base_once(base, -1, EV_TIMEOUT, resume_cb, st, &tv);
    }
    return 0;
}

static ssize_t st_read(void *arg, char *buf, size_t n)
{
    struct stream *st = arg;
    if (st->up_fail && st->up_given > 0)
        return -1;
    if (st->up_pause_once) {
        st->up_pause_once = 0;
        struct timeval tv = {0, 20000};
        event_base_once(base, -1, EV_TIMEOUT, resume_up_cb, st, &tv);
        return NODECLIENT_READ_PAUSE;
    }
    size_t k = n < 10000 ? n : 10000;
    if (k > st->up_total - st->up_given)
        k = (size_t)(st->up_total - st->up_given);
    for (size_t i = 0; i < k; i++) {
        buf[i] = (char)((st->up_given + i) % 251);
        st->up_sum += (unsigned char)buf[i];
    }
    st->up_given += k;
    return (ssize_t)k;
}

static void st_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct stream *st = arg;
    (void)x;
    st->status = status;
    st->fail = nodeclient_failure(x);
    st->reached = nodeclient_reached(x);
    st->done++;
    snprintf(st->err, sizeof(st->err), "%s", err ? err : "");
    event_base_loopbreak(base);
}

static const struct nodeclient_ops st_ops = {
    .on_headers = st_headers,
    .on_data = st_data,
    .on_read = st_read,
    .on_done = st_done,
};

static void stream_run(struct stream *st, const char *method, const char *url, int64_t up)
{
    const char *h[] = {"X-Stream: yes"};
    st->x = nodeclient_start(cli, method, url, h, 1, up, 10000, &st_ops, st);
    CHECK(st->done == 0);
    event_base_dispatch(base);
}

static int hdr_checked;

static int hdr_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    (void)arg;
    const char *v;
    hdr_checked = status == 200 && nodeclient_header_count(x) == 4 &&
                  !strcmp(nodeclient_header(x, "x-one"), "1") &&
                  !strcmp(nodeclient_header(x, "X-EMPTY"), "") &&
                  !strcmp(nodeclient_header(x, "X-Two"), "two words") &&
                  !nodeclient_header(x, "x-none") &&
                  !strcmp(nodeclient_header_at(x, 0, &v), "X-One") && !strcmp(v, "1");
    return 0;
}

static const struct nodeclient_ops hdr_ops = {
    .on_headers = hdr_headers,
    .on_done = st_done,
};

static void test_streaming(void)
{
    char u[128];
    /* a download paused every MiB: every byte, in order, and nothing
     * much delivered while paused */
    struct stream a = {0};
    stream_run(&a, "GET", URL("/big"), -1);
    CHECK(a.status == 200 && a.done == 1 && a.got == (8u << 20) && !a.bad_order);
    CHECK(a.pauses >= 7 && a.while_paused <= 8 * 262144);

    /* an upload whose source waits once, in pieces of 10000 bytes */
    struct stream b = {.up_total = 3u << 20, .up_pause_once = 1};
    stream_run(&b, "PUT", URL("/sum"), (int64_t)b.up_total);
    char want[64];
    snprintf(want, sizeof(want), "%u %u", 3u << 20, b.up_sum);
    CHECK(b.status == 200 && b.up_given == b.up_total && b.got == strlen(want));

    /* the answer's headers, trimmed, by name and by index */
    struct stream c2 = {0};
    nodeclient_start(cli, "GET", URL("/hdrs"), NULL, 0, -1, 5000, &hdr_ops, &c2);
    event_base_dispatch(base);
    CHECK(c2.status == 200 && hdr_checked);

    /* a body of no known length, sent chunked, its source waiting once */
    struct stream ch = {.up_total = (1u << 20) + 3, .up_pause_once = 1};
    stream_run(&ch, "PUT", URL("/sum"), NODECLIENT_UP_CHUNKED);
    snprintf(want, sizeof(want), "%u %u", (1u << 20) + 3, ch.up_sum);
    CHECK(ch.status == 200 && ch.up_given == ch.up_total && ch.got == strlen(want));
    CHECK(!strcmp(ch.text, want));
    struct stream ch0 = {.up_total = 0};   /* an empty one: only the last chunk */
    stream_run(&ch0, "PUT", URL("/sum"), NODECLIENT_UP_CHUNKED);
    CHECK(ch0.status == 200 && !strcmp(ch0.text, "0 0"));

    /* an upload source that fails, and an on_headers that stops */
    struct stream d = {.up_total = 1u << 20, .up_fail = 1};
    stream_run(&d, "PUT", URL("/sum"), (int64_t)d.up_total);
    CHECK(d.status == 0 && d.done == 1 && strstr(d.err, "upload"));
    struct stream e = {.stop_at_headers = 1};
    stream_run(&e, "GET", URL("/hello"), -1);
    CHECK(e.status == 0 && e.done == 1 && strstr(e.err, "cancelled"));
    /* the client still works after both */
    CHECK(call("GET", URL("/hello"), NULL, 5000) == 200 && !strcmp(got_body, "hello"));
}

/* ---- taking a body's socket --------------------------------------------- */

struct take {
    int taken, end_whole, bad;
    uint64_t got;
    struct stream st;            /* on_data and on_done land here */
};

static int take_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    (void)arg;
    (void)x;
    return status == 200 ? NODECLIENT_TAKE_BODY : 0;
}

static int take_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct take *t = arg;
    (void)x;
    (void)p;
    t->st.got += n;
    return 0;
}

static void take_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct take *t = arg;
    st_done(&t->st, x, status, err);
}

/* The caller moves the body itself: here, plain reads of the socket,
 * checking /big's byte pattern. */
static void take_taken(void *arg, struct nodeclient_body *b)
{
    struct take *t = arg;
    t->taken++;
    for (size_t i = 0; i < b->pre_len; i++)
        t->bad |= b->pre[i] != (char)(i * 7);
    t->got = b->pre_len;
    uint64_t want = b->pre_len + b->left;
    static char buf[65536];
    for (int spins = 0; t->end_whole && t->got < want && spins < 100000;) {
        size_t room = want - t->got < sizeof(buf) ? (size_t)(want - t->got) : sizeof(buf);
        ssize_t n = read(b->fd, buf, room);
        if (n <= 0) {
            spins++;
            usleep(100);
            continue;
        }
        for (ssize_t i = 0; i < n; i++)
            t->bad |= buf[i] != (char)((t->got + (uint64_t)i) * 7);
        t->got += (uint64_t)n;
    }
    nodeclient_body_end(b, t->end_whole);
    event_base_loopbreak(base);
}

static const struct nodeclient_ops take_ops = {
    .on_headers = take_headers,
    .on_data = take_data,
    .on_done = take_done,
    .on_taken = take_taken,
};

/* NODECLIENT_TAKE_BODY: a length-delimited body is handed over as the socket,
 * which returns to the pool when the whole body was read (and not when it
 * was not); a chunked body still comes as pieces. A client of its own, so
 * that its pool starts empty. */
static void test_take(void)
{
    char u[128];
    struct nodeclient *saved = cli;
    cli = nodeclient_new(base);
    int acc0 = atomic_load(&accepted);
    struct take t = {.end_whole = 1};
    nodeclient_start(cli, "GET", URL("/big"), NULL, 0, -1, 10000, &take_ops, &t);
    event_base_dispatch(base);
    CHECK(t.taken == 1 && t.got == (8u << 20) && !t.bad && t.st.done == 0);
    CHECK(call("GET", URL("/hello"), NULL, 5000) == 200 && !strcmp(got_body, "hello"));
    CHECK(atomic_load(&accepted) == acc0 + 1);   /* the taken socket, pooled again */

    struct take c = {.end_whole = 1};
    nodeclient_start(cli, "GET", URL("/chunked"), NULL, 0, -1, 10000, &take_ops, &c);
    event_base_dispatch(base);
    CHECK(c.taken == 0 && c.st.done == 1 && c.st.status == 200 && c.st.got == (1u << 20));

    struct take h = {.end_whole = 0};            /* a body left unread */
    nodeclient_start(cli, "GET", URL("/big"), NULL, 0, -1, 10000, &take_ops, &h);
    event_base_dispatch(base);
    CHECK(h.taken == 1);
    int acc1 = atomic_load(&accepted);
    CHECK(call("GET", URL("/hello"), NULL, 5000) == 200 && !strcmp(got_body, "hello"));
    CHECK(atomic_load(&accepted) == acc1 + 1);   /* the unfinished one was closed */
    nodeclient_free(cli);
    cli = saved;
}

/* ---- an upload written by the caller into the socket ------------------ */

struct sock_up {
    struct stream st;            /* first: st_done takes it */
    int handed;
    uint64_t given, total;
    uint32_t sum;
    char answer[64];
    size_t alen;
};

static void su_fill(struct sock_up *u, char *buf, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        buf[i] = (char)((u->given + i) % 251);
        u->sum += (unsigned char)buf[i];
    }
    u->given += k;
}

/* The first 1000 bytes through nodeclient, the rest by the caller. */
static ssize_t su_read(void *arg, char *buf, size_t n)
{
    struct sock_up *u = arg;
    if (u->given >= 1000)
        return NODECLIENT_READ_SOCKET;
    size_t k = n < 1000 - u->given ? n : (size_t)(1000 - u->given);
    su_fill(u, buf, k);
    return (ssize_t)k;
}

static void su_socket(void *arg, struct nodeclient_xfer *x, int fd)
{
    struct sock_up *u = arg;
    static char buf[65536];
    u->handed++;
    for (int spins = 0; u->given < u->total && spins < 100000;) {
        size_t k = u->total - u->given < sizeof(buf) ? (size_t)(u->total - u->given) : sizeof(buf);
        uint32_t sum0 = u->sum;
        uint64_t at = u->given;
        su_fill(u, buf, k);
        ssize_t w = write(fd, buf, k);
        if (w < (ssize_t)k) {    /* take back what did not go */
            u->given = at;
            u->sum = sum0;
            if (w > 0)
                su_fill(u, buf, (size_t)w);
            spins++;
            usleep(100);
        }
    }
    nodeclient_upload_moved(x, u->given == u->total);
}

static int su_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct sock_up *u = arg;
    (void)x;
    if (u->alen + n < sizeof(u->answer)) {
        memcpy(u->answer + u->alen, p, n);
        u->alen += n;
    }
    return 0;
}

static const struct nodeclient_ops su_ops = {
    .on_data = su_data,
    .on_read = su_read,
    .on_done = st_done,
    .on_socket = su_socket,
};

/* NODECLIENT_READ_SOCKET: the upload's rest goes straight into the socket, and
 * the answer counts every byte of it */
static void test_socket_upload(void)
{
    char u[128], want[64];
    struct sock_up up = {.total = 3u << 20};
    nodeclient_start(cli, "PUT", URL("/sum"), NULL, 0, (int64_t)up.total, 10000, &su_ops, &up);
    event_base_dispatch(base);
    snprintf(want, sizeof(want), "%u %u", 3u << 20, up.sum);
    CHECK(up.st.status == 200 && up.handed == 1 && !strcmp(up.answer, want));
    CHECK(call("GET", URL("/hello"), NULL, 5000) == 200 && !strcmp(got_body, "hello"));
}

/* nodeclient_start_mem: a body from memory, by reference; with Expect:
 * 100-continue it waits for the 100, and an early final answer means it is
 * never sent */
static void test_mem_body(void)
{
    char u[128], want[64];
    static char body[(2u << 20) + 3];
    uint32_t sum = 0;
    for (size_t i = 0; i < sizeof(body); i++) {
        body[i] = (char)(i % 251);
        sum += (unsigned char)body[i];
    }
    snprintf(want, sizeof(want), "%zu %u", sizeof(body), sum);
    const char *expect[] = {"Expect: 100-continue"};
    for (int e = 0; e < 2; e++) {
        struct sock_up up = {0};
        nodeclient_start_mem(cli, "PUT", URL("/sum"), expect, e, body, sizeof(body), 10000, &su_ops,
                             &up);
        event_base_dispatch(base);
        CHECK(up.st.status == 200 && !strcmp(up.answer, want));
    }
    /* a server that never says 100 gets the body after a second anyway */
    struct sock_up quiet = {0};
    nodeclient_start_mem(cli, "PUT", URL("/no-continue"), expect, 1, body, sizeof(body), 10000,
                         &su_ops, &quiet);
    event_base_dispatch(base);
    CHECK(quiet.st.status == 200 && !strcmp(quiet.answer, want));
    struct sock_up early = {0};
    nodeclient_start_mem(cli, "PUT", URL("/early"), expect, 1, body, sizeof(body), 10000, &su_ops,
                         &early);
    event_base_dispatch(base);
    CHECK(early.st.status == 403 && !strcmp(early.answer, "no"));
    CHECK(call("GET", URL("/hello"), NULL, 5000) == 200 && !strcmp(got_body, "hello"));
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);    /* as the daemons: a closed peer is an error, not a signal */

    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    CHECK(bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lfd, 64) == 0);
    getsockname(lfd, (struct sockaddr *)&a, &al);
    port = ntohs(a.sin_port);
    pthread_t acc;
    pthread_create(&acc, NULL, acceptor, (void *)(intptr_t)lfd);

    base = event_base_new();
    cli = nodeclient_new(base);
    char u[128];

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

    /* failures: status 0 with a reason, never from inside nodeclient_request */
    CHECK(call("GET", URL("/garbage"), NULL, 5000) == 0 && got_err[0]);
    CHECK(call("GET", URL("/silent"), NULL, 300) == 0 && strstr(got_err, "timed out"));
    CHECK(call("GET", "ftp://127.0.0.1/", NULL, 5000) == 0 && strstr(got_err, "http://"));
    /* https with no client context (tls_set_client) fails, never goes plain */
    CHECK(call("GET", "https://127.0.0.1/", NULL, 5000) == 0 &&
          strstr(got_err, "no TLS client context"));
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
    /* why a transfer failed: no connection, no answer in time, a broken one */
    struct stream f1 = {0}, f2 = {0}, f3 = {0};
    stream_run(&f1, "GET", u, -1);
    CHECK(f1.status == 0 && f1.fail == NODECLIENT_FAIL_CONNECT && !f1.reached);
    nodeclient_start(cli, "GET", URL("/silent"), NULL, 0, -1, 300, &st_ops, &f2);
    event_base_dispatch(base);
    CHECK(f2.status == 0 && f2.fail == NODECLIENT_FAIL_TIMEOUT &&
          f2.reached); /* taken, no answer */
    stream_run(&f3, "GET", URL("/garbage"), -1);
    CHECK(f3.status == 0 && f3.fail == NODECLIENT_FAIL_PROTOCOL);
    snprintf(u, sizeof(u), "http://localhost:%d/hello", port);
    CHECK(call("GET", u, NULL, 5000) == 200 && !strcmp(got_body, "hello"));
    CHECK(!fired_inside && calls == 1);
    test_take();
    test_socket_upload();
    test_mem_body();

    test_streaming();

    /* nodeclient_free with a request in flight: its callback never fires */
    calls = 0;
    nodeclient_request(cli, "GET", URL("/silent"), NULL, 0, NULL, 5000, done, NULL);
    nodeclient_free(cli);
    CHECK(calls == 0);
    event_base_free(base);
    shutdown(lfd, SHUT_RDWR);
    close(lfd);
    pthread_join(acc, NULL);
    return check_done("test_hc");
}
