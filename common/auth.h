/*
 * auth: who may read or change data. One set of client credentials
 * (auth_keys, ACCESS_KEY:SECRET) serves the native and the S3 API on every
 * node, proxy or target. A client proves it holds a key by
 *
 *   - AWS Signature Version 4, in the Authorization header or a presigned
 *     query (curl --aws-sigv4, the AWS SDKs), or Version 2 (s3auth.c);
 *   - a bearer token from POST /v1/tokens: "shoal1.ACCESS.EXPIRES.HMAC",
 *     an HMAC-SHA256 over the access key and expiry with a key derived
 *     from the cluster secret, so every node checks it without a round
 *     trip; a token dies with its expiry or its access key.
 *
 * Requests between nodes and proxy redirects carry the cluster signature
 * instead (node_check_sig). With no auth_keys every client request is
 * served (a development cluster); a daemon refuses to listen on a
 * non-loopback address that way unless allow_anonymous is set.
 */
#ifndef SHOAL_AUTH_H
#define SHOAL_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"

#include "s3auth.h"

struct conf;
struct http_req;

#define AUTH_TOKEN_TTL_S 3600          /* default lifetime of a bearer token */
#define AUTH_TOKEN_MAX_TTL_S 604800    /* at most 7 days, as a presigned URL */

struct auth {
    struct s3auth keys;            /* the configured access keys */
    uint8_t token_key[32];         /* HMAC key of bearer tokens */
};

/* Keys from c->auth_keys, the token key from c->cluster_secret; refuses
 * anonymous service on a non-loopback c->host without allow_anonymous.
 * 0, or -1 with err. */
int auth_init(struct auth *a, const struct conf *c, char *err, size_t errlen);
void auth_free(struct auth *a);
/* Are client credentials required. */
int auth_enabled(const struct auth *a);
/* Is host (a listen address) a loopback one. */
int auth_host_is_loopback(const char *host);

/* A bearer token for access until expires (unix seconds): a new string. */
char *auth_token_new(const struct auth *a, const char *access, int64_t expires);

/*
 * Authenticate r's client at time now: a bearer token, or a SigV4/SigV2
 * signature. Returns 0 with res filled (res->anonymous when no keys are
 * configured), or the HTTP status of the failure (err_s3_status(*code))
 * with *code its S3 error (err.h) and msg the reason. Any thread.
 */
int auth_client(const struct auth *a, const struct http_req *r, time_t now,
                struct s3auth_result *res, enum s3e *code, char *msg, size_t msglen);

/* Does r present a client credential at all, good or bad: an Authorization
 * header, or a presigned query (SigV4 or SigV2)? */
int auth_presented(const struct http_req *r);
/* Is r signed with SigV2 (header "AWS AK:SIG", or AWSAccessKeyId in the
 * query)? SigV2 signs only a fixed list of query parameters. */
int auth_is_v2(const struct http_req *r);

#endif
