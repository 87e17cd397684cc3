/*
 * s3own: who may use a bucket through the S3 API (s3own.c). A bucket
 * created through S3 with keys configured has an owner, the access key
 * that created it (bucket property "owner"), and a canned ACL (property
 * "acl": "private", the default, or "public-read"). Its owner and the
 * admin keys (admin_keys) may do anything to it; with public-read anyone,
 * signed or not, may list it; nobody else may touch it, but to read an
 * object that is public-read itself. A bucket with no owner (made through the native API,
 * or before owners were kept, or with no keys) is everyone's.
 *
 * An object may be public-read on its own (x-amz-acl at its creation,
 * PutObjectAcl), kept among its metadata (":acl"); the target that holds
 * it decides reads of it by others (S3OWN_PUBLIC_QUERY).
 */
#ifndef SHOAL_S3OWN_H
#define SHOAL_S3OWN_H

#include <jansson.h>

/* A proxy asks the target for a read allowed only if the object is public. */
#define S3OWN_PUBLIC_QUERY "shoal_public=1"

/* What a request needs of a bucket: to list it (or its location, or
 * HeadBucket), to read one of its objects, or anything else. */
enum s3own_need { S3OWN_LIST, S3OWN_READ, S3OWN_WRITE };

/* Who asks: an access key (NULL: an unsigned request), whether it is an
 * admin key, and whether ownership applies at all (keys are configured). */
struct s3own_who {
    const char *access;
    int admin;
    int enforced;
};

/* May access (NULL: an unsigned request) do what needs to the bucket with
 * these props? admin: access is an admin key. */
int s3own_allows(const json_t *props, const char *access, int admin, enum s3own_need need);
/* The bucket's owner (NULL: none), and whether it is public-read. */
const char *s3own_owner(const json_t *props);
int s3own_public(const json_t *props);
/* <ID>owner</ID><DisplayName>owner</DisplayName>, as S3 names an owner
 * (owner: an access key; NULL: Shoal's one owner, S3_OWNER_ID). */
struct gbuf;
void s3own_xml(struct gbuf *b, const char *owner);
/* The owner of Shoal bucket name as S3 shows it, into out. */
void s3own_of_bucket(const char *name, char *out, size_t n);

/* Is access one of keys (n of them)? */
int s3own_admin(char *const *keys, int n, const char *access);

#endif
