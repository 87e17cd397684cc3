/*
 * mpuchecksum: a multipart upload's S3 checksums (mpuchecksum.c). The algorithm and
 * its type are chosen at creation (x-amz-checksum-algorithm,
 * x-amz-checksum-type) and kept in the upload's record; each part is
 * checksummed with it as it comes (put.c) and its value kept in the
 * part's record; at completion the parts' values the client lists are
 * checked, and the object gets the COMPOSITE value (the checksum of the
 * parts' checksums, "-N") or the FULL_OBJECT one (a CRC over every byte,
 * taken while the parts are joined).
 *
 * Threads: creation and the answers on the request's worker; joining on
 * the I/O pool.
 */
#ifndef SHOAL_TARGET_MPUCHECKSUM_H
#define SHOAL_TARGET_MPUCHECKSUM_H

#include <jansson.h>
#include <stddef.h>

#include "s3ck.h"

struct gbuf;
struct http_req;
struct objmeta;

/* CreateMultipartUpload's checksum headers into upload ("ckalg",
 * "cktype"): 0, or -1 with r answered 400 InvalidRequest. */
int mpuchecksum_create(struct http_req *r, json_t *upload);
/* ... and named in its answer. */
void mpuchecksum_create_headers(struct http_req *r, const json_t *upload);
/* The upload's algorithm (S3CK_NONE: none). */
enum s3ck_alg mpuchecksum_alg(const json_t *upload);
/* A part's value (kept in m by put.c) into its record ("ck"). */
void mpuchecksum_part_record(json_t *part, const struct objmeta *m);
/* A part's value as ListParts shows it. */
void mpuchecksum_part_xml(struct gbuf *b, const json_t *part);

/* The join: the object's checksum from its parts. */
struct mpuchecksum_join {
    enum s3ck_alg alg;
    int full;                    /* FULL_OBJECT: run takes every byte */
    struct s3ck run;
    unsigned char *cat;          /* the parts' values, in order */
    int parts;
    int partless;                /* FULL_OBJECT: a part had no value of alg */
};

void mpuchecksum_join_start(struct mpuchecksum_join *jn, const json_t *upload);
/* Part record pj, listed with value given (base64, NULL when the client
 * named none; given_alg its algorithm): 0, or -1 with *msg (InvalidPart). */
int mpuchecksum_join_part(struct mpuchecksum_join *jn, const json_t *pj, enum s3ck_alg given_alg,
                          const char *given, const char **msg);
void mpuchecksum_join_data(struct mpuchecksum_join *jn, const void *p, size_t n);
/* The object's value, kept in m (as put.c keeps a PUT's): 0, or -E2BIG
 * when m's metadata leaves no room. The parts' values are kept too (under
 * PARTCK_KEY, each one's base64 in turn) when they take under PARTCK_MAX
 * (S3 answers them in GetObjectAttributes): some 90 SHA-256 or 750 CRC32
 * parts. */
#define PARTCK_KEY ":partck"
#define PARTCK_MAX 4096
int mpuchecksum_join_end(struct mpuchecksum_join *jn, struct objmeta *m);
/* Part i's (from 0) value of alg, kept by the join, into out: 0, or -1
 * when none was kept. */
int mpuchecksum_part_value(const struct objmeta *m, enum s3ck_alg alg, int i,
                           char out[S3CK_VALUE_MAX]);
void mpuchecksum_join_free(struct mpuchecksum_join *jn);

#endif
