/* libFuzzer target for the archive index builder (common/archidx.c): the
 * input's first byte picks the kind (.tar, .tar.gz, .tar.lz4, .zip), the
 * rest is the archive, as a shard's bytes reach a target. The harness
 * checks what a read of a member relies on: a built index finds each of
 * its members by name, every direct member's data lies inside the file,
 * no name breaks the rules (archidx_name_ok), and the record's encoding
 * decodes to the same index; sequential reading ends without a crash
 * within the decompression bound. Built and run by `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "archidx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem {
    const uint8_t *p;
    size_t n;
};

static ssize_t mem_pread(void *arg, void *buf, size_t n, uint64_t off)
{
    struct mem *m = arg;
    if (off >= m->n)
        return 0;
    size_t k = m->n - off < n ? m->n - off : n;
    memcpy(buf, m->p + off, k);
    return (ssize_t)k;
}

static void sequential(int kind, struct mem *m)
{
    char err[256];
    struct archidx_rd *r = archidx_rd_open(kind, mem_pread, m, m->n, err, sizeof(err));
    if (!r)
        return;
    const char *name;
    size_t len;
    uint64_t sz, total = 0;
    static char buf[1 << 16];
    for (int i = 0; i < 1000 && archidx_rd_next(r, &name, &len, &sz, err, sizeof(err)) == 1; i++) {
        if (!archidx_name_ok(name, len))
            abort();
        ssize_t k;
        while ((k = archidx_rd_data(r, buf, sizeof(buf), err, sizeof(err))) > 0)
            if ((total += (uint64_t)k) > (uint64_t)m->n * ARCHIDX_RATIO_MAX + (2u << 20))
                abort();         /* past the bound the reader promises */
        if (k < 0)
            break;
    }
    archidx_rd_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int kind = ARCHIDX_TAR + data[0] % 4;
    struct mem m = {data + 1, size - 1};
    struct archidx x;
    char err[256];
    if (archidx_build(&x, kind, mem_pread, &m, m.n, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < x.n; i++) {
            const struct archidx_member *e = &x.m[i];
            if (!archidx_name_ok(e->name, e->name_len) ||
                archidx_find(&x, e->name, e->name_len) != e)
                abort();
            if (e->off != ARCHIDX_SEQ && (e->off > m.n || e->size > m.n - e->off))
                abort();
        }
        size_t el;
        char *enc = archidx_encode(&x, &el);
        struct archidx y;
        if (archidx_decode(&y, enc, el) || y.n != x.n)
            abort();
        archidx_free(&y);
        free(enc);
        archidx_free(&x);
    }
    sequential(kind, &m);
    struct archidx z;            /* the record's decoder over the same bytes */
    if (!archidx_decode(&z, (const char *)m.p, m.n))
        archidx_free(&z);
    return 0;
}
