/*
 * bsend: a target's own entries of a GetBatch, read from its drives into
 * a stream of frames, in the order asked (bsend.c). The assembler of the
 * batch (batch.c) reads one such stream from every target that owns
 * entries, its own included, and merges them.
 *
 * A frame is a head of BSEND_HEAD bytes: "SB", the status (u16, little
 * endian), 4 zero bytes, the length that follows (u64); then that many
 * bytes: the entry's (BSEND_OK), or a message. BSEND_ASK means "not
 * read here": the object is not on the drives (cold, on a neighbour,
 * deleted), or damaged here, or a member read only by decompressing, or
 * an entry with a transform; the assembler then reads the entry through the object API, which knows
 * all that. An entry's bytes are checked against their sums before they
 * go (the bucket's verify_reads), as a GET's are.
 */
#ifndef SHOAL_TARGET_BSEND_H
#define SHOAL_TARGET_BSEND_H

#include <stddef.h>
#include <stdint.h>

struct batch_req;
struct evbuffer;
struct http_req;
struct target;

#define BSEND_HEAD 16
enum { BSEND_ASK = 1, BSEND_FILE = 2, BSEND_OK = 200, BSEND_BAD = 400, BSEND_MISSING = 404 };

/* BSEND_FILE, only in a stream that never leaves this process (BSEND_REFS
 * below): an entry whose bytes are not in the stream. The head's length
 * is the entry's; BSEND_REF bytes follow, a pointer to an
 * evbuffer_file_segment of exactly those bytes, which its taker frees. */
#define BSEND_REF sizeof(void *)

/* How an entry's checked bytes leave: read into the stream's chains
 * (BSEND_READ, the default), or, for an entry of at least BSEND_FILE_MIN
 * bytes, as a file segment sent with sendfile(2) and never read here:
 * BSEND_CHAINS puts it in the stream's buffer as a chain, which only a
 * buffer draining to a plain socket can take (bsend_set_way sets
 * EVBUFFER_FLAG_DRAINS_TO_FD on it then); BSEND_REFS sends a BSEND_FILE
 * frame instead. */
enum bsend_way { BSEND_READ, BSEND_CHAINS, BSEND_REFS };
#define BSEND_FILE_MIN (128u << 10)

struct bsend;
/* The sending of q's entries idx[0..n) (q and idx stay the caller's, and
 * valid until bsend_free). */
struct bsend *bsend_new(struct target *t, const struct batch_req *q, const uint32_t *idx,
                        size_t n);
/* Append frames to out until it holds or references about max bytes or
 * the entries end: 1 at the end, 0 for more, -EIO when a file fails
 * after its head went. The bytes are read straight into out's chains
 * (or referenced, see bsend_way). Blocks: the I/O pool (out is the
 * caller's alone meanwhile). */
int bsend_turn(struct bsend *s, struct evbuffer *out, size_t max);
void bsend_free(struct bsend *s);
/* Before the first turn. BSEND_CHAINS: the caller moves every out of a
 * turn whole (evbuffer_add_buffer) to a plain socket's output; the turn
 * flags out so. */
void bsend_set_way(struct bsend *s, enum bsend_way way);
/* The bytes of the BSEND_FILE frames the last turn made (they count
 * towards its max, as bytes in out do). */
uint64_t bsend_turn_refs(const struct bsend *s);
/* Drop a stream of frames not taken (skip: the bytes of an entry at its
 * front that belong to no frame head), freeing the segments of its
 * BSEND_FILE frames. */
void bsend_frames_free(struct evbuffer *frames, uint64_t skip);

/* Decode a frame's head: 0 with status and length, -1 when it is not one. */
int bsend_head(const unsigned char *p, int *status, uint64_t *len);

/* POST /v1/internal/batch: this target's entries of a batch (the body is
 * a batch request) as a stream of frames. */
void bsend_handle(struct http_req *r, const char *rest, size_t rlen);

#endif
