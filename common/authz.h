/*
 * authz: the one decision of who may do what to a bucket and its objects.
 *
 * Authentication (auth.h, nodeauth.h) says who asks: an access key proved
 * by a SigV4 signature (header or presigned URL), a SigV2 signature (the S3
 * API only), or a bearer token; nobody (an unsigned request); or another
 * node (the cluster's signature, trusted as decided already). This module
 * says what that caller may do, and every door asks it the same way: the
 * native API on a proxy and on a target's own port, the S3 API on a proxy
 * and at a target's root, CopyObject's source, and jobs (a job reads and
 * writes as its starter).
 *
 * The rule, once keys are configured (with none, everything is allowed):
 *   - an admin key (admin_keys) may do anything to any bucket;
 *   - a bucket's owner (property "owner": the key that created it, through
 *     either API) may do anything to it and its objects;
 *   - a bucket with no owner (a cloud bucket met on first use, or one made
 *     before keys were configured) is every key's, but only an admin key
 *     changes an ACL in it, so no key opens it to the world;
 *   - anyone else, signed or not, has what the ACLs grant (s3acl.h): the
 *     bucket's (property "acl") to list it (READ), to write and delete its
 *     objects (WRITE), to read and change the bucket's ACL (READ_ACP,
 *     WRITE_ACP); an object's own (its ":acl" metadata) to read it and its
 *     ACL, which only the object's target knows: AUTHZ_IF_OBJECT. The
 *     bucket's configuration (tags, CORS, versioning, properties) and its
 *     removal are the owner's alone.
 */
#ifndef SHOAL_AUTHZ_H
#define SHOAL_AUTHZ_H

#include <jansson.h>

struct conf;
struct http_req;
struct s3auth_result;

/* What a request does to a bucket. */
enum authz_op {
    AUTHZ_LIST,      /* list its objects; HeadBucket, its location, uploads, properties */
    AUTHZ_READ,      /* read an object: its bytes, metadata, attributes; a copy source */
    AUTHZ_WRITE,     /* write, copy onto, delete an object; multipart uploads */
    AUTHZ_PUBLISH,   /* such a write that also sets an ACL other than private */
    AUTHZ_OWN,       /* the bucket's config (tags, CORS, ...), its objects' tags, destroy */
    AUTHZ_READ_ACP,  /* read the bucket's ACL */
    AUTHZ_WRITE_ACP, /* change the bucket's ACL */
    AUTHZ_OBJ_READ_ACP,  /* read an object's ACL */
    AUTHZ_OBJ_WRITE_ACP, /* change an object's ACL */
};

enum authz_verdict {
    AUTHZ_DENY,
    AUTHZ_ALLOW,
    AUTHZ_IF_OBJECT, /* allowed only if the object's own ACL grants it (its target decides) */
};

/* Who asks. */
struct authz_who {
    const char *access;          /* the access key; NULL: an unsigned request */
    int admin;                   /* an admin key, or another node */
    int enforced;                /* keys are configured: the rule applies */
    int node;                    /* another node (the cluster's signature): it decided */
};

/* who for a caller authenticated as res (NULL: anonymous) on a node with
 * configuration c; enforced: auth_keys are configured. who->access points
 * into res. */
void authz_who_set(struct authz_who *who, const struct conf *c, int enforced,
                   const struct s3auth_result *res);
/* Is access one of the n keys? */
int authz_is_admin(char *const *keys, int n, const char *access);

/* The verdict for who doing op to a bucket with properties props. */
enum authz_verdict authz_decide(const json_t *props, const struct authz_who *who,
                                enum authz_op op);
/* Is the verdict a yes outright (AUTHZ_ALLOW)? */
int authz_allows(const json_t *props, const struct authz_who *who, enum authz_op op);
/* The same for the bucket provider/name as the current BMD has it; -1 when
 * it has no such bucket. Any thread. */
int authz_decide_named(const char *provider, const char *name, const struct authz_who *who,
                       enum authz_op op);

/* What r, a request on an object (on_object) or on a bucket, does: GET and
 * HEAD of an object read it (also ?attributes; its ?tagging is the
 * owner's, as no ACL grants it); of a bucket
 * they list it (also ?versions, ?location, ?uploads); ?acl reads or
 * changes an ACL; PUT, POST and DELETE of an object write (publish, with
 * x-amz-acl other than private or x-amz-grant-*), as DeleteObjects does;
 * anything else on a bucket is its owner's. Both APIs, every node: the
 * one mapping. */
enum authz_op authz_op_of(const struct http_req *r, int on_object);
/* What an object's ACL must grant who for op (AUTHZ_IF_OBJECT):
 * s3acl_perm bits, 0 when op is not decided by it. */
unsigned authz_object_need(enum authz_op op);
/* Does the object's ACL (grants, its owner object_owner) give who what op
 * needs? ignore_public: the bucket's PublicAccessBlock IgnorePublicAcls. */
int authz_object_allows(const json_t *grants, const char *object_owner, const char *who,
                        enum authz_op op, int ignore_public);

#endif
