/*
 * atime: when objects of backed buckets were last read, for eviction
 * (atime.c). A warm GET records the time in memory only; the records are
 * written to the object's mountpath in batches ("a" + the store key
 * without its "o", a 4-byte little-endian time in seconds) by atime_flush,
 * so a restart keeps the order approximately. An object never read since
 * it was fetched counts from its commit (its metadata's mtime).
 *
 * Thread: any (sharded locks); atime_flush blocks (the I/O pool).
 */
#ifndef SHOAL_TARGET_ATIME_H
#define SHOAL_TARGET_ATIME_H

#include <stddef.h>
#include <stdint.h>

struct store;

/* The object with store key mkey was read now. */
void atime_touch(const char *mkey, size_t klen);
/* Its last read known in memory (seconds), 0 when none since the flush. */
uint32_t atime_mem(const char *mkey, size_t klen);
/* Write what is in memory to the store and forget it (the records keep
 * it); the I/O pool. */
void atime_flush(struct store *s);
/* The record of mkey in the store, 0 when none. */
uint32_t atime_stored(struct store *s, const char *mkey, size_t klen);

#endif
