/*
 * ometa: an object's metadata record as stored in a mountpath's RocksDB.
 *
 * Encoding (little-endian): a format byte (1), then size, checksum
 * (xxh3-64), version, mtime (ns), uid (names this version's data file) as
 * u64 each, flags as u32, then optional fields as (tag u8, len u16, bytes)
 * so later fields can be added without rewriting old records. Unknown tags
 * are skipped on decode.
 */
#ifndef SHOAL_OMETA_H
#define SHOAL_OMETA_H

#include <stddef.h>
#include <stdint.h>

#define OMETA_ETAG_MAX 128

struct ometa {
    uint64_t size;
    uint64_t cksum;
    uint64_t version;
    uint64_t mtime_ns;
    uint64_t uid;
    uint32_t flags;
    char backend_etag[OMETA_ETAG_MAX + 1];  /* "" when none (tag 1) */
};

/* Encode into buf (at least OMETA_MAX bytes); returns the length. */
#define OMETA_MAX (1 + 5 * 8 + 4 + 3 + OMETA_ETAG_MAX)
size_t ometa_encode(const struct ometa *m, char *buf);
/* Returns 0, or -EINVAL for a truncated or unknown-format record. */
int ometa_decode(const char *buf, size_t len, struct ometa *m);

#endif
