/*
 * s3ck: S3's additional checksums (see s3ck.h). CRC32 and CRC32C are
 * ISA-L's (the zlib and iSCSI polynomials); CRC64NVME (ISA-L has no
 * NVMe polynomial in this version) is a slicing-by-8 table here; the SHAs
 * are OpenSSL's.
 */
#include "s3ck.h"

#include <endian.h>
#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "awschunk.h"
#include "http.h"
#include "s3.h"

static const struct {
    const char *name, *header, *element;
    size_t len;
} algs[S3CK_ALGS] = {
    [S3CK_CRC32] = {"CRC32", "x-amz-checksum-crc32", "ChecksumCRC32", 4},
    [S3CK_CRC32C] = {"CRC32C", "x-amz-checksum-crc32c", "ChecksumCRC32C", 4},
    [S3CK_CRC64NVME] = {"CRC64NVME", "x-amz-checksum-crc64nvme", "ChecksumCRC64NVME", 8},
    [S3CK_SHA1] = {"SHA1", "x-amz-checksum-sha1", "ChecksumSHA1", 20},
    [S3CK_SHA256] = {"SHA256", "x-amz-checksum-sha256", "ChecksumSHA256", 32},
};

enum s3ck_alg s3ck_alg_named(const char *name)
{
    for (int a = S3CK_CRC32; a < S3CK_ALGS; a++)
        if (name && !strcasecmp(name, algs[a].name))
            return (enum s3ck_alg)a;
    return S3CK_NONE;
}

const char *s3ck_name(enum s3ck_alg a)
{
    return a > S3CK_NONE && a < S3CK_ALGS ? algs[a].name : "";
}

const char *s3ck_header(enum s3ck_alg a)
{
    return a > S3CK_NONE && a < S3CK_ALGS ? algs[a].header : "";
}

const char *s3ck_element(enum s3ck_alg a)
{
    return a > S3CK_NONE && a < S3CK_ALGS ? algs[a].element : "";
}

size_t s3ck_raw_len(enum s3ck_alg a)
{
    return a > S3CK_NONE && a < S3CK_ALGS ? algs[a].len : 0;
}

int s3ck_is_crc(enum s3ck_alg a)
{
    return a == S3CK_CRC32 || a == S3CK_CRC32C || a == S3CK_CRC64NVME;
}

/* ---- CRC64NVME: reflected, polynomial 0xad93d23594c93659 ------------------ */

#define NVME_POLY_REFL 0x9a6c9329ac4bc9b5ull

static uint64_t nvme_table[8][256];
static pthread_once_t nvme_once = PTHREAD_ONCE_INIT;

static void nvme_init(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ NVME_POLY_REFL : c >> 1;
        nvme_table[0][i] = c;
    }
    for (unsigned i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            nvme_table[t][i] =
                (nvme_table[t - 1][i] >> 8) ^ nvme_table[0][nvme_table[t - 1][i] & 0xff];
}

/* crc: the running value, kept inverted between calls (starts at 0). */
static uint64_t nvme_update(uint64_t crc, const unsigned char *p, size_t n)
{
    pthread_once(&nvme_once, nvme_init);
    uint64_t c = ~crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c ^= le64toh(w);
        c = nvme_table[7][c & 0xff] ^ nvme_table[6][(c >> 8) & 0xff] ^
            nvme_table[5][(c >> 16) & 0xff] ^ nvme_table[4][(c >> 24) & 0xff] ^
            nvme_table[3][(c >> 32) & 0xff] ^ nvme_table[2][(c >> 40) & 0xff] ^
            nvme_table[1][(c >> 48) & 0xff] ^ nvme_table[0][c >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ nvme_table[0][(c ^ *p++) & 0xff];
    return ~c;
}

/* ---- the running checksum ---------------------------------------------------- */

void s3ck_init(struct s3ck *c, enum s3ck_alg a)
{
    c->alg = a;
    c->crc = 0;
    c->md = NULL;
    if (a == S3CK_SHA1 || a == S3CK_SHA256) {
        c->md = EVP_MD_CTX_new();
        if (!c->md || !EVP_DigestInit_ex(c->md, a == S3CK_SHA1 ? EVP_sha1() : EVP_sha256(), NULL))
            abort();
    }
}

void s3ck_update(struct s3ck *c, const void *p, size_t n)
{
    switch (c->alg) {
    case S3CK_CRC32:
        c->crc = crc32_gzip_refl((uint32_t)c->crc, p, n);
        break;
    case S3CK_CRC32C:            /* ISA-L's iSCSI CRC takes and gives it uninverted */
        c->crc = ~crc32_iscsi((unsigned char *)p, (int)n, ~(uint32_t)c->crc) & 0xffffffffu;
        break;
    case S3CK_CRC64NVME:
        c->crc = nvme_update(c->crc, p, n);
        break;
    case S3CK_SHA1:
    case S3CK_SHA256:
        EVP_DigestUpdate(c->md, p, n);
        break;
    default:
        break;
    }
}

size_t s3ck_final(struct s3ck *c, unsigned char *raw)
{
    size_t len = s3ck_raw_len(c->alg);
    if (c->md) {
        EVP_DigestFinal_ex(c->md, raw, NULL);
    } else {
        for (size_t i = 0; i < len; i++)           /* big-endian */
            raw[i] = (unsigned char)(c->crc >> (8 * (len - 1 - i)));
    }
    s3ck_free(c);
    return len;
}

void s3ck_free(struct s3ck *c)
{
    EVP_MD_CTX_free(c->md);
    c->md = NULL;
}

void s3ck_b64(const unsigned char *raw, size_t n, char *out)
{
    EVP_EncodeBlock((unsigned char *)out, raw, (int)n);
}

int s3ck_decode(enum s3ck_alg a, const char *value, unsigned char *raw)
{
    size_t len = s3ck_raw_len(a);
    return len && s3_b64_decode(value, raw, len) == (int)len ? 0 : -1;
}

void s3ck_composite(enum s3ck_alg a, const unsigned char *cat, int parts, char *out)
{
    struct s3ck c;
    unsigned char raw[S3CK_RAW_MAX];
    s3ck_init(&c, a);
    s3ck_update(&c, cat, s3ck_raw_len(a) * (size_t)parts);
    size_t n = s3ck_final(&c, raw);
    s3ck_b64(raw, n, out);
    size_t l = strlen(out);
    snprintf(out + l, S3CK_VALUE_MAX - l, "-%d", parts);
}

/* ---- one request ---------------------------------------------------------------- */

/* The algorithm x-amz-trailer names, S3CK_NONE when it names no checksum;
 * -1 when it names one not known. */
static int trailer_alg(const char *t)
{
    if (!t || strncasecmp(t, "x-amz-checksum-", 15))
        return S3CK_NONE;
    for (int a = S3CK_CRC32; a < S3CK_ALGS; a++)
        if (!strcasecmp(t, algs[a].header))
            return a;
    return -1;
}

static int req_refuse(struct http_req *r, const char *msg)
{
    s3_fail(r, S3E_INVALID_REQUEST, "%s", msg);
    return -1;
}

int s3ck_req_open(struct http_req *r, struct s3ck_req *q, enum s3ck_alg must)
{
    memset(q, 0, sizeof(*q));
    for (int a = S3CK_CRC32; a < S3CK_ALGS; a++) {
        const char *v = http_req_header(r, algs[a].header);
        if (!v)
            continue;
        if (q->given)
            return req_refuse(r, "Expecting a single x-amz-checksum- header. Multiple "
                                 "checksum Types are not allowed.");
        if (s3ck_decode((enum s3ck_alg)a, v, q->want)) {   /* no value matches it */
            s3_fail(r, S3E_BAD_DIGEST, "The %s you specified did not match the calculated "
                    "checksum.", algs[a].header);
            return -1;
        }
        q->given = 1;
        q->alg = (enum s3ck_alg)a;
    }
    int ta = trailer_alg(http_req_header(r, "x-amz-trailer"));
    if (ta < 0)
        return req_refuse(r, "The value specified in the x-amz-trailer header is not "
                             "supported");
    if (ta != S3CK_NONE) {
        if (q->given)
            return req_refuse(r, "Expecting a single x-amz-checksum- header. Multiple "
                                 "checksum Types are not allowed.");
        q->trailer = 1;
        q->alg = (enum s3ck_alg)ta;
    }
    const char *sdk = http_req_header(r, "x-amz-sdk-checksum-algorithm");
    if (sdk) {
        enum s3ck_alg sa = s3ck_alg_named(sdk);
        if (sa == S3CK_NONE)
            return req_refuse(r, "Value for x-amz-sdk-checksum-algorithm header is invalid.");
        if (q->alg != S3CK_NONE && q->alg != sa)
            return req_refuse(r, "Value for x-amz-sdk-checksum-algorithm header is invalid: "
                                 "it names another algorithm than the checksum sent.");
        q->alg = sa;
    }
    if (q->alg == S3CK_NONE)
        q->alg = must;
    if (must != S3CK_NONE && q->alg != must) {
        s3_fail(r, S3E_INVALID_REQUEST, "Checksum Type mismatch occurred, expected checksum "
                "Type: %s, actual checksum Type: %s", algs[must].name, algs[q->alg].name);
        return -1;
    }
    if (q->alg != S3CK_NONE)
        s3ck_init(&q->run, q->alg);
    return 0;
}

void s3ck_req_update(struct s3ck_req *q, const void *p, size_t n)
{
    if (q->alg != S3CK_NONE)
        s3ck_update(&q->run, p, n);
}

int s3ck_req_end(struct s3ck_req *q, const struct awschunk *chunks, char *out, enum s3e *e,
                 const char **msg)
{
    out[0] = '\0';
    if (q->alg == S3CK_NONE)
        return 0;
    if (q->trailer) {
        char v[S3CK_VALUE_MAX + 8];
        if (!chunks || awschunk_trailer(chunks, algs[q->alg].header, v, sizeof(v)) < 0) {
            *e = S3E_INVALID_REQUEST;
            *msg = "the checksum named by x-amz-trailer is missing from the body's trailer";
            s3ck_free(&q->run);
            return -1;
        }
        if (s3ck_decode(q->alg, v, q->want)) {
            *e = S3E_BAD_DIGEST;
            *msg = "the checksum in the body's trailer did not match the calculated checksum";
            s3ck_free(&q->run);
            return -1;
        }
        q->given = 1;
    }
    unsigned char raw[S3CK_RAW_MAX];
    size_t n = s3ck_final(&q->run, raw);
    if (q->given && memcmp(raw, q->want, n)) {
        *e = S3E_BAD_DIGEST;
        *msg = "the checksum you specified did not match the calculated checksum";
        return -1;
    }
    s3ck_b64(raw, n, out);
    return 0;
}

void s3ck_req_free(struct s3ck_req *q)
{
    s3ck_free(&q->run);
}
