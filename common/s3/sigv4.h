/*
 * sigv4: AWS Signature Version 4, as pure functions (no I/O, no clock):
 * the signer used by the target's S3 backend client and the loader, and
 * the pieces the S3 API's verifier needs.
 *
 * Canonicalisation follows the AWS rules: the path is percent-decoded,
 * optionally normalised (dot segments removed, repeated slashes folded; S3
 * does not normalise), and re-encoded once with everything but unreserved
 * characters and '/' escaped; query parameters are re-encoded and sorted;
 * header names are lower-cased, values trimmed with inner runs of white
 * space folded, and repeated headers joined with ','.
 */
#ifndef SHOAL_SIGV4_H
#define SHOAL_SIGV4_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SIGV4_UNSIGNED "UNSIGNED-PAYLOAD"
#define SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct sigv4_creds {
    const char *access_key;
    const char *secret_key;
    const char *token;           /* session token, or NULL */
};

struct sigv4_hdr {
    const char *name;
    const char *value;
};

struct sigv4_req {
    const char *method;
    const char *path;            /* as on the wire (percent-encoded or raw) */
    const char *query;           /* without '?'; "" when none */
    const struct sigv4_hdr *hdrs;/* the headers to sign; must include host */
    int n_hdrs;
    const char *payload_hash;    /* hex SHA-256, SIGV4_UNSIGNED, or a STREAMING-* value */
};

struct sigv4_ctx {
    const char *region;
    const char *service;
    time_t now;
    int normalize;               /* normalise the path (not for s3) */
};

/* Canonical request; *signed_headers gets "a;b;c". Both malloc'd. */
char *sigv4_canonical_request(const struct sigv4_req *r, int normalize, char **signed_headers);
/* "AWS4-HMAC-SHA256\n<amzdate>\n<scope>\n<hex sha256 of canonical>" */
char *sigv4_string_to_sign(const char *amzdate, const char *scope, const char *canonical);
/* The signing key from the secret, date (YYYYMMDD), region and service. */
void sigv4_signing_key(const char *secret, const char *date, const char *region,
                       const char *service, uint8_t key[32]);
/* Hex HMAC-SHA256 of msg under key (65 bytes out). */
void sigv4_hmac_hex(const uint8_t key[32], const char *msg, size_t len, char out[65]);
/* amzdate "YYYYMMDDTHHMMSSZ" (17 bytes) and date "YYYYMMDD" (9 bytes). */
void sigv4_dates(time_t t, char amzdate[17], char date[9]);
void sigv4_sha256_hex(const void *p, size_t n, char out[65]);

/*
 * Header signing: the request must already carry x-amz-date (and, for S3,
 * x-amz-content-sha256 and x-amz-security-token when there is a token).
 * Returns the Authorization header value (malloc'd); *sig_out (65 bytes,
 * optional) gets the signature.
 */
char *sigv4_authorization(const struct sigv4_req *r, const struct sigv4_ctx *c,
                          const struct sigv4_creds *k, char *sig_out);
/*
 * The three header lines ("x-amz-date: ..", "x-amz-content-sha256: ..",
 * "Authorization: ..", each malloc'd) that sign an S3-style request to
 * hostport (the Host line as it is sent) for target (path and raw query)
 * with the access key ak and secret sk, at now.
 */
void sigv4_header_lines(const char *method, const char *hostport, const char *target,
                        const char *payload_hash, const char *region, const char *ak,
                        const char *sk, time_t now, char *lines[3]);
/*
 * Query (presigned URL) signing: returns the query string to append
 * (the request's own query, then X-Amz-* with X-Amz-Signature last).
 * r->query must not yet contain X-Amz-* parameters.
 */
char *sigv4_presign_query(const struct sigv4_req *r, const struct sigv4_ctx *c,
                          const struct sigv4_creds *k, int expires_s);
/* Percent-encode per AWS (unreserved kept; '/' kept when keep_slash). */
char *sigv4_uri_encode(const char *s, size_t n, int keep_slash);

#endif
