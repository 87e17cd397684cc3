/*
 * s3bconf: a bucket's S3 configurations that are documents of their own,
 * kept as bucket properties the primary commits to the BMD: CORS rules
 * (?cors, s3cors.h). Each answers r (now or later) in S3's XML; the caller
 * has authenticated and authorized r and made sure the bucket exists.
 */
#ifndef SHOAL_PROXY_S3BCONF_H
#define SHOAL_PROXY_S3BCONF_H

struct http_req;

/* GET, PUT and DELETE ?cors: PutBucketCors, GetBucketCors,
 * DeleteBucketCors. */
void s3bconf_cors(struct http_req *r, const char *bucket);

#endif
