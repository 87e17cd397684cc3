/*
 * get: GET and HEAD of an object from the drives (get.c).
 */
#ifndef SHOAL_TARGET_GET_H
#define SHOAL_TARGET_GET_H

#include <stddef.h>
#include <stdint.h>

struct bmd_bucket;
struct target;
struct http_req;
struct objmeta;

/* A member of an archive up to this size is read with no read-ahead; a
 * larger one streams, and the kernel's read-ahead keeps ahead of it. */
#define GET_MEMBER_RANDOM_MAX (4u << 20)

/* get_local's flags */
#define GET_VERIFY 0x1           /* a GET checks the blocks it sends (vmap.h) */
#define GET_NO_REPAIR 0x2        /* a damaged copy answers 500 at once (repaired already) */

/* Answer r (GET or HEAD) with the object mkey (klen bytes) as the drives
 * hold it: 404 when they do not, 304/412 by its conditions, 416 for a
 * range outside it, else 200 or 206 with the bytes sent from the file.
 * cache is the X-Shoal-Cache value ("hit", "miss"), or NULL to omit it.
 * A copy whose file is missing or short, or (GET_VERIFY) one of whose
 * blocks sent does not match its sum, is never sent: it is repaired from redundancy
 * (repair.h) and served, or answered 500 ObjectCorrupted. The caller
 * keeps mkey. On r's worker. */
void get_local(struct target *t, struct http_req *r, const char *mkey, size_t klen,
               const char *cache, int flags);
/* The same with the record m and its data file fd (or -errno: -ENOENT,
 * -EUCLEAN for a file missing or short) opened already. Takes fd. */
void get_opened(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, int flags, struct objmeta *m, int fd);

/* A member of an archive object, at [off, off + size) of its data file
 * fd (r's Range within it): its bytes, checked as the object's are, with
 * its own ETag (etag, quoted, under GET_ETAG_MAX bytes) and Content-Type.
 * Takes fd. */
#define GET_ETAG_MAX 48
void get_member(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, struct objmeta *m, int fd, int flags, uint64_t off,
                uint64_t size, const char *etag);

/* get_local's GET_VERIFY unless bucket bk turned checking off
 * (verify_reads: false), else 0. */
int get_verifies(const struct bmd_bucket *bk);

/* 500 ObjectCorrupted for mkey (why: what is wrong), logged. */
void get_corrupted(struct http_req *r, const char *mkey, size_t klen, const char *why);

#endif
