#include "auth.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "http.h"
#include "sigv4.h"
#include "util.h"

#define TOKEN_PREFIX "shoal1."

int auth_host_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (!strcmp(host, "localhost"))
        return 1;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return 0;
}

int auth_init(struct auth *a, const struct conf *c, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    if (s3auth_init(&a->keys, c->auth_keys, c->n_auth_keys, err, errlen))
        return -1;
    if (a->keys.n == 0 && !c->allow_anonymous && !auth_host_is_loopback(c->host)) {
        snprintf(err, errlen,
                 "listening on %s with no auth_keys would let anyone who reaches it read "
                 "and change every object: configure auth_keys, listen on 127.0.0.1, or "
                 "set allow_anonymous true",
                 c->host);
        s3auth_free(&a->keys);
        return -1;
    }
    /* A key of its own for tokens, so a token can never pass for another
     * signature made with the cluster secret. */
    static const char label[] = "shoal bearer token v1";
    const char *s = c->cluster_secret ? c->cluster_secret : "";
    unsigned int len = sizeof(a->token_key);
    if (!HMAC(EVP_sha256(), s, (int)strlen(s), (const unsigned char *)label, sizeof(label) - 1,
              a->token_key, &len))
        abort();
    return 0;
}

void auth_free(struct auth *a)
{
    s3auth_free(&a->keys);
    OPENSSL_cleanse(a->token_key, sizeof(a->token_key));
}

int auth_enabled(const struct auth *a)
{
    return a->keys.n > 0;
}

static void token_mac(const struct auth *a, const char *access, size_t alen, int64_t expires,
                      char out[65])
{
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "%.*s\n%lld", (int)alen, access, (long long)expires);
    sigv4_hmac_hex(a->token_key, msg, n < (int)sizeof(msg) ? (size_t)n : sizeof(msg) - 1, out);
}

char *auth_token_new(const struct auth *a, const char *access, int64_t expires)
{
    char mac[65];
    token_mac(a, access, strlen(access), expires, mac);
    return xasprintf(TOKEN_PREFIX "%s.%lld.%s", access, (long long)expires, mac);
}

static int key_known(const struct auth *a, const char *access, size_t alen)
{
    for (int i = 0; i < a->keys.n; i++)
        if (strlen(a->keys.keys[i].access) == alen && !memcmp(a->keys.keys[i].access, access, alen))
            return 1;
    return 0;
}

#define FAIL(e, ...)                                                                       \
    do {                                                                                       \
        *code = (e);                                                                           \
        snprintf(msg, msglen, __VA_ARGS__);                                                    \
        return err_s3_status(e);                                                               \
    } while (0)

/* "shoal1.ACCESS.EXPIRES.MAC"; the access key may itself hold dots. */
static int check_token(const struct auth *a, const char *tok, time_t now,
                       struct s3auth_result *res, enum s3e *code, char *msg, size_t msglen)
{
    size_t pl = sizeof(TOKEN_PREFIX) - 1;
    if (strncmp(tok, TOKEN_PREFIX, pl))
        FAIL(S3E_ACCESS_DENIED, "the bearer token is not a Shoal token");
    const char *access = tok + pl;
    const char *mac = strrchr(access, '.');
    if (!mac || mac == access)
        FAIL(S3E_ACCESS_DENIED, "malformed bearer token");
    const char *exp = mac - 1;
    while (exp > access && *exp != '.')
        exp--;
    if (exp == access)
        FAIL(S3E_ACCESS_DENIED, "malformed bearer token");
    size_t alen = (size_t)(exp - access);
    int64_t e;
    if (parse_i64(exp + 1, (size_t)(mac - exp - 1), &e) || strlen(mac + 1) != 64)
        FAIL(S3E_ACCESS_DENIED, "malformed bearer token");
    char want[65];
    token_mac(a, access, alen, e, want);
    if (CRYPTO_memcmp(want, mac + 1, 64))
        FAIL(S3E_ACCESS_DENIED, "the bearer token's signature does not match");
    if (e < (int64_t)now)
        FAIL(S3E_ACCESS_DENIED, "the bearer token expired");
    if (!key_known(a, access, alen))
        FAIL(S3E_INVALID_ACCESS_KEY_ID, "the bearer token's access key is no longer configured");
    if (alen >= sizeof(res->access))
        FAIL(S3E_ACCESS_DENIED, "malformed bearer token");
    memset(res, 0, sizeof(*res));
    memcpy(res->access, access, alen);
    res->access[alen] = '\0';
    snprintf(res->payload, sizeof(res->payload), "UNSIGNED-PAYLOAD");
    return 0;
}

int auth_client(const struct auth *a, const struct http_req *r, time_t now,
                struct s3auth_result *res, enum s3e *code, char *msg, size_t msglen)
{
    const char *h = http_req_header(r, "Authorization");
    if (a->keys.n && h && !strncasecmp(h, "Bearer ", 7))
        return check_token(a, h + 7 + strspn(h + 7, " "), now, res, code, msg, msglen);
    return s3auth_check(&a->keys, r, now, res, code, msg, msglen);
}

int auth_presented(const struct http_req *r)
{
    char v[8];
    return http_req_header(r, "Authorization") ||
           http_query_get(r, "X-Amz-Signature", v, sizeof(v)) != -1 ||
           http_query_get(r, "X-Amz-Algorithm", v, sizeof(v)) != -1 ||
           http_query_get(r, "Signature", v, sizeof(v)) != -1 ||
           http_query_get(r, "AWSAccessKeyId", v, sizeof(v)) != -1;
}

int auth_is_v2(const struct http_req *r)
{
    const char *h = http_req_header(r, "Authorization");
    char v[8];
    if (h)
        return !strncmp(h, "AWS ", 4);
    return http_query_get(r, "AWSAccessKeyId", v, sizeof(v)) != -1;
}
