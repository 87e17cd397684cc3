/*
 * condcheck: a conditional write (If-Match, If-None-Match) to a bucket with
 * a backend, checked before anything is written. Its object may be held
 * here (the cached copy, whose ETag is the backend's object's) or only in
 * the backend: then a HEAD there tells whether it exists and its ETag.
 * Either way the conditions judge it as the commit would (store_x) and are
 * then cleared, so that the backend's write and the local commit go ahead
 * (a write-through bucket's object is written to the backend before it is
 * committed here: the commit cannot be where the condition is checked).
 *
 * Between the check and the backend's write another writer of the backend
 * may come in: the check is as good as the backend's view at that moment,
 * as it is for any S3 gateway that does not hold the backend's lock.
 */
#ifndef SHOAL_TARGET_CONDCHECK_H
#define SHOAL_TARGET_CONDCHECK_H

#include <stddef.h>

struct backend;
struct http_req;
struct store_x;
struct target;

/* done(arg, 0): the conditions held (and are cleared from x); done(arg, 1):
 * r is answered (412, 404, or the backend's failure). Called once, maybe
 * before condcheck_backed returns. */
typedef void (*condcheck_fn)(void *arg, int answered);

void condcheck_backed(struct target *t, struct http_req *r, const struct backend *b,
                      const char *mkey, size_t klen, const char *name, struct store_x *x,
                      condcheck_fn done, void *arg);

#endif
