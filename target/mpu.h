/*
 * mpu: S3 multipart uploads (mpu.c).
 */
#ifndef SHOAL_TARGET_MPU_H
#define SHOAL_TARGET_MPU_H

#include <stddef.h>

struct target;
struct http_req;
struct bmd_bucket;

/* S3 multipart requests on an object (the query names uploads or
 * uploadId). Returns 1 if it took r (and mkey), 0 if r is not one. On r's
 * worker. */
int mpu_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
               const char *name, char *mkey, size_t klen);

/* The route of GET /v1/internal/uploads?bucket=&prefix=: the uploads in
 * progress of a bucket, for the proxy's merge. */
void mpu_list_handle(struct http_req *r, const char *rest, size_t rlen);

#endif
