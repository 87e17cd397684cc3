#include "s3auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "s3.h"
#include "sigv4.h"
#include "util.h"

int s3auth_init(struct s3auth *a, char *const *list, int n, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    a->keys = xcalloc((size_t)n + 1, sizeof(*a->keys));
    for (int i = 0; i < n; i++) {
        const char *c = strchr(list[i], ':');
        if (!c || c == list[i] || !c[1]) {
            snprintf(err, errlen, "auth_keys: '%s' is not ACCESS_KEY:SECRET", list[i]);
            s3auth_free(a);
            return -1;
        }
        a->keys[i].access = xstrndup(list[i], (size_t)(c - list[i]));
        a->keys[i].secret = xstrdup(c + 1);
        a->n = i + 1;
    }
    return 0;
}

void s3auth_free(struct s3auth *a)
{
    for (int i = 0; i < a->n; i++) {
        free(a->keys[i].access);
        OPENSSL_cleanse(a->keys[i].secret, strlen(a->keys[i].secret));
        free(a->keys[i].secret);
    }
    free(a->keys);
    memset(a, 0, sizeof(*a));
}

/* What a signature names, from the header or the query. */
struct sigparts {
    char credential[256];
    char signed_headers[1024];
    char signature[80];
    char amzdate[32];
    long expires;                /* presigned only; -1 otherwise */
};

#define FAIL(e, ...)                                                       \
    do {                                                                       \
        *code = (e);                                                           \
        snprintf(msg, msglen, __VA_ARGS__);                                    \
        return err_s3_status(e);                                               \
    } while (0)

/* "Name=value" pieces of the Authorization header after the algorithm. */
static int auth_field(const char *h, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    for (const char *p = h; (p = strstr(p, name)); p += nl) {
        if ((p == h || p[-1] == ' ' || p[-1] == ',') && p[nl] == '=') {
            const char *v = p + nl + 1;
            size_t vl = strcspn(v, ", ");
            if (vl >= outlen)
                return -1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return 0;
        }
    }
    return -1;
}

/* The configured key whose access key id is access, or NULL. */
static const struct s3auth_key *find_key(const struct s3auth *a, const char *access)
{
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->keys[i].access, access))
            return &a->keys[i];
    return NULL;
}

/* The raw request target up to its query, as the client signed it; the
 * caller frees it. */
static char *request_path(const struct http_req *r)
{
    const char *q = strchr(r->target, '?');
    return xstrndup(r->target, q ? (size_t)(q - r->target) : strlen(r->target));
}

/* ---- Signature Version 2 (presigned URLs of older SDKs, s3cmd) ---------- */

/* The query parameters SigV2 signs, in the byte order it signs them. */
static const char *const v2_subresources[] = {
    "accelerate", "acl", "analytics", "cors", "delete", "inventory", "lifecycle", "location",
    "logging", "metrics", "notification", "object-lock", "partNumber", "policy",
    "replication", "requestPayment", "response-cache-control", "response-content-disposition",
    "response-content-encoding", "response-content-language", "response-content-type",
    "response-expires", "restore", "select", "select-type", "storageClass", "tagging",
    "torrent", "uploadId", "uploads", "versionId", "versioning", "versions", "website",
};

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Does the raw query carry "name=..." (as opposed to a bare "name")? */
static int query_has_value(const char *q, const char *name)
{
    size_t nl = strlen(name);
    while (*q) {
        size_t n = strcspn(q, "&");
        if (n > nl && !strncmp(q, name, nl) && q[nl] == '=')
            return 1;
        q += n + (q[n] == '&');
    }
    return 0;
}

/* The string SigV2 signs: verb, Content-MD5, Content-Type, date (or
 * Expires), x-amz-* headers, then the resource with its subresources. */
static char *v2_string_to_sign(const struct http_req *r, const char *date, const char *path)
{
    struct gbuf b = {0};
    const char *md5 = http_req_header(r, "Content-MD5");
    const char *ct = http_req_header(r, "Content-Type");
    gbuf_str(&b, r->method_name);
    gbuf_str(&b, "\n");
    gbuf_str(&b, md5 ? md5 : "");
    gbuf_str(&b, "\n");
    gbuf_str(&b, ct ? ct : "");
    gbuf_str(&b, "\n");
    gbuf_str(&b, date);
    gbuf_str(&b, "\n");
    char **amz = xcalloc((size_t)r->n_hdrs + 1, sizeof(char *));
    int na = 0;
    for (int i = 0; i < r->n_hdrs; i++) {
        if (strncasecmp(r->hdrs[i].name, "x-amz-", 6))
            continue;
        char *h = xasprintf("%s:%s", r->hdrs[i].name, r->hdrs[i].value);
        for (char *c = h; *c && *c != ':'; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
        amz[na++] = h;
    }
    qsort(amz, (size_t)na, sizeof(char *), str_cmp);
    for (int i = 0; i < na; i++) {
        size_t nl = strcspn(amz[i], ":");
        if (i && !strncmp(amz[i - 1], amz[i], nl + 1)) {
            b.n--; /* the same name again: its values join with ',' */
            gbuf_str(&b, ",");
            gbuf_str(&b, amz[i] + nl + 1);
        } else {
            gbuf_str(&b, amz[i]);
        }
        gbuf_str(&b, "\n");
    }
    for (int i = 0; i < na; i++) /* after the loop: it compares with the one before */
        free(amz[i]);
    free(amz);
    gbuf_str(&b, path);
    int first = 1;
    for (size_t i = 0; i < ARRAY_LEN(v2_subresources); i++) {
        char v[1024];
        if (http_query_get(r, v2_subresources[i], v, sizeof(v)) < 0)
            continue;
        gbuf_str(&b, first ? "?" : "&");
        first = 0;
        gbuf_str(&b, v2_subresources[i]);
        if (query_has_value(r->query, v2_subresources[i])) {
            gbuf_str(&b, "=");
            gbuf_str(&b, v);
        }
    }
    return gbuf_take(&b);
}

static void hmac_sha1_b64(const char *secret, const char *msg, char out[64])
{
    unsigned char mac[20];
    unsigned int ml = sizeof(mac);
    HMAC(EVP_sha1(), secret, (int)strlen(secret), (const unsigned char *)msg, strlen(msg), mac,
         &ml);
    EVP_EncodeBlock((unsigned char *)out, mac, (int)ml);
}

/* SigV2, header ("AWS AK:sig") or query (AWSAccessKeyId, Signature,
 * Expires) form. The resource signed may carry the endpoint's /s3 or not,
 * depending on the client: both are tried. */
static int check_v2(const struct s3auth *a, const struct http_req *r, time_t now,
                    const char *auth, struct s3auth_result *res, enum s3e *code, char *msg,
                    size_t msglen)
{
    char access[128], sig[128], date[64];
    if (auth) {
        const char *c = strrchr(auth + 4, ':');
        if (!c || (size_t)(c - auth - 4) >= sizeof(access) || strlen(c + 1) >= sizeof(sig))
            FAIL(S3E_INVALID_ARGUMENT, "malformed AWS authorization header");
        snprintf(access, sizeof(access), "%.*s", (int)(c - auth - 4), auth + 4);
        snprintf(sig, sizeof(sig), "%s", c + 1);
        const char *d = http_req_header(r, "x-amz-date") ? "" : http_req_header(r, "Date");
        const char *when = http_req_header(r, "x-amz-date");
        if (!when)
            when = d;
        time_t t;
        if (!when || (s3_parse_http_date(when, &t) &&
                      s3_parse_time(when, "%a, %d %b %Y %H:%M:%S +0000", &t)))
            FAIL(S3E_ACCESS_DENIED, "AWS authentication requires a valid Date or x-amz-date");
        if (t < 0)               /* S3: no time at all, not a skewed one */
            FAIL(S3E_ACCESS_DENIED, "AWS authentication requires a valid Date or x-amz-date");
        if (t > now + S3AUTH_MAX_SKEW_S || t < now - S3AUTH_MAX_SKEW_S)
            FAIL(S3E_REQUEST_TIME_TOO_SKEWED,
                 "the difference between the request time and the server's time is too large");
        snprintf(date, sizeof(date), "%s", d ? d : "");
    } else {
        char exp[32];
        uint64_t e;
        if (http_query_get(r, "AWSAccessKeyId", access, sizeof(access)) < 0 ||
            http_query_get(r, "Signature", sig, sizeof(sig)) < 0 ||
            http_query_get(r, "Expires", exp, sizeof(exp)) < 0 ||
            parse_u64(exp, strlen(exp), &e))
            FAIL(S3E_INVALID_ARGUMENT, "a presigned URL needs AWSAccessKeyId, Signature and "
                                         "Expires");
        if ((uint64_t)now > e)
            FAIL(S3E_ACCESS_DENIED, "request has expired");
        snprintf(date, sizeof(date), "%s", exp);
    }
    const struct s3auth_key *k = find_key(a, access);
    if (!k)
        FAIL(S3E_INVALID_ACCESS_KEY_ID, "the access key id '%s' does not exist in our records",
             access);
    char *path = request_path(r);
    /* botocore signs a bucket as "/BUCKET/" while it sends "/BUCKET" */
    const char *bare = !strncmp(path, "/s3/", 4) ? path + 3 : path;
    char *slashed = bare[1] && !strchr(bare + 1, '/') ? xasprintf("%s/", bare) : NULL;
    const char *paths[3] = {path, bare != path ? bare : slashed, bare != path ? slashed : NULL};
    int ok = 0;
    for (int i = 0; i < 3 && !ok && paths[i]; i++) {
        char *sts = v2_string_to_sign(r, date, paths[i]);
        char want[64];
        hmac_sha1_b64(k->secret, sts, want);
        ok = strlen(want) == strlen(sig) && !CRYPTO_memcmp(want, sig, strlen(sig));
        free(sts);
    }
    free(path);
    free(slashed);
    if (!ok)
        FAIL(S3E_SIGNATURE_DOES_NOT_MATCH,
             "the request signature we calculated does not match the signature you "
             "provided; check your key and signing method");
    snprintf(res->access, sizeof(res->access), "%s", k->access);
    snprintf(res->payload, sizeof(res->payload), "%s", SIGV4_UNSIGNED);
    return 0;
}

/* ---- Signature Version 4 ----------------------------------------------- */

/* The presigned form's parts, from the X-Amz-* query parameters; alg is
 * X-Amz-Algorithm's value. */
static int v4_query_parts(const struct http_req *r, const char *alg, struct sigparts *sp,
                          enum s3e *code, char *msg, size_t msglen)
{
    char exp[32];
    if (strcmp(alg, "AWS4-HMAC-SHA256"))
        FAIL(S3E_AUTH_QUERY_ERROR,
             "X-Amz-Algorithm must be AWS4-HMAC-SHA256");
    if (http_query_get(r, "X-Amz-Credential", sp->credential, sizeof(sp->credential)) < 0 ||
        http_query_get(r, "X-Amz-SignedHeaders", sp->signed_headers,
                       sizeof(sp->signed_headers)) < 0 ||
        http_query_get(r, "X-Amz-Signature", sp->signature, sizeof(sp->signature)) < 0 ||
        http_query_get(r, "X-Amz-Date", sp->amzdate, sizeof(sp->amzdate)) < 0 ||
        http_query_get(r, "X-Amz-Expires", exp, sizeof(exp)) < 0)
        FAIL(S3E_AUTH_QUERY_ERROR,
             "a presigned URL needs X-Amz-Credential, X-Amz-Date, X-Amz-Expires, "
             "X-Amz-SignedHeaders and X-Amz-Signature");
    /* a number out of range is refused as S3 refuses it, 403 AccessDenied;
     * what is no number at all is a malformed query */
    uint64_t e;
    int neg = exp[0] == '-';
    if (parse_u64(exp + neg, strlen(exp + neg), &e))
        FAIL(S3E_AUTH_QUERY_ERROR, "X-Amz-Expires must be a number of seconds");
    if (neg && e)
        FAIL(S3E_ACCESS_DENIED, "X-Amz-Expires must be non-negative");
    if (e > S3AUTH_MAX_EXPIRES_S)
        FAIL(S3E_ACCESS_DENIED, "X-Amz-Expires must be less than a week (in seconds) that is %d",
             S3AUTH_MAX_EXPIRES_S);
    if (e < 1)
        FAIL(S3E_ACCESS_DENIED, "request has expired");
    sp->expires = (long)e;
    return 0;
}

/* The header form's parts, from the Authorization header auth and
 * X-Amz-Date. */
static int v4_header_parts(const struct http_req *r, const char *auth, struct sigparts *sp,
                           enum s3e *code, char *msg, size_t msglen)
{
    if (strncmp(auth, "AWS4-HMAC-SHA256 ", 17))
        FAIL(S3E_INVALID_REQUEST,
             "unsupported authorization: only AWS4-HMAC-SHA256 (SigV4) is accepted");
    if (auth_field(auth + 17, "Credential", sp->credential, sizeof(sp->credential)) ||
        auth_field(auth + 17, "SignedHeaders", sp->signed_headers,
                   sizeof(sp->signed_headers)) ||
        auth_field(auth + 17, "Signature", sp->signature, sizeof(sp->signature)))
        FAIL(S3E_AUTH_HEADER_MALFORMED,
             "the authorization header needs Credential, SignedHeaders and Signature");
    const char *d = http_req_header(r, "x-amz-date");
    if (!d)
        FAIL(S3E_ACCESS_DENIED, "SigV4 requests must carry X-Amz-Date");
    snprintf(sp->amzdate, sizeof(sp->amzdate), "%s", d);
    return 0;
}

/* Credential: ACCESS/DATE/REGION/SERVICE/aws4_request. Split into the
 * caller's cred, with parts[0..3] pointing into it. */
static int v4_split_credential(const char *credential, char cred[256], char *parts[5],
                               enum s3e *code, char *msg, size_t msglen)
{
    snprintf(cred, 256, "%s", credential);
    int np = 0;
    for (char *s = cred, *save = NULL, *t; np < 5 && (t = strtok_r(s, "/", &save)); s = NULL)
        parts[np++] = t;
    if (np != 5 || strlen(parts[1]) != 8 || strcmp(parts[4], "aws4_request"))
        FAIL(S3E_AUTH_HEADER_MALFORMED,
             "the credential '%s' is not ACCESS_KEY/YYYYMMDD/REGION/SERVICE/aws4_request",
             credential);
    return 0;
}

/* X-Amz-Date must fall on the credential's day (YYYYMMDD). A presigned URL
 * is valid for X-Amz-Expires seconds from that time, and no earlier than
 * the skew before it; a signed header, within the skew either side. */
static int v4_check_date(const struct sigparts *sp, const char *day, time_t now,
                         enum s3e *code, char *msg, size_t msglen)
{
    time_t t;
    if (s3_parse_time(sp->amzdate, "%Y%m%dT%H%M%SZ", &t) || strncmp(sp->amzdate, day, 8))
        FAIL(S3E_ACCESS_DENIED, "X-Amz-Date '%s' is not YYYYMMDDTHHMMSSZ of the credential's day",
             sp->amzdate);
    if (sp->expires >= 0) {
        if (now > t + sp->expires)
            FAIL(S3E_ACCESS_DENIED, "request has expired");
        if (t > now + S3AUTH_MAX_SKEW_S)
            FAIL(S3E_ACCESS_DENIED, "request is not yet valid");
    } else if (t > now + S3AUTH_MAX_SKEW_S || t < now - S3AUTH_MAX_SKEW_S) {
        FAIL(S3E_REQUEST_TIME_TOO_SKEWED,
             "the difference between the request time and the server's time is too large");
    }
    return 0;
}

/* The headers named in SignedHeaders (';'-separated), as they arrived:
 * every occurrence of each, in that order; *nh gets how many. NULL when a
 * named header is missing or named twice (*nh then -1; each request
 * header is taken at most once, so the array never overflows); otherwise
 * the caller frees the array (its strings are r's). */
static struct sigv4_hdr *v4_signed_headers(const struct http_req *r, const char *signed_headers,
                                           int *nh)
{
    struct sigv4_hdr *hs = xcalloc((size_t)r->n_hdrs + 1, sizeof(*hs));
    int missing = 0, twice = 0;
    char names[1024];
    *nh = 0;
    snprintf(names, sizeof(names), "%s", signed_headers);
    for (char *s = names, *save = NULL, *n; !twice && (n = strtok_r(s, ";", &save)); s = NULL) {
        int found = 0;
        for (int j = 0; j < *nh; j++)
            twice |= !strcasecmp(hs[j].name, n);
        for (int i = 0; !twice && i < r->n_hdrs; i++) {
            if (!strcasecmp(r->hdrs[i].name, n)) {
                hs[*nh].name = r->hdrs[i].name;
                hs[(*nh)++].value = r->hdrs[i].value;
                found = 1;
            }
        }
        missing |= !found;
    }
    if (missing || twice) {
        free(hs);
        *nh = twice ? -1 : 0;
        return NULL;
    }
    return hs;
}

/* The signature r should carry, into want: the canonical request over the
 * headers hs (nh of them) and the payload hash ph, signed with res->key
 * for res->scope (both already set). */
static void v4_signature(const struct http_req *r, const struct sigparts *sp,
                         const struct sigv4_hdr *hs, int nh, const char *ph,
                         const struct s3auth_result *res, char want[65])
{
    char *path = request_path(r);
    /* a presigned URL signs its query without its own signature */
    char *query = sp->expires >= 0 ? s3_query_without(r->query, "X-Amz-Signature=")
                                   : xstrdup(r->query);
    struct sigv4_req sr = {.method = r->method_name, .path = path, .query = query,
                           .hdrs = hs, .n_hdrs = nh, .payload_hash = ph};
    char *sh = NULL;
    char *canon = sigv4_canonical_request(&sr, 0, &sh);
    char *sts = sigv4_string_to_sign(sp->amzdate, res->scope, canon);
    sigv4_hmac_hex(res->key, sts, strlen(sts), want);
    free(sts);
    free(canon);
    free(sh);
    free(query);
    free(path);
}

/* SigV4, header or presigned form (sp->expires >= 0), once sp is read:
 * the credential's key, the date, the signed headers and payload hash,
 * then the signature. On success res also carries what a streaming body's
 * chunk signatures need. */
static int check_v4(const struct s3auth *a, const struct http_req *r, time_t now,
                    const struct sigparts *sp, struct s3auth_result *res, enum s3e *code,
                    char *msg, size_t msglen)
{
    int presigned = sp->expires >= 0;
    char *parts[5] = {0}, cred[256];
    int st = v4_split_credential(sp->credential, cred, parts, code, msg, msglen);
    if (st)
        return st;
    const struct s3auth_key *k = find_key(a, parts[0]);
    if (!k)
        FAIL(S3E_INVALID_ACCESS_KEY_ID,
             "the access key id '%s' does not exist in our records", parts[0]);
    if ((st = v4_check_date(sp, parts[1], now, code, msg, msglen)))
        return st;
    int nh;
    struct sigv4_hdr *hs = v4_signed_headers(r, sp->signed_headers, &nh);
    if (!hs && nh < 0)
        FAIL(S3E_SIGNATURE_DOES_NOT_MATCH, "SignedHeaders names a header twice");
    if (!hs)
        FAIL(S3E_SIGNATURE_DOES_NOT_MATCH, "a header named in SignedHeaders is missing");
    const char *ph = presigned ? SIGV4_UNSIGNED : http_req_header(r, "x-amz-content-sha256");
    /* The native API, unlike S3, does not require the header: a client
     * without it (curl --aws-sigv4 before 8.x) signs the hash of an empty
     * payload, and the body is not checked against it. */
    int native = r->on_error != s3_error_reply;
    if (!ph && native)
        ph = SIGV4_EMPTY_SHA256;
    if (!ph) {
        free(hs);
        FAIL(S3E_INVALID_REQUEST, "missing required header for this request: "
                                    "x-amz-content-sha256");
    }
    snprintf(res->scope, sizeof(res->scope), "%s/%s/%s/aws4_request", parts[1], parts[2],
             parts[3]);
    sigv4_signing_key(k->secret, parts[1], parts[2], parts[3], res->key);
    char want[65];
    v4_signature(r, sp, hs, nh, ph, res, want);
    free(hs);
    if (strlen(sp->signature) != 64 || CRYPTO_memcmp(want, sp->signature, 64))
        FAIL(S3E_SIGNATURE_DOES_NOT_MATCH,
             "the request signature we calculated does not match the signature you "
             "provided; check your key and signing method");
    snprintf(res->access, sizeof(res->access), "%s", k->access);
    snprintf(res->payload, sizeof(res->payload), "%s",
             native && !http_req_header(r, "x-amz-content-sha256") ? "" : ph);
    memcpy(res->seed_sig, want, sizeof(want));
    snprintf(res->amzdate, sizeof(res->amzdate), "%s", sp->amzdate);
    return 0;
}

int s3auth_check(const struct s3auth *a, const struct http_req *r, time_t now,
                 struct s3auth_result *res, enum s3e *code, char *msg, size_t msglen)
{
    memset(res, 0, sizeof(*res));
    const char *auth = http_req_header(r, "Authorization");
    char alg[64];
    int presigned = http_query_get(r, "X-Amz-Algorithm", alg, sizeof(alg)) >= 0;
    if (a->n == 0) {
        res->anonymous = 1;
        const char *ph = http_req_header(r, "x-amz-content-sha256");
        snprintf(res->payload, sizeof(res->payload), "%s", ph ? ph : "");
        return 0;
    }
    char v2[8];
    if ((auth && !strncmp(auth, "AWS ", 4)) ||
        (!auth && !presigned && http_query_get(r, "AWSAccessKeyId", v2, sizeof(v2)) != -1))
        return check_v2(a, r, now, auth, res, code, msg, msglen);
    if (!auth && !presigned)
        FAIL(S3E_ACCESS_DENIED, "anonymous access is not allowed: sign the request");
    /* the presigned form wins when a request carries both */
    struct sigparts sp = {.expires = -1};
    int st = presigned ? v4_query_parts(r, alg, &sp, code, msg, msglen)
                       : v4_header_parts(r, auth, &sp, code, msg, msglen);
    if (st)
        return st;
    return check_v4(a, r, now, &sp, res, code, msg, msglen);
}

void s3auth_chunk_sig(const struct s3auth_result *res, const char *prev_sig,
                      const char *chunk_sha256, char out[65])
{
    char *sts = xasprintf("AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s", res->amzdate,
                          res->scope, prev_sig, SIGV4_EMPTY_SHA256, chunk_sha256);
    sigv4_hmac_hex(res->key, sts, strlen(sts), out);
    free(sts);
}
