/*
 * s3tag: S3 tag sets, of objects (kept in their metadata on a target) and
 * of buckets (kept as the bucket's "labels" property in the BMD).
 *
 * A tag set arrives as a Tagging XML body (PutObjectTagging,
 * PutBucketTagging) or as an x-amz-tagging header (PutObject, multipart
 * creation, CopyObject: "k=v&k2=v2", URL-encoded, '+' a space). Either way
 * it is checked against S3's limits: at most max tags (S3TAG_OBJECT_MAX
 * for an object, S3TAG_BUCKET_MAX for a bucket), keys of 1..128 and
 * values of 0..256 characters of valid UTF-8 without control characters,
 * no key twice, no key in the reserved "aws:" space. A valid set is kept
 * as "key\0value\0" pairs, sorted by key (bytewise): the order S3 returns
 * a tag set in, whatever order it was given in.
 */
#ifndef SHOAL_S3TAG_H
#define SHOAL_S3TAG_H

#include <stddef.h>

#include "err.h"
#include "util.h"

#define S3TAG_KEY_MAX 128        /* characters */
#define S3TAG_VALUE_MAX 256
#define S3TAG_OBJECT_MAX 10
#define S3TAG_BUCKET_MAX 50
/* The most bytes an object's pairs take (4-byte UTF-8 characters). */
#define S3TAG_OBJECT_BYTES (S3TAG_OBJECT_MAX * (4 * (S3TAG_KEY_MAX + S3TAG_VALUE_MAX) + 2))

struct s3tags {
    struct gbuf pairs;           /* "key\0value\0"... */
    int n;
};

/*
 * Parse a Tagging body or an x-amz-tagging value into t (empty on entry;
 * the caller frees it with s3tags_free either way). 0, or the HTTP status
 * (400) of the error *code (MalformedXML, InvalidTag, InvalidArgument),
 * with msg.
 */
int s3tag_parse_xml(const char *body, size_t len, int max, struct s3tags *t, enum s3e *code,
                    char *msg, size_t msglen);
int s3tag_parse_header(const char *h, int max, struct s3tags *t, enum s3e *code, char *msg,
                       size_t msglen);
void s3tags_free(struct s3tags *t);

/* Walk len bytes of pairs: each call gives the next key and value and
 * returns 1, then 0 at the end. *off starts at 0. */
int s3tag_next(const char *pairs, size_t len, size_t *off, const char **k, const char **v);
int s3tag_count(const char *pairs, size_t len);
/* The whole GetObjectTagging / GetBucketTagging answer. */
void s3tag_xml(struct gbuf *b, const char *pairs, size_t len);
/* The x-amz-tagging form of pairs (a new string, "" for none). */
char *s3tag_header(const char *pairs, size_t len);

#endif
