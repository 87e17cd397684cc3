/*
 * gfn: get-from-neighbor (gfn.c). A GET or HEAD on the owner of a name
 * asks the targets where the name may have lived before (the targets
 * ranked above this one by HRW that are in maintenance or leaving, and
 * the next one below it, which owned the name while this target was away)
 * to send it over if theirs is newer than what is here (xfer.h), then
 * serves it from the drives. It asks when the copy here may be old (a
 * rebalance window: reb.h) or is missing (in a bucket without a backend,
 * or while a target ranked above is in maintenance). A name missing here
 * whose owner-before is down, or a neighbour that cannot answer, is 503
 * with Retry-After (S3: ServiceUnavailable), never "not found".
 *
 * Thread: r's worker.
 */
#ifndef SHOAL_TARGET_GFN_H
#define SHOAL_TARGET_GFN_H

#include <stddef.h>

struct bmd_bucket;
struct http_req;
struct target;

/* GET/HEAD of name (store key mkey, taken) in bk: then on to cold_get
 * (backed) or get_local. Answers r. */
void gfn_get(struct target *t, struct http_req *r, const struct bmd_bucket *bk, int backed,
             char *mkey, size_t klen, const char *name);

/* May mkey, missing here, live on another target (a DELETE of it is then
 * not a 404)? */
int gfn_elsewhere(struct target *t, const char *mkey, size_t klen);

#endif
