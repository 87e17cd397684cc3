/*
 * s3own: a bucket's owner and ACL as kept and as S3 shows them (s3own.c).
 * A bucket created with keys configured has an owner, the access key that
 * created it (bucket property "owner"), and an ACL (property "acl",
 * s3acl.h; none: the owner's private one). Who may do what by them is
 * decided in one place for every API: authz.h.
 *
 * An object has an ACL of its own (x-amz-acl or x-amz-grant-* at its
 * creation, PutObjectAcl), kept among its metadata (":acl"); the target
 * that holds it decides what others may do by it (S3OWN_WHO).
 */
#ifndef SHOAL_S3OWN_H
#define SHOAL_S3OWN_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

struct gbuf;

/* A proxy asks the target for a request allowed only if the object's ACL
 * grants it (authz.h: AUTHZ_IF_OBJECT) with this query parameter, naming
 * who asks (empty: an unsigned request); the proxy's signature covers it. */
#define S3OWN_WHO "shoal_who"
struct authz_who;
/* "shoal_who=ACCESS" (encoded) for who, to add to a routed query. */
char *s3own_who_query(const struct authz_who *who);
/* A write a proxy routes for a key other than the bucket's owner names
 * the writer so (the object may become the writer's: s3own_object_owner);
 * only a request under a node's signature is believed. */
#define S3OWN_WRITER "shoal_writer"
/* The query to add for a write by who to bucket (a new string, "" when
 * who is its owner, an admin key (which writes for the owner), or
 * unsigned). */
char *s3own_writer_query(const struct authz_who *who, const char *bucket);

/* The bucket's owner (NULL: none). */
const char *s3own_owner(const json_t *props);
/* Its PublicAccessBlock settings (property "public_access_block"): do
 * public ACLs count for nothing (IgnorePublicAcls); may none be set
 * (BlockPublicAcls)? */
int s3own_ignore_public(const json_t *props);
int s3own_block_public(const json_t *props);
/* Its OwnershipControls (property "object_ownership": BucketOwnerEnforced,
 * BucketOwnerPreferred or ObjectWriter; NULL: none), and whether they
 * disable ACLs (BucketOwnerEnforced: no ACL grants anything, and none but
 * the owner's private one may be set). */
const char *s3own_ownership(const json_t *props);
int s3own_acls_disabled(const json_t *props);
/* Who owns an object that writer (NULL: unsigned, or the bucket's owner)
 * writes with the grants it asked for (NULL: none) to a bucket with
 * properties props: the writer under ObjectWriter (and without
 * OwnershipControls, S3's older default), unless BucketOwnerPreferred and
 * the grants give the bucket's owner FULL_CONTROL; else, and under
 * BucketOwnerEnforced, the bucket's owner (NULL: none). */
const char *s3own_object_owner(const json_t *props, const char *writer, const json_t *grants);
int s3own_ownership_valid(const char *v);

/* PutPublicAccessBlock's body into *pab ({"block_public_acls": bool,
 * "ignore_public_acls", "block_public_policy", "restrict_public_buckets"},
 * new), PutBucketOwnershipControls's into *ownership (new string): 0, or
 * the error's status with code and msg. The property's check (bmd.h) and
 * the GETs' XML. */
int s3own_pab_parse(const char *body, size_t len, json_t **pab, enum s3e *code, char *msg,
                    size_t msglen);
int s3own_pab_check(const json_t *pab, char *err, size_t errlen);
void s3own_pab_xml(struct gbuf *b, const json_t *pab);
int s3own_ownership_parse(const char *body, size_t len, json_t **ownership, enum s3e *code,
                          char *msg, size_t msglen);
void s3own_ownership_xml(struct gbuf *b, const char *ownership);
/* <ID>..</ID><DisplayName>..</DisplayName>, as S3 names an owner: the
 * user owner (an access key) is (s3user.h); NULL or "": Shoal's one owner,
 * S3_OWNER_ID. */
void s3own_xml(struct gbuf *b, const char *owner);
/* The owner (access key) of Shoal bucket name into out; "" when none. */
void s3own_of_bucket(const char *name, char *out, size_t n);

#endif
