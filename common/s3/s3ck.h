/*
 * s3ck: S3's additional checksums (CRC32, CRC32C, CRC64NVME, SHA1,
 * SHA256), as newer SDKs send them on PutObject and UploadPart: in an
 * x-amz-checksum-<alg> header, or as a trailer of an aws-chunked body
 * (x-amz-trailer), with x-amz-sdk-checksum-algorithm naming the algorithm.
 * A value is the checksum's big-endian bytes in base64; a multipart
 * object's COMPOSITE value is the checksum of its parts' checksums
 * (their bytes, in part order) with "-<parts>" after it.
 *
 * s3ck_* are pure (the running checksums, names, encodings); s3ck_req_*
 * read and check one request's checksum headers and its body.
 *
 * Threads: a struct s3ck belongs to one request.
 */
#ifndef SHOAL_S3CK_H
#define SHOAL_S3CK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct awschunk;
struct http_req;

enum s3ck_alg { S3CK_NONE, S3CK_CRC32, S3CK_CRC32C, S3CK_CRC64NVME, S3CK_SHA1, S3CK_SHA256,
                S3CK_ALGS };

#define S3CK_RAW_MAX 32          /* SHA-256's */
#define S3CK_VALUE_MAX 56        /* base64 of 32 bytes, "-10000", NUL */

struct s3ck {
    enum s3ck_alg alg;
    uint64_t crc;
    void *md;                    /* SHA1, SHA256: an EVP_MD_CTX */
};

/* The algorithm named ("CRC32", any case), or S3CK_NONE. */
enum s3ck_alg s3ck_alg_named(const char *name);
/* "CRC32"; the header "x-amz-checksum-crc32"; the XML element
 * "ChecksumCRC32"; the value's length in bytes (0 for S3CK_NONE). */
const char *s3ck_name(enum s3ck_alg a);
const char *s3ck_header(enum s3ck_alg a);
const char *s3ck_element(enum s3ck_alg a);
size_t s3ck_raw_len(enum s3ck_alg a);
/* A CRC (CRC32, CRC32C, CRC64NVME), which S3 also takes whole over a
 * multipart object (FULL_OBJECT). */
int s3ck_is_crc(enum s3ck_alg a);

/* A running checksum; s3ck_final writes its bytes (s3ck_raw_len) and
 * ends it; s3ck_free ends one not finished (safe twice). */
void s3ck_init(struct s3ck *c, enum s3ck_alg a);
void s3ck_update(struct s3ck *c, const void *p, size_t n);
size_t s3ck_final(struct s3ck *c, unsigned char *raw);
void s3ck_free(struct s3ck *c);

/* raw's n bytes as base64 into out (at least S3CK_VALUE_MAX). */
void s3ck_b64(const unsigned char *raw, size_t n, char *out);
/* A value's bytes: 0 when value is a's base64 exactly, else -1. */
int s3ck_decode(enum s3ck_alg a, const char *value, unsigned char *raw);
/* The COMPOSITE value of parts checksums (cat: their bytes one after the
 * other) into out (S3CK_VALUE_MAX). */
void s3ck_composite(enum s3ck_alg a, const unsigned char *cat, int parts, char *out);

/* One request's checksum: the algorithm, the value it must match (given
 * in a header, or to come in a trailer), and the running checksum. */
struct s3ck_req {
    enum s3ck_alg alg;           /* S3CK_NONE: no checksum asked for */
    int given;                   /* a header gave want */
    int trailer;                 /* the value comes as the body's trailer */
    unsigned char want[S3CK_RAW_MAX];
    struct s3ck run;
};

/* r's checksum headers into q. must: the algorithm the body must be
 * checksummed with (a multipart upload's), S3CK_NONE when any may be; a
 * request that names none gets must's, computed (as it does when it
 * names only x-amz-sdk-checksum-algorithm). 0, or -1 with r answered 400
 * (InvalidRequest: more than one, a bad value, another algorithm than
 * must, an algorithm not known). */
int s3ck_req_open(struct http_req *r, struct s3ck_req *q, enum s3ck_alg must);
/* The body's decoded bytes. */
void s3ck_req_update(struct s3ck_req *q, const void *p, size_t n);
/* At the body's end (chunks: its decoder, for a trailer's value): 0 with
 * the value into out (S3CK_VALUE_MAX; "" when none was asked for), or -1
 * with the S3 error in *e (BadDigest on a mismatch, InvalidRequest when
 * the trailer is missing or bad) and *msg. */
int s3ck_req_end(struct s3ck_req *q, const struct awschunk *chunks, char *out, enum s3e *e,
                 const char **msg);
void s3ck_req_free(struct s3ck_req *q);

#endif
