/*
 * s3front: what the files of the proxy's S3 front end share. The front
 * end is five files calling one way:
 *
 *   s3route    entry: authentication, then a bucket or an object request
 *     -> s3bucket   bucket operations (create, delete, tags, ACL, ...)
 *     -> s3listing  ListObjects v1/v2, ListObjectVersions, ListMultipartUploads
 *     -> s3fwd      object requests, redirected or streamed to the owner
 *          -> s3relay   GET and HEAD relayed socket to socket
 *
 * Each has its own header; this one holds only shared definitions.
 */
#ifndef SHOAL_PROXY_S3FRONT_H
#define SHOAL_PROXY_S3FRONT_H

#include "http.h"
#include "util.h"

#define S3_BUCKET_LEN 64         /* a bucket name's buffer (names are < 64) */

/* Answer r with b's XML, which is freed. */
static inline void s3front_reply_xml(struct http_req *r, int status, struct gbuf *b)
{
    http_reply(r, status, "application/xml", b->p, b->n);
    gbuf_free(b);
}

#endif
