/*
 * s3sub: the one table of S3 subresources (?acl, ?tagging, ?uploads ...)
 * and which methods Shoal serves for each on a bucket and on an object.
 *
 * Both S3 front ends consult it before they dispatch: the proxy for
 * bucket and object requests, a target for object requests in S3 mode.
 * A request whose query names a subresource is that subresource's
 * operation or is answered 501 NotImplemented: it never falls through to
 * the plain operation on the bucket or object (a DELETE ?tagging must not
 * delete the object). Query parameters that are not subresources
 * (prefix, partNumber, versionId, response-*, X-Amz-*, x-id ...) are not
 * in the table and do not change the operation.
 */
#ifndef SHOAL_S3SUB_H
#define SHOAL_S3SUB_H

#include <stddef.h>

#include "err.h"

struct http_req;

enum s3sub_id {
    S3SUB_UNSERVED = 1,          /* S3 defines it; Shoal serves none of it */
    S3SUB_ACL,
    S3SUB_TAGGING,
    S3SUB_CORS,                  /* a bucket's CORS rules (s3cors.h) */
    S3SUB_PAB,                   /* its PublicAccessBlock (s3own.h) */
    S3SUB_OWNERSHIP,             /* its OwnershipControls (s3own.h) */
    S3SUB_ATTRIBUTES,            /* GetObjectAttributes */
    S3SUB_UPLOADS,
    S3SUB_UPLOAD_ID,
    S3SUB_LOCATION,
    S3SUB_VERSIONING,
    S3SUB_VERSIONS,
    S3SUB_DELETE,
};

/* A set of methods (enum http_method_id values). */
#define S3SUB_M(m) (1u << (m))

struct s3sub {
    const char *name;
    enum s3sub_id id;
    unsigned bucket;             /* methods served on a bucket */
    unsigned object;             /* methods served on an object */
};

/* The subresource r's query names, or NULL. When it names several, the
 * one first in the table wins, and every unserved one comes before the
 * served ones, so ?tagging&website is refused, never served as tagging.
 * A key with no value that the table does not name (?abac) is taken for
 * an unserved subresource: refused, never the plain operation. Keys are
 * compared as normalized by the HTTP layer (http_query_normalize). */
const struct s3sub *s3sub_find(const struct http_req *r);
/* The table's entry named k (kl bytes, normalized), or NULL. */
const struct s3sub *s3sub_named(const char *k, size_t kl);
/* Does Shoal serve method on s (on an object, or on a bucket). */
int s3sub_serves(const struct s3sub *s, int on_object, int method);
/* Answer r 501 NotImplemented (S3 XML) for s. */
void s3sub_refuse(struct http_req *r, const struct s3sub *s, int on_object);

#endif
