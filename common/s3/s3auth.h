/*
 * s3auth: verification of AWS Signature Version 4 on S3 API requests,
 * against the access keys of the cluster configuration (s3_api_keys).
 *
 *   Authorization: AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/s3/aws4_request,
 *                  SignedHeaders=a;b, Signature=hex
 *   or a presigned URL: X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date,
 *                  X-Amz-Expires, X-Amz-SignedHeaders, X-Amz-Signature.
 *
 * The canonical request is rebuilt from what arrived (sigv4.c), so any
 * region and any key of the configuration verify. With no keys configured
 * every request is allowed (anonymous access).
 *
 * The payload: x-amz-content-sha256 names it. UNSIGNED-PAYLOAD is taken
 * as is; a hex SHA-256 is returned for the caller to check against the
 * body; STREAMING-AWS4-HMAC-SHA256-PAYLOAD bodies carry a signature per
 * chunk, chained from the request's (s3auth_chunk_sig).
 */
#ifndef SHOAL_S3AUTH_H
#define SHOAL_S3AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"

struct http_req;

#define S3AUTH_MAX_SKEW_S 900          /* 15 minutes, as S3 */
#define S3AUTH_MAX_EXPIRES_S 604800    /* presigned URLs live at most 7 days */
#define S3AUTH_STREAMING "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"

struct s3auth_key {
    char *access;
    char *secret;
};

struct s3auth {
    struct s3auth_key *keys;
    int n;
};

/* From "ACCESS:SECRET" strings. 0, or -1 with err. */
int s3auth_init(struct s3auth *a, char *const *list, int n, char *err, size_t errlen);
void s3auth_free(struct s3auth *a);

struct s3auth_result {
    int anonymous;               /* no keys configured: nothing was checked */
    char access[128];
    /* the payload as signed: "" (none given), "UNSIGNED-PAYLOAD", a hex
     * SHA-256 to check, or S3AUTH_STREAMING */
    char payload[80];
    /* for streaming bodies: the seed signature, scope and signing key */
    char seed_sig[65];
    char amzdate[32];
    char scope[128];
    uint8_t key[32];
};

/*
 * Check r's signature at time now. Returns 0 (res filled), or the HTTP
 * status of the failure (err_s3_status(*code)) with *code the S3 error
 * (err.h) and msg the reason.
 */
int s3auth_check(const struct s3auth *a, const struct http_req *r, time_t now,
                 struct s3auth_result *res, enum s3e *code, char *msg, size_t msglen);

/* The signature a chunk of a streaming body must carry, given the previous
 * one (the seed for the first) and the chunk's hex SHA-256. */
void s3auth_chunk_sig(const struct s3auth_result *res, const char *prev_sig,
                      const char *chunk_sha256, char out[65]);

#endif
