/*
 * bsum: an object's per-block checksums (bsum.c), kept in its record so
 * that a read checks the blocks it sends, not the whole object.
 *
 * The bytes are cut into leaves of BSUM_LEAF bytes, each hashed with
 * xxh3-64. An object of up to BSUM_MAX leaves keeps one sum per leaf;
 * a larger one keeps one per block of 2^level leaves, the block's sum
 * being the leaves' sums folded level by level (each pair's two sums, as
 * 16 little-endian bytes, hashed into one; an odd last one alone), so a
 * writer that does not know the size ahead still ends with at most
 * BSUM_MAX sums. An object of one leaf or less keeps none: its
 * whole-object checksum is its one block's.
 */
#ifndef SHOAL_TARGET_BSUM_H
#define SHOAL_TARGET_BSUM_H

#include <stddef.h>
#include <stdint.h>

struct objmeta;

#define BSUM_LEAF (64u << 10)
#define BSUM_MAX 1024             /* sums kept with a record at most */

/* A writer's running block sums. */
struct bsum {
    void *leaf;                  /* XXH3 state of the leaf under way */
    uint64_t pos;                /* bytes taken */
    uint64_t *v;                 /* the leaves' sums so far */
    size_t n, cap;
};

void bsum_init(struct bsum *b);
void bsum_update(struct bsum *b, const void *d, size_t n);
/* Start over (a retry from the first byte). */
void bsum_reset(struct bsum *b);
/* The sums into m (m->bs_level, m->nbs, m->bs): none for one leaf or
 * less. Resets b for another object. */
void bsum_finish(struct bsum *b, struct objmeta *m);
void bsum_deinit(struct bsum *b);

/* m's verification blocks: their size and count. A record without sums
 * (one leaf, or written before sums were kept) has one block, the whole
 * object, checked against its checksum. */
uint64_t bsum_block_size(const struct objmeta *m);
uint32_t bsum_blocks(const struct objmeta *m);

/* Does m keep block sums (else it is checked whole, against its checksum)? */
int bsum_kept(const struct objmeta *m);
/* Do the sums of block i's nl leaves (each BSUM_LEAF bytes but the
 * object's last, hashed with xxh3-64) fold into the block's sum? Folds
 * leaves in place. */
int bsum_leaves_good(const struct objmeta *m, uint32_t i, uint64_t *leaves, size_t nl);

#endif
