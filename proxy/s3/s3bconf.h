/*
 * s3bconf: a bucket's S3 configurations that are documents of their own,
 * kept as bucket properties the primary commits to the BMD: CORS rules
 * (?cors, s3cors.h), PublicAccessBlock (?publicAccessBlock) and
 * OwnershipControls (?ownershipControls, s3own.h). One table names each
 * configuration's property, parser and XML. Each answers r (now or later)
 * in S3's XML; the caller has authenticated and authorized r and made sure
 * the bucket exists.
 */
#ifndef SHOAL_PROXY_S3BCONF_H
#define SHOAL_PROXY_S3BCONF_H

#include "s3sub.h"

struct http_req;

/* GET, PUT and DELETE of the configuration id (S3SUB_CORS, S3SUB_PAB,
 * S3SUB_OWNERSHIP): Get/Put/Delete-BucketCors, -PublicAccessBlock,
 * -BucketOwnershipControls. */
void s3bconf_handle(struct http_req *r, const char *bucket, enum s3sub_id id);

#endif
