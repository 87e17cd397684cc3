/* ecstream: a body fed in pieces of any size (empty ones too), its coding
 * turns run at once or late, for every shape of object (shorter than d, a
 * last data slice short or empty, several chunks per slice), yields the
 * same parity files and slice checksums as coding the whole object at
 * once; a body longer or shorter than announced fails, and so does a
 * parity file that cannot be written, the parity files closed either way
 * (and when the coder is dropped unfinished); the coding starts before
 * the body's end for an object of many chunks. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ec.h"
#include "ecstream.h"
#include "xxh.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int tmp_fd(void)
{
    char path[] = "/tmp/shoal-ecstream-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    return fd;
}

/* Read all of fd's n bytes from 0. */
static uint8_t *slurp(int fd, size_t n)
{
    uint8_t *b = calloc(1, n ? n : 1);
    CHECK(pread(fd, b, n, 0) == (ssize_t)n);
    return b;
}

/* Write and feed obj in random pieces (some empty), running the coding
 * turns feed asks for either at once or a few pieces later, as a busy
 * I/O pool would; the last turn asked for ends before finish. */
static void feed_all(struct ecstream *e, int fd, const uint8_t *obj, uint64_t size)
{
    int lag = 0;
    for (uint64_t at = 0; at < size;) {
        uint64_t n = rnd() % 8 ? 1 + rnd() % 300000 : 0;
        if (n > size - at)
            n = size - at;
        CHECK(pwrite(fd, obj + at, n, (off_t)at) == (ssize_t)n);
        if (ecstream_feed(e, obj + at, n)) {
            CHECK(ecstream_busy(e) && !lag);
            lag = 1 + (int)(rnd() % 3);
        } else if (lag && --lag == 0) {
            ecstream_turn(e);
            ecstream_turned(e);
            if (ecstream_start(e))
                lag = 1;
        }
        at += n;
    }
    if (lag) {
        ecstream_turn(e);
        ecstream_turned(e);
    }
    CHECK(!ecstream_busy(e));
}

/* Is fd open? */
static int is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

/* Feed size random bytes in random pieces; compare with coding at once. */
static void try_shape(int d, int p, uint64_t size)
{
    int fd = tmp_fd(), pfd[EC_PARITY_MAX];
    for (int j = 0; j < p; j++)
        pfd[j] = tmp_fd();
    uint8_t *obj = malloc(size ? size : 1);
    for (uint64_t b = 0; b < size; b++)
        obj[b] = (uint8_t)rnd();
    struct ecstream *e = ecstream_new(fd, 42, d, p, size, pfd);
    CHECK(e != NULL);
    feed_all(e, fd, obj, size);
    struct ecstream_out out;
    CHECK(ecstream_finish(e, &out) == 0);
    size_t len = ec_slice_len(size, d);
    CHECK(out.uid == 42 && out.d == d && out.p == p && out.len == len);
    /* the reference: every slice whole, coded at once */
    uint8_t *s[EC_DATA_MAX + EC_PARITY_MAX];
    for (int i = 0; i < d + p; i++)
        s[i] = calloc(1, len);
    for (int i = 0; i < d; i++) {
        uint64_t start = (uint64_t)i * len;
        size_t have = start >= size ? 0 : size - start < len ? size - start : len;
        memcpy(s[i], obj + start, have);
        CHECK(out.sums[i] == XXH3_64bits(s[i], have));
    }
    struct ec_code c;
    CHECK(ec_code_init(&c, d, p) == 0);
    CHECK(ec_encode(&c, len, (const uint8_t *const *)s, s + d) == 0);
    for (int j = 0; j < p; j++) {
        uint8_t *got = slurp(out.pfd[j], len);
        CHECK(memcmp(got, s[d + j], len) == 0);
        CHECK(out.sums[d + j] == XXH3_64bits(s[d + j], len));
        free(got);
    }
    ec_code_free(&c);
    ecstream_out_close(&out);
    CHECK(out.d == 0);
    ecstream_free(e);
    for (int i = 0; i < d + p; i++)
        free(s[i]);
    free(obj);
    close(fd);
}

/* A body of the wrong length, shorter, or longer after some chunks were
 * coded, is refused at finish, and the parity files are closed. */
static void try_wrong_length(void)
{
    uint64_t size = 3u << 20;
    uint8_t *b = calloc(1, size + 1);
    for (int longer = 0; longer < 2; longer++) {
        int fd = tmp_fd(), pfd[1] = {tmp_fd()};
        struct ecstream *e = ecstream_new(fd, 1, 2, 1, size, pfd);
        feed_all(e, fd, b, size - 1);
        if (longer) {
            CHECK(lseek(pfd[0], 0, SEEK_END) > 0);   /* some coded already */
            CHECK(ecstream_feed(e, b, 2) == 0);
        }
        struct ecstream_out out = {0};
        CHECK(ecstream_finish(e, &out) == -EINVAL);
        CHECK(out.d == 0 && !is_open(pfd[0]));
        ecstream_free(e);
        close(fd);
    }
    free(b);
    int pfd[1] = {-1};
    CHECK(ecstream_new(0, 1, 0, 1, 10, pfd) == NULL);
    CHECK(ecstream_new(0, 1, 2, EC_PARITY_MAX + 1, 10, pfd) == NULL);
}

/* A parity file that cannot be written fails the coding; a coder freed
 * without finishing closes its parity files. */
static void try_failures(void)
{
    char path[] = "/tmp/shoal-ecstream-XXXXXX";
    int w = mkstemp(path);
    int ro = open(path, O_RDONLY);
    unlink(path);
    close(w);
    int fd = tmp_fd(), pfd[2] = {tmp_fd(), ro};
    uint64_t size = 1u << 20;
    uint8_t *b = calloc(1, size);
    struct ecstream *e = ecstream_new(fd, 1, 2, 2, size, pfd);
    feed_all(e, fd, b, size);
    struct ecstream_out out = {0};
    CHECK(ecstream_finish(e, &out) == -EBADF);
    CHECK(!is_open(pfd[0]) && !is_open(ro));
    ecstream_free(e);
    int more[1] = {tmp_fd()};
    e = ecstream_new(fd, 1, 2, 1, size, more);
    feed_all(e, fd, b, size / 2);
    ecstream_free(e);
    CHECK(!is_open(more[0]));
    free(b);
    close(fd);
}

/* Parity is written while the body is still arriving. */
static void try_early(void)
{
    int fd = tmp_fd(), pfd[2] = {tmp_fd(), tmp_fd()};
    uint64_t size = 8u << 20;   /* 4 MiB slices: many chunks each */
    struct ecstream *e = ecstream_new(fd, 7, 2, 2, size, pfd);
    uint8_t *b = calloc(1, size);
    uint64_t most = size - (1u << 20);
    feed_all(e, fd, b, most);
    CHECK(lseek(pfd[0], 0, SEEK_END) >= (off_t)(2u << 20));   /* 3 of 4 MiB coded */
    CHECK(pwrite(fd, b + most, size - most, (off_t)most) == (ssize_t)(size - most));
    if (ecstream_feed(e, b + most, size - most)) {
        ecstream_turn(e);
        ecstream_turned(e);
    }
    struct ecstream_out out;
    CHECK(ecstream_finish(e, &out) == 0);
    CHECK(lseek(out.pfd[1], 0, SEEK_END) == (off_t)(4u << 20));
    ecstream_out_close(&out);
    ecstream_free(e);
    free(b);
    close(fd);
}

int main(void)
{
    static const struct { int d, p; uint64_t size; } shapes[] = {
        {2, 1, 1},        {2, 1, 100},     {4, 2, 5},          {4, 2, 129},
        {3, 1, 262144},   {2, 1, 1 << 20}, {2, 1, (1 << 20) + 1}, {4, 2, 3000000},
        {6, 3, 5000000},  {16, 8, 9999999}, {1, 1, 700000},     {5, 4, 64 * 5 - 1},
    };
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        try_shape(shapes[i].d, shapes[i].p, shapes[i].size);
    try_wrong_length();
    try_failures();
    try_early();
    return check_done("test_ecstream");
}
