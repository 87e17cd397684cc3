/*
 * hlc: object versions that order across nodes. A version is a hybrid
 * logical clock reading with the writing node's tag below it:
 *
 *   bits 63..20  milliseconds since the Unix epoch (44 bits: year 2527)
 *   bits 19..8   a counter for readings within one millisecond
 *   bits  7..0   the writing node's tag (hlc_init), the tie-break
 *
 * Readings of one process only grow, and never fall behind a version it
 * has seen (hlc_observe), so a write that follows another anywhere in the
 * cluster gets the larger version, clocks a little apart or not. Versions
 * of records written before versions were clocks (1, 2, ...) are smaller
 * than any reading.
 *
 * Thread: any (a lock-free counter).
 */
#ifndef SHOAL_HLC_H
#define SHOAL_HLC_H

#include <stdint.h>

#define HLC_TAG_BITS 8
#define HLC_CTR_BITS 12

/* The node's tag, from its id. */
void hlc_init(const char *node_id);
/* A new version, larger than every reading and observed version so far
 * and than floor (a version already held for the name). */
uint64_t hlc_next(uint64_t floor);
/* Remember a version seen from another node. */
void hlc_observe(uint64_t version);
/* The wall-clock milliseconds of a version (0 for the old counters). */
uint64_t hlc_ms(uint64_t version);
/* The clock reading for a wall time (no tag, no counter): tests, bounds. */
uint64_t hlc_at_ms(uint64_t ms);

#endif
