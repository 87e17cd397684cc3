/*
 * md5mb: MD5 of several streams at once. MD5's 64 steps per block depend
 * on each other, so one stream hashes at about 700 MiB/s a core however
 * wide the machine's vectors are; several streams can share the core's
 * idle units and vectors, one stream to a 32-bit lane (8 or 16 in
 * AVX-512), for little more than the cost of one. S3's ETag of a single
 * PUT is the MD5 of its body, so a target taking several S3 PUTs at once
 * hashes their bodies together (md5_update_lanes) instead of one after
 * the other. Without AVX-512 two streams still share a core's units; the
 * results are the same everywhere.
 *
 * The state is plain memory: copy it, keep it in a struct, no free.
 */
#ifndef SHOAL_MD5MB_H
#define SHOAL_MD5MB_H

#include <stddef.h>
#include <stdint.h>

#define MD5_LANES 16

struct md5 {
    uint32_t h[4];
    uint64_t len;                /* bytes taken */
    unsigned char buf[64];       /* len % 64 of them, short of a block */
};

void md5_init(struct md5 *c);
void md5_update(struct md5 *c, const void *d, size_t n);
/* The digest of what c took; c is spent (md5_init to reuse it). */
void md5_final(struct md5 *c, unsigned char out[16]);

/*
 * c[i] takes the n[i] bytes at d[i], for i < count (any count; c[i]
 * distinct), as count md5_update calls would, with up to MD5_LANES of
 * them stepping together.
 */
void md5_update_lanes(struct md5 *const *c, const unsigned char *const *d, const size_t *n, int count);

/* 1 when md5_update_lanes has vector lanes on this CPU. */
int md5_lanes_wide(void);

#endif
