/*
 * cold: GET and HEAD of objects in buckets with a backend (cold.c).
 */
#ifndef SHOAL_TARGET_COLD_H
#define SHOAL_TARGET_COLD_H

#include <stddef.h>

struct target;
struct http_req;
struct bmd_bucket;

/* GET/HEAD of the object name (store key mkey, klen bytes; taken) in
 * bucket bk, which has a backend: warm from the drives, cold through a
 * fetch (fetch.h) whose bytes stream to the client as they land. Answers
 * r. On r's worker. */
void cold_get(struct target *t, struct http_req *r, const struct bmd_bucket *bk, char *mkey,
              size_t klen, const char *name);
/* The same with get_local's flags added (GET_NO_REPAIR: after a repair). */
void cold_get_flags(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                    char *mkey, size_t klen, const char *name, int flags);

#endif
