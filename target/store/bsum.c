/*
 * bsum: per-block checksums (see bsum.h for the format).
 *
 * A writer hashes each leaf as its bytes pass, beside the whole-object
 * checksum it keeps anyway: the bytes are in the CPU's cache then, so the
 * second hash costs little next to the write. Folding keeps the record
 * small for any size (BSUM_MAX sums: 8 KiB) while a block stays a
 * power-of-two number of leaves, so a reader checks any block alone.
 */
#include "bsum.h"

#include <stdlib.h>
#include <string.h>

#include "objmeta.h"
#include "util.h"
#include "xxh.h"

_Static_assert(BSUM_MAX == OBJMETA_BS_MAX, "a record holds every sum kept");

void bsum_init(struct bsum *b)
{
    memset(b, 0, sizeof(*b));
    if (!(b->leaf = XXH3_createState()))
        abort();
    XXH3_64bits_reset(b->leaf);
}

static void push(struct bsum *b, uint64_t v)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->v = xrealloc(b->v, b->cap * sizeof(*b->v));
    }
    b->v[b->n++] = v;
}

void bsum_update(struct bsum *b, const void *d, size_t n)
{
    const char *p = d;
    while (n > 0) {
        size_t room = BSUM_LEAF - (size_t)(b->pos % BSUM_LEAF);
        size_t take = n < room ? n : room;
        XXH3_64bits_update(b->leaf, p, take);
        b->pos += take;
        p += take;
        n -= take;
        if (take == room) {
            push(b, XXH3_64bits_digest(b->leaf));
            XXH3_64bits_reset(b->leaf);
        }
    }
}

/* One level up: each pair's sums hashed into one, an odd last alone. */
static size_t fold(uint64_t *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i += 2) {
        unsigned char two[16];
        size_t w = i + 1 < n ? 2 : 1;
        for (size_t j = 0; j < w; j++)
            for (int x = 0; x < 8; x++)
                two[8 * j + (size_t)x] = (unsigned char)(v[i + j] >> (8 * x));
        v[k++] = XXH3_64bits(two, 8 * w);
    }
    return k;
}

void bsum_reset(struct bsum *b)
{
    b->n = 0;
    b->pos = 0;
    XXH3_64bits_reset(b->leaf);
}

void bsum_finish(struct bsum *b, struct objmeta *m)
{
    if (b->pos % BSUM_LEAF)
        push(b, XXH3_64bits_digest(b->leaf));
    m->nbs = 0;
    m->bs_level = 0;
    if (b->n > 1) {
        size_t n = b->n;
        while (n > BSUM_MAX) {
            n = fold(b->v, n);
            m->bs_level++;
        }
        memcpy(m->bs, b->v, n * sizeof(*b->v));
        m->nbs = (uint16_t)n;
    }
    bsum_reset(b);
}

void bsum_deinit(struct bsum *b)
{
    if (b->leaf)
        XXH3_freeState(b->leaf);
    free(b->v);
    memset(b, 0, sizeof(*b));
}

/* Are m's sums the ones its size calls for? A record whose sums do not
 * fit its size is checked whole, against its checksum. */
static int sums_fit(const struct objmeta *m)
{
    if (m->nbs < 2 || m->bs_level > 40)
        return 0;                /* one block is the whole object's checksum */
    uint64_t bsz = (uint64_t)BSUM_LEAF << m->bs_level;
    return (m->size + bsz - 1) / bsz == m->nbs;
}

uint64_t bsum_block_size(const struct objmeta *m)
{
    if (!sums_fit(m))
        return m->size ? m->size : 1;
    return (uint64_t)BSUM_LEAF << m->bs_level;
}

uint32_t bsum_blocks(const struct objmeta *m)
{
    return sums_fit(m) ? m->nbs : 1;
}

int bsum_kept(const struct objmeta *m)
{
    return sums_fit(m);
}

int bsum_leaves_good(const struct objmeta *m, uint32_t i, uint64_t *leaves, size_t nl)
{
    if (!sums_fit(m) || i >= m->nbs || !nl)
        return 0;
    for (int f = 0; f < m->bs_level; f++)
        nl = fold(leaves, nl);
    return nl == 1 && leaves[0] == m->bs[i];
}
