/*
 * s3req: how to reach an S3 or S3-compatible store, and signed requests to
 * it. Pure apart from reading the environment and ~/.aws/credentials in
 * s3_cfg_resolve(); used by the target's backend client and the loader.
 */
#ifndef SHOAL_S3REQ_H
#define SHOAL_S3REQ_H

#include <time.h>

struct s3_cfg {
    char *endpoint;              /* scheme://host[:port], no trailing slash */
    char *region;
    int vhost;                   /* virtual-host addressing (bucket.host) */
    char *access_key;            /* "" for anonymous requests */
    char *secret_key;
    char *token;                 /* "" when none */
};

/*
 * Resolve each setting from the first source that has it: the arguments
 * (NULL or "" skip), the standard variables (AWS_ENDPOINT_URL_S3,
 * AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE), then the profile
 * in ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE). With no endpoint,
 * AWS's regional one with virtual-host addressing; with an endpoint, path
 * addressing unless addressing is "virtual".
 */
void s3_cfg_resolve(struct s3_cfg *out, const char *endpoint, const char *region,
                    const char *addressing, const char *access_key, const char *secret_key,
                    const char *token, const char *profile);
/* The same from these settings alone (a backend profile's), reading
 * nothing: no endpoint is AWS's regional one, no region us-east-1, no
 * access and secret key anonymous requests. */
void s3_cfg_make(struct s3_cfg *out, const char *endpoint, const char *region,
                 const char *addressing, const char *access_key, const char *secret_key,
                 const char *token);
void s3_cfg_copy(struct s3_cfg *dst, const struct s3_cfg *src);
void s3_cfg_free(struct s3_cfg *c);

#define S3_REQ_MAX_HDRS 16

struct s3_req {
    char *url;
    char *hdrs[S3_REQ_MAX_HDRS];  /* "Name: value" lines, signed */
    int n;
};

/*
 * Build a request for bucket (and key, which may be NULL for bucket-level
 * calls). query is the raw query string ("" for none). payload_hash is the
 * hex SHA-256 of the body or SIGV4_UNSIGNED. extra: more header lines to
 * send and sign ("Name: value"), at most 8.
 */
void s3_req_build(struct s3_req *out, const struct s3_cfg *c, const char *method,
                  const char *bucket, const char *key, const char *query,
                  const char *payload_hash, const char *const *extra, int n_extra, time_t now);
void s3_req_free(struct s3_req *r);

#endif
