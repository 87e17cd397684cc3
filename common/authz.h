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
 *     changes its ACL, so no key opens it to the world;
 *   - anyone else, signed or not, may list a public-read bucket (property
 *     "acl") and read an object that is public-read itself (its ":acl"
 *     metadata), which only the object's target knows: AUTHZ_IF_PUBLIC.
 */
#ifndef SHOAL_AUTHZ_H
#define SHOAL_AUTHZ_H

#include <jansson.h>

struct conf;
struct http_req;
struct s3auth_result;

/* What a request does to a bucket. */
enum authz_op {
    AUTHZ_LIST,      /* list its objects; HeadBucket, its location, properties, summary */
    AUTHZ_READ,      /* read an object: its bytes and metadata (GET, HEAD, a copy source) */
    AUTHZ_WRITE,     /* everything else: write, delete, tag, multipart, destroy, change */
    AUTHZ_ACL,       /* change an ACL, the bucket's or an object's */
};

enum authz_verdict {
    AUTHZ_DENY,
    AUTHZ_ALLOW,
    AUTHZ_IF_PUBLIC, /* a read, allowed only if the object is public-read itself */
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
 * HEAD of an object read it; of a bucket they list it (also ?versions and
 * ?location); PUT ?acl, and a PUT or POST that sets an ACL other than
 * private (x-amz-acl, x-amz-grant-*), changes an ACL; any other
 * subresource and any other method writes. Both APIs, every node: the
 * one mapping. */
enum authz_op authz_op_of(const struct http_req *r, int on_object);

#endif
