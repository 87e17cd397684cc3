/*
 * s3own: a bucket's owner and canned ACL as kept and as S3 shows them
 * (s3own.c). A bucket created with keys configured has an owner, the
 * access key that created it (bucket property "owner"), and a canned ACL
 * (property "acl": "private", the default, or "public-read"). Who may do
 * what by them is decided in one place for every API: authz.h.
 *
 * An object may be public-read on its own (x-amz-acl at its creation,
 * PutObjectAcl), kept among its metadata (":acl"); the target that holds
 * it decides reads of it by others (S3OWN_PUBLIC_QUERY).
 */
#ifndef SHOAL_S3OWN_H
#define SHOAL_S3OWN_H

#include <jansson.h>

/* A proxy asks the target for a read allowed only if the object is public
 * (authz.h: AUTHZ_IF_PUBLIC). */
#define S3OWN_PUBLIC_QUERY "shoal_public=1"

/* The bucket's owner (NULL: none), and whether it is public-read. */
const char *s3own_owner(const json_t *props);
int s3own_public(const json_t *props);
/* <ID>owner</ID><DisplayName>owner</DisplayName>, as S3 names an owner
 * (owner: an access key; NULL: Shoal's one owner, S3_OWNER_ID). */
struct gbuf;
void s3own_xml(struct gbuf *b, const char *owner);
/* The owner of Shoal bucket name as S3 shows it, into out. */
void s3own_of_bucket(const char *name, char *out, size_t n);

#endif
