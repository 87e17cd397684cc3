/*
 * mpu: S3 multipart uploads (mpu.c).
 */
#ifndef SHOAL_TARGET_MPU_H
#define SHOAL_TARGET_MPU_H

#include <stddef.h>

struct target;
struct http_req;
struct bmd_bucket;
struct http_worker;
struct store_mp;

/* S3 multipart requests on an object (the query names uploads or
 * uploadId). Returns 1 if it took r (and mkey), 0 if r is not one. On r's
 * worker. */
int mpu_handle(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
               const char *name, char *mkey, size_t klen);

/* The route of GET /v1/internal/uploads?bucket=&prefix=: the uploads in
 * progress of a bucket, for the proxy's merge. */
void mpu_list_handle(struct http_req *r, const char *rest, size_t rlen);

/* I/O pool: upload id's parts, their records and its record go (abort,
 * completion, expiry). */
void mpu_drop(struct target *t, struct store_mp *mp, const char *id);

/* Expiry (mpuexp.c, with the listing): every upload not completed or aborted within
 * mpu_expire_h of its creation is dropped, and a completed upload's
 * record (what a retried completion is answered) within the same time or
 * a day, whichever is shorter. Checked on a timer on w's loop. */
void mpu_expire_start(struct target *t, struct http_worker *w);

#endif
