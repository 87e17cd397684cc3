/*
 * s3bucket: S3 bucket operations on a proxy (s3bucket.c). Each answers r
 * (now or later) in S3's XML; the caller has authenticated r and, but for
 * create, made sure the Shoal bucket exists.
 */
#ifndef SHOAL_PROXY_S3BUCKET_H
#define SHOAL_PROXY_S3BUCKET_H

#include <jansson.h>

struct http_req;
struct authz_who;

/* A change of the bucket's properties (patch: taken), what it is for the
 * error's message: ok_status (204, 200) once the primary committed it, or
 * the S3 error. */
void s3bucket_patch(struct http_req *r, const char *bucket, json_t *patch, const char *what,
                    int ok_status);

/* ListBuckets: the Shoal buckets who may use (authz.h). */
void s3bucket_list_all(struct http_req *r, const struct authz_who *who);
/* CreateBucket (bucket as the client named it: checked here), owned by
 * who; again by another key: 409 BucketAlreadyExists. */
void s3bucket_create(struct http_req *r, const char *bucket, const struct authz_who *who);
/* DeleteBucket, refused while the bucket holds objects. */
void s3bucket_delete(struct http_req *r, const char *bucket);
void s3bucket_head(struct http_req *r);
void s3bucket_location(struct http_req *r, const char *bucket);
void s3bucket_versioning(struct http_req *r, const char *bucket);
/* GET, PUT and DELETE ?tagging: the bucket's "labels" property. */
void s3bucket_tagging(struct http_req *r, const char *bucket);
/* GET and PUT ?acl: the bucket's canned ACL (private, public-read). */
void s3bucket_acl(struct http_req *r, const char *bucket);
/* POST ?delete: DeleteObjects. */
void s3bucket_delete_objects(struct http_req *r, const char *bucket);

#endif
