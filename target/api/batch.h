/*
 * batch: GetBatch, the assembler's side (batch.c): /v1/batch answers one
 * archive (.tar, .tar.gz, .zip) of the entries asked, in their order.
 *
 * The entries are grouped by their owning target; each owner (this one
 * included) sends its own as one stream of frames (bsend.h), target to
 * target, in parallel; this target merges them in the asked order. An
 * entry a stream says was not read there (BSEND_ASK) is read through the
 * object API of its owner, which fetches cold objects, finds them on
 * neighbours, repairs damaged copies and reads compressed members.
 *
 * Memory is bounded whatever the batch's size: every stream is paused
 * once BATCH_FEED_HIGH of it waits, and the answer once the client's
 * buffer holds BATCH_HIGH; the streams ahead wait for the one behind.
 *
 * Errors: before the answer's head went, a plain status (400, 403, 404,
 * 500); after it, an entry that is missing or unreadable becomes an
 * empty member named BATCH_MISSING + its name when continue_on_error,
 * else (and when a target is lost mid-batch) the answer is cut: its
 * last chunk never comes, so the client sees an error, never a short
 * archive that looks whole.
 */
#ifndef SHOAL_TARGET_BATCH_H
#define SHOAL_TARGET_BATCH_H

#include <stddef.h>

struct http_req;

#define BATCH_MISSING "__404__/"
#define BATCH_MANIFEST "__manifest__.json"

/* POST (or GET with a body) /v1/batch. A proxy's redirect carries the
 * body's SHA-256 (digest=) under its signature, having authorized every
 * bucket; a client's own request is authorized here, bucket by bucket. */
void batch_handle(struct http_req *r, const char *rest, size_t rlen);

#endif
