/* md5lane: streams written to files in random pieces, interleaved, hashed
 * on the loop (no hasher) and by the hasher thread; every digest against
 * OpenSSL's MD5 of the same bytes, a stream closed while the hasher holds
 * it, and a read error (a closed file) as the stream's error. */
#include <errno.h>
#include <event2/event.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "loopq.h"
#include "md5lane.h"

#define STREAMS 12
#define MAXLEN (3u << 20)

struct stream {
    struct md5lane l;
    int fd;
    unsigned char *data;
    size_t len, at;
    int finished;                /* md5lane_finish answered 0 */
    int waiting;                 /* ...answered 1: done() is to come */
    int dones;
};

static struct event_base *base;

static unsigned rnd(void)
{
    return (unsigned)random();
}

static void on_done(void *arg)
{
    struct stream *s = arg;
    s->dones++;
    s->waiting = 0;
}

/* Runs the loop until every stream is finished (or rounds run out). */
static void finish_all(struct stream *st, int n)
{
    for (int round = 0; round < 10000; round++) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            if (st[i].finished || st[i].waiting)
                continue;
            int rc = md5lane_finish(&st[i].l, st[i].len);
            CHECK(rc >= 0);
            if (rc == 0)
                st[i].finished = 1;
            else
                st[i].waiting = 1;
        }
        event_base_loop(base, EVLOOP_NONBLOCK);
        for (int i = 0; i < n; i++)
            left += !st[i].finished;
        if (!left)
            return;
        usleep(200);
    }
}

static void run(struct loopq *q)
{
    struct stream st[STREAMS];
    int n = 1 + (int)(rnd() % STREAMS);
    for (int i = 0; i < n; i++) {
        char path[] = "/tmp/shoal-md5lane-XXXXXX";
        st[i] = (struct stream){.fd = mkstemp(path)};
        CHECK(st[i].fd >= 0);
        unlink(path);
        st[i].len = rnd() % 4 ? rnd() % MAXLEN : rnd() % 5000;
        st[i].data = malloc(st[i].len + 1);
        for (size_t k = 0; k < st[i].len; k++)
            st[i].data[k] = (unsigned char)rnd();
        md5lane_open(&st[i].l, st[i].fd, q, on_done, &st[i]);
    }
    /* the bodies come in pieces, the streams taking turns */
    for (int turn = 0; turn < 100000; turn++) {
        int moved = 0;
        for (int i = 0; i < n; i++) {
            struct stream *s = &st[i];
            if (s->at == s->len)
                continue;
            size_t piece = 1 + rnd() % (200u << 10);
            if (piece > s->len - s->at)
                piece = s->len - s->at;
            CHECK(pwrite(s->fd, s->data + s->at, piece, (off_t)s->at) == (ssize_t)piece);
            s->at += piece;
            CHECK(md5lane_wrote(&s->l, s->at) == 0);
            moved = 1;
        }
        event_base_loop(base, EVLOOP_NONBLOCK);
        if (!moved)
            break;
    }
    finish_all(st, n);
    for (int i = 0; i < n; i++) {
        unsigned char got[16], want[16];
        unsigned int wl = 0;
        CHECK(st[i].finished && st[i].l.rc == 0 && st[i].l.off == st[i].len);
        md5_final(&st[i].l.st, got);
        EVP_Digest(st[i].data, st[i].len, want, &wl, EVP_md5(), NULL);
        CHECK(!memcmp(got, want, 16));
        CHECK(md5lane_close(&st[i].l) == 0);
        close(st[i].fd);
        free(st[i].data);
    }
}

/* A file that cannot be read back: the stream's rc, its digest never
 * claimed; the stream beside it is not harmed. */
static void read_error(struct loopq *q)
{
    struct stream a = {0}, b = {0};
    char p1[] = "/tmp/shoal-md5lane-XXXXXX", p2[] = "/tmp/shoal-md5lane-XXXXXX";
    a.fd = mkstemp(p1);
    b.fd = mkstemp(p2);
    unlink(p1);
    unlink(p2);
    static unsigned char buf[1 << 20];
    memset(buf, 7, sizeof(buf));
    CHECK(write(a.fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
    CHECK(write(b.fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
    md5lane_open(&a.l, a.fd, q, on_done, &a);
    md5lane_open(&b.l, b.fd, q, on_done, &b);
    close(a.fd);                 /* a's reads fail with EBADF */
    int ra = md5lane_finish(&a.l, sizeof(buf)), rb = md5lane_finish(&b.l, sizeof(buf));
    for (int i = 0; i < 2000 && ((ra > 0 && !a.dones) || (rb > 0 && !b.dones)); i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(500);
    }
    if (ra > 0)
        ra = md5lane_finish(&a.l, sizeof(buf));
    if (rb > 0)
        rb = md5lane_finish(&b.l, sizeof(buf));
    CHECK(ra == -EBADF);
    CHECK(md5lane_wrote(&a.l, sizeof(buf)) == -EBADF);
    CHECK(rb == 0 && b.l.off == sizeof(buf));
    unsigned char got[16], want[16];
    unsigned int wl = 0;
    md5_final(&b.l.st, got);
    EVP_Digest(buf, sizeof(buf), want, &wl, EVP_md5(), NULL);
    CHECK(!memcmp(got, want, 16));
    CHECK(md5lane_close(&a.l) == 0);
    CHECK(md5lane_close(&b.l) == 0);
    close(b.fd);
}

/* Closed while the hasher may hold it: -EBUSY means a done() comes, and
 * closing then succeeds; nothing is left on the hasher's list. */
static void close_held(struct loopq *q)
{
    static unsigned char buf[4 << 20];
    char path[] = "/tmp/shoal-md5lane-XXXXXX";
    struct stream s = {.fd = mkstemp(path)};
    unlink(path);
    CHECK(write(s.fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
    md5lane_open(&s.l, s.fd, q, on_done, &s);
    CHECK(md5lane_wrote(&s.l, sizeof(buf)) == 0);
    int rc = md5lane_close(&s.l);
    CHECK(rc == 0 || rc == -EBUSY);
    for (int i = 0; i < 2000 && rc; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        if (s.dones)
            rc = md5lane_close(&s.l);
        usleep(500);
    }
    CHECK(rc == 0);
    close(s.fd);
}

int main(void)
{
    srandom(20261207);
    base = event_base_new();
    struct loopq *q = loopq_new(base);
    for (int i = 0; i < 6; i++)
        run(q);                  /* no hasher: on the loop */
    read_error(q);
    CHECK(md5lane_start(1) == 0);
    for (int i = 0; i < 8; i++)
        run(q);                  /* the hasher's turns */
    read_error(q);
    for (int i = 0; i < 20; i++)
        close_held(q);
    md5lane_stop();
    loopq_free(q);
    event_base_free(base);
    return check_done("test_md5lane");
}
