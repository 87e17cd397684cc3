/*
 * ecstream: erasure coding a PUT's body as it arrives. The body of an
 * object whose size is known ahead is written to its work file in order,
 * and each piece, once written, is fed here. Data slice i is the object's
 * bytes [i*len, (i+1)*len) (ec_slice_len), so the parity at slice offset
 * k needs the bytes at k of every data slice: as the body fills the last
 * data slice, each chunk of it is coded as soon as it is in, the same
 * chunk of the other slices read back from the work file (written moments
 * before, so mostly from the page cache), and the parity is written to
 * its own work files. Only one chunk per slice is held, never the object.
 * Every slice's checksum is taken on the way.
 *
 * Feeding only counts and checksums, on the PUT's loop; the coding runs
 * in turns on the I/O pool (never two at once), each coding what was in
 * when it started, so the loop never waits for a disk or the coder. What
 * no turn coded (the last chunks, those past the object's end) is coded
 * by ecstream_finish.
 *
 * Thread: feed and turned on the PUT's loop; turn and finish on the I/O
 * pool, finish only once no turn runs.
 */
#ifndef SHOAL_TARGET_ECSTREAM_H
#define SHOAL_TARGET_ECSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "ec.h"

/* What ecstream_finish hands on: everything slicing needs but the data
 * slices' bytes, which are the object's own. d 0: nothing (or taken). */
struct ecstream_out {
    uint64_t uid;                /* the version coded (its work file's uid) */
    int d, p;
    uint64_t len;                /* of every slice */
    int pfd[EC_PARITY_MAX];      /* the parity slices, from offset 0 (unlinked files) */
    uint64_t sums[EC_DATA_MAX + EC_PARITY_MAX];   /* each slice's checksum */
};

/* Close what o holds and mark it empty (d 0). */
void ecstream_out_close(struct ecstream_out *o);

struct ecstream;

/* A coder for an object of size bytes being written to work file fd (its
 * uid given; fd read, not owned) with a d+p code, the parity written to
 * the p files pfd (owned from here: closed by ecstream_free unless
 * finish handed them on). NULL when d or p is out of range (pfd left
 * to the caller then). */
struct ecstream *ecstream_new(int fd, uint64_t uid, int d, int p, uint64_t size,
                              const int *pfd);

/* The n bytes just written at the end of the work file. 1: run a turn
 * (ecstream_turn) now, some chunk being ready and no turn running. More
 * bytes than size stop the coding; finish says. */
int ecstream_feed(struct ecstream *e, const void *buf, size_t n);

/* A turn: code the chunks that were ready when it was started. A read or
 * write error stops the coding; finish says. */
void ecstream_turn(struct ecstream *e);

/* The turn ended (on the loop again). */
void ecstream_turned(struct ecstream *e);

/* 1: run another turn now (more became ready meanwhile); else 0. */
int ecstream_start(struct ecstream *e);

/* Is a turn running (finish and free must wait for it)? */
int ecstream_busy(const struct ecstream *e);

/* After the last piece, no turn running: code the rest, then 0 and *out
 * filled (its descriptors taken from e), or -errno (-EINVAL: the body was
 * not size bytes) with the parity files closed. The chunk buffers go
 * either way. */
int ecstream_finish(struct ecstream *e, struct ecstream_out *out);

void ecstream_free(struct ecstream *e);

#endif
