/*
 * ecstream: erasure coding a body as it arrives (see ecstream.h).
 */
#include "ecstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"
#include "xxh.h"

#define CHUNK (256u << 10)       /* bytes of each slice coded at a time */
#define SLICES (EC_DATA_MAX + EC_PARITY_MAX)

struct ecstream {
    struct ec_code code;
    int fd;                      /* the work file, read back */
    int rc;
    uint64_t size;
    uint64_t got;                /* bytes fed (the loop's) */
    uint64_t upto;               /* bytes in when the turn running started */
    int busy;                    /* a turn runs (the loop's) */
    int over;                    /* more bytes than size were fed (the loop's) */
    uint64_t next;               /* slice offset of the next chunk to code (the turns') */
    uint8_t *buf[SLICES];        /* a chunk per slice, once coding starts */
    XXH3_state_t *xs[SLICES];
    struct ecstream_out out;
};

void ecstream_out_close(struct ecstream_out *o)
{
    for (int j = 0; j < o->p && o->d; j++)
        if (o->pfd[j] >= 0)
            close(o->pfd[j]);
    o->d = 0;
}

struct ecstream *ecstream_new(int fd, uint64_t uid, int d, int p, uint64_t size,
                              const int *pfd)
{
    struct ecstream *e = xcalloc(1, sizeof(*e));
    if (ec_code_init(&e->code, d, p)) {
        free(e);
        return NULL;
    }
    for (int j = 0; j < p; j++)
        e->out.pfd[j] = pfd[j];
    e->out.d = d;
    e->out.p = p;
    e->fd = fd;
    e->size = size;
    e->out.uid = uid;
    e->out.len = ec_slice_len(size, d);
    for (int i = 0; i < d + p; i++) {
        e->xs[i] = XXH3_createState();
        XXH3_64bits_reset(e->xs[i]);
    }
    return e;
}

/* The chunk of n bytes at slice offset k: the data slices' bytes from the
 * work file (zeros past the object's end), their parity to its files. */
static int code_chunk(struct ecstream *e, uint64_t k, size_t n)
{
    int d = e->out.d, p = e->out.p;
    uint64_t len = e->out.len;
    for (int i = 0; i < d; i++) {
        uint64_t start = (uint64_t)i * len + k;
        size_t avail = start >= e->size ? 0 : e->size - start < n ? (size_t)(e->size - start) : n;
        int rc = pread_full(e->fd, e->buf[i], avail, start);
        if (rc)
            return rc;
        memset(e->buf[i] + avail, 0, n - avail);
    }
    if (ec_encode(&e->code, n, (const uint8_t *const *)e->buf, e->buf + d))
        return -EINVAL;
    for (int j = 0; j < p; j++) {
        int rc = pwrite_full(e->out.pfd[j], e->buf[d + j], n, k);
        if (rc)
            return rc;
        XXH3_64bits_update(e->xs[d + j], e->buf[d + j], n);
    }
    return 0;
}

/* The bytes chunk k, n long, needs in: up to its end in the last data
 * slice, or the object's end. */
static uint64_t need(const struct ecstream *e, uint64_t k, size_t n)
{
    uint64_t last = (uint64_t)(e->out.d - 1) * e->out.len;
    return last + k + n < e->size ? last + k + n : e->size;
}

static size_t chunk_len(const struct ecstream *e, uint64_t k)
{
    return e->out.len - k < CHUNK ? (size_t)(e->out.len - k) : CHUNK;
}

/* Is the next chunk ready with upto bytes in? */
static int ready(const struct ecstream *e, uint64_t upto)
{
    return !e->rc && e->next < e->out.len && upto >= need(e, e->next, chunk_len(e, e->next));
}

/* Code every chunk whose bytes are all in with upto. */
static void code_upto(struct ecstream *e, uint64_t upto)
{
    while (ready(e, upto)) {
        size_t n = chunk_len(e, e->next);
        if (!e->buf[0])
            for (int i = 0; i < e->out.d + e->out.p; i++)
                e->buf[i] = xmalloc(CHUNK);
        e->rc = code_chunk(e, e->next, n);
        e->next += n;
    }
}

int ecstream_start(struct ecstream *e)
{
    if (e->busy || e->over || !ready(e, e->got))
        return 0;
    e->busy = 1;
    e->upto = e->got;
    return 1;
}

int ecstream_feed(struct ecstream *e, const void *buf, size_t n)
{
    if (e->over)
        return 0;
    if (n > e->size - e->got) {
        e->over = 1;             /* finish fails: not size bytes */
        return 0;
    }
    const uint8_t *b = buf;
    uint64_t len = e->out.len;
    while (n > 0) {          /* each data slice's checksum, from the bytes as they come */
        uint64_t i = e->got / len;
        size_t take = (i + 1) * len - e->got < n ? (size_t)((i + 1) * len - e->got) : n;
        XXH3_64bits_update(e->xs[i], b, take);
        b += take;
        n -= take;
        e->got += take;
    }
    return ecstream_start(e);
}

void ecstream_turn(struct ecstream *e)
{
    code_upto(e, e->upto);
}

void ecstream_turned(struct ecstream *e)
{
    e->busy = 0;
}

int ecstream_busy(const struct ecstream *e)
{
    return e->busy;
}

static void drop_buffers(struct ecstream *e)
{
    for (int i = 0; i < SLICES; i++) {
        free(e->buf[i]);
        e->buf[i] = NULL;
    }
}

int ecstream_finish(struct ecstream *e, struct ecstream_out *out)
{
    if (!e->rc && (e->over || e->got != e->size))
        e->rc = -EINVAL;
    code_upto(e, e->got);
    drop_buffers(e);
    if (e->rc) {
        ecstream_out_close(&e->out);
        return e->rc;
    }
    for (int i = 0; i < e->out.d + e->out.p; i++)
        e->out.sums[i] = XXH3_64bits_digest(e->xs[i]);
    *out = e->out;
    e->out.d = 0;                /* handed on */
    return 0;
}

void ecstream_free(struct ecstream *e)
{
    if (!e)
        return;
    ecstream_out_close(&e->out);
    drop_buffers(e);
    for (int i = 0; i < SLICES; i++)
        if (e->xs[i])
            XXH3_freeState(e->xs[i]);
    ec_code_free(&e->code);
    free(e);
}
