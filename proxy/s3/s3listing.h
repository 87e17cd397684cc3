/*
 * s3listing: S3 listings on a proxy (s3listing.c). Each answers r (now or
 * later) in S3's XML; the caller has authenticated r and made sure the
 * Shoal bucket exists.
 */
#ifndef SHOAL_PROXY_S3LISTING_H
#define SHOAL_PROXY_S3LISTING_H

struct http_req;

enum s3listing_kind {
    S3LISTING_V1,                /* ListObjects: marker, NextMarker */
    S3LISTING_V2,                /* ListObjectsV2: continuation tokens */
    S3LISTING_VERSIONS,          /* ListObjectVersions: key-marker */
};

/* GET on a bucket (v1 or v2 by list-type), or ?versions. */
void s3listing_objects(struct http_req *r, const char *bucket, enum s3listing_kind kind);
/* ?uploads: the multipart uploads in progress. */
void s3listing_uploads(struct http_req *r, const char *bucket);

#endif
