/*
 * get: GET and HEAD of an object from the drives (get.c).
 */
#ifndef SHOAL_TARGET_GET_H
#define SHOAL_TARGET_GET_H

#include <stddef.h>

struct bmd_bucket;
struct target;
struct http_req;

/* Answer r (GET or HEAD) with the object mkey (klen bytes) as the drives
 * hold it: 404 when they do not, 304/412 by its conditions, 416 for a
 * range outside it, else 200 or 206 with the bytes sent from the file.
 * cache is the X-Shoal-Cache value ("hit", "miss"), or NULL to omit it.
 * verify (get_verifies): a GET first checksums the whole file, and a
 * mismatch answers 500 rather than the bytes. The caller keeps mkey. On
 * r's worker. */
void get_local(struct target *t, struct http_req *r, const char *mkey, size_t klen,
               const char *cache, int verify);

/* Does bucket bk ask for every read to be checked (verify_reads)? */
int get_verifies(const struct bmd_bucket *bk);

#endif
