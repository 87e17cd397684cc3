/*
 * put: an object's body in, as a PUT, a CopyObject, or one part of a
 * multipart upload (put.c).
 */
#ifndef SHOAL_TARGET_PUT_H
#define SHOAL_TARGET_PUT_H

#include <stddef.h>

struct target;
struct http_req;
struct bmd_bucket;
struct store_mp;
struct objmeta;

/* A part of a multipart upload, as the upload's owner (mpu.c) describes
 * it to put. */
struct put_part {
    char upload[40];             /* the multipart upload's id */
    int num;                     /* 1..10000; 0: not a part */
    int ckalg;                   /* the upload's checksum algorithm (s3ck.h), 0: none */
    /* I/O pool: make the finished work file `work` (open as fd, which it
     * closes) this part, with metadata m. 0 or -errno (-ENOENT: the upload
     * is gone). */
    int (*commit)(struct target *t, struct store_mp *mp, const struct put_part *part,
                  const char *work, int fd, const struct objmeta *m);
};

/* Take r's body as the object (or as a part of a multipart upload, with
 * part != NULL) named name, store key mkey (taken; klen bytes), in bucket
 * bk; answers r. On r's worker. */
void put_object(struct target *t, struct http_req *r, const char *name,
                const struct bmd_bucket *bk, char *mkey, size_t klen,
                const struct put_part *part);

#endif
