/*
 * s3acl: S3 access control lists, as asked for, kept, shown and decided.
 *
 * An ACL is a list of grants, each a permission (READ, WRITE, READ_ACP,
 * WRITE_ACP, FULL_CONTROL) to a grantee: a user (an access key, s3user.h),
 * a group (AllUsers: anyone, signed or not; AuthenticatedUsers: any
 * signed request; LogDelivery: no client), or one of S3's own users no
 * client is (Amazon EC2's, which aws-exec-read grants READ: S3ACL_EC2_ID).
 * It is kept as a JSON array:
 *
 *   [{"perm": "FULL_CONTROL", "key": "ALICE"}, {"perm": "READ", "group": "AllUsers"},
 *    {"perm": "READ", "id": S3ACL_EC2_ID}]
 *
 * (a bucket's "acl" property; an object's ":acl" metadata, compact). The
 * older kept forms, the canned names "private" and "public-read", are
 * read as the ACL they name. A request asks for one by a canned name
 * (x-amz-acl), by grant headers (x-amz-grant-read: id="..", emailAddress=
 * "..", uri=".."), or by an AccessControlPolicy body (PutBucketAcl,
 * PutObjectAcl). Who may do what by them: authz.h.
 */
#ifndef SHOAL_S3ACL_H
#define SHOAL_S3ACL_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

struct gbuf;
struct http_req;

enum s3acl_perm {
    S3ACL_READ = 1,
    S3ACL_WRITE = 2,
    S3ACL_READ_ACP = 4,
    S3ACL_WRITE_ACP = 8,
    S3ACL_FULL = 15,
};

#define S3ACL_GROUPS "http://acs.amazonaws.com/groups/"
#define S3ACL_GRANTS_MAX 100     /* S3's limit of grants in one ACL */
/* Amazon EC2's canonical user ID and display name, as S3 shows them */
#define S3ACL_EC2_ID "6aa5a366c34c1cbe25dc49211496e913e0351eb0e8c37aa3477e40942ec6b97c"
#define S3ACL_EC2_NAME "za-team"

/*
 * The ACL r asks for: x-amz-acl, x-amz-grant-* or (body_ok: PutBucketAcl,
 * PutObjectAcl) an AccessControlPolicy body. owner: the owner of what it
 * is for (an access key; NULL or "": none); bucket_owner: for the
 * bucket-owner-* canned ACLs. *grants: a new array, or NULL when r asks
 * for none. 0, or the status of the error: 400 InvalidArgument (an
 * unknown canned ACL, grantee ID or group), UnresolvableGrantByEmailAddress,
 * InvalidRequest (both a canned ACL and grants), UnexpectedContent
 * (headers and a body), MalformedACLError; 501 aws-exec-read.
 */
int s3acl_of_request(const struct http_req *r, const char *body, size_t len, int body_ok,
                     const char *owner, const char *bucket_owner, json_t **grants,
                     enum s3e *code, char *msg, size_t msglen);
/* A canned ACL's grants (new), or NULL when name is none S3 defines. */
json_t *s3acl_canned(const char *name, const char *owner, const char *bucket_owner);

/* The grants a kept ACL (JSON, or the text of one) stands for; NULL: the
 * owner's private ACL. A new reference. */
json_t *s3acl_grants(const json_t *kept, const char *owner);
json_t *s3acl_grants_text(const char *kept, const char *owner);
/* A kept ACL's check (a bucket property, as bmd.h checks them). */
int s3acl_check(const json_t *kept, char *err, size_t errlen);

/* What the grants give who (an access key; NULL: an unsigned request):
 * enum s3acl_perm bits. ignore_public: grants to AllUsers and
 * AuthenticatedUsers count for nothing (PublicAccessBlock). */
unsigned s3acl_perms(const json_t *grants, const char *who, int ignore_public);
/* Do the grants give anything to AllUsers or AuthenticatedUsers? */
int s3acl_public(const json_t *grants);
/* Are they just the owner's FULL_CONTROL (the canned private)? */
int s3acl_private(const json_t *grants, const char *owner);

/* GetBucketAcl / GetObjectAcl: the AccessControlPolicy, whole. */
void s3acl_xml(struct gbuf *b, const char *owner, const json_t *grants);

#endif
