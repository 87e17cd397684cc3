/*
 * neighbour: get-from-neighbor (neighbour.c). A GET or HEAD on the owner of a name
 * asks the targets where the name may have lived before (the targets
 * ranked above this one by HRW that are in maintenance or leaving, and
 * the next one below it, which owned the name while this target was away)
 * to send it over if theirs is newer than what is here (xfer.h), then
 * serves it from the drives (a plain GET of a name not here at all, in a
 * rebalance window, is answered with a neighbour's bytes as they come
 * instead: the walk brings the copy). It asks when the copy here may be old (a
 * rebalance window: reb.h) or is missing (in a bucket without a backend,
 * or while a target ranked above is in maintenance). A name missing here
 * whose owner-before is down, or a neighbour that cannot answer, is 503
 * with Retry-After (S3: ServiceUnavailable), never "not found". A DELETE
 * asks the same way first, so that it answers 404 only for a name that
 * is nowhere (its tombstone wins over any copy that comes back later).
 *
 * Thread: r's worker.
 */
#ifndef SHOAL_TARGET_NEIGHBOUR_H
#define SHOAL_TARGET_NEIGHBOUR_H

#include <stddef.h>

struct bmd_bucket;
struct http_req;
struct target;

/* What comes once the neighbours have sent what they had newer: r on
 * the name (store key mkey, taken) in bk; unsure: the name may still be
 * where nobody could be asked (a target down, or one that did not
 * answer). */
typedef void (*neighbour_next_fn)(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                                  int backed, char *mkey, size_t klen, const char *name,
                                  int unsure);

/* Ask the neighbours when the copy here may be missing or old, then next. */
void neighbour_first(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
                     char *mkey, size_t klen, const char *name, neighbour_next_fn next);

/* GET/HEAD of name: neighbour_first, then cold_get (backed) or get_local, or
 * 503 for a name missing here while unsure. Answers r. */
void neighbour_get(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
                   char *mkey, size_t klen, const char *name);

#endif
