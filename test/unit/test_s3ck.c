/* s3ck: each algorithm against its published check value ("123456789"),
 * pieces fed at every split, values in base64, composites, and the
 * trailers of an aws-chunked body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awschunk.h"
#include "check.h"
#include "s3ck.h"

static const char CHECK_IN[] = "123456789";

/* a's checksum of p (n bytes) in pieces cut at `cut`, as hex. */
static void hex_of(enum s3ck_alg a, const char *p, size_t n, size_t cut, char *hex)
{
    struct s3ck c;
    unsigned char raw[S3CK_RAW_MAX];
    s3ck_init(&c, a);
    s3ck_update(&c, p, cut);
    s3ck_update(&c, p + cut, n - cut);
    size_t len = s3ck_final(&c, raw);
    for (size_t i = 0; i < len; i++)
        sprintf(hex + 2 * i, "%02x", raw[i]);
}

static void test_check_values(void)
{
    static const struct {
        enum s3ck_alg a;
        const char *hex;
    } want[] = {
        {S3CK_CRC32, "cbf43926"},
        {S3CK_CRC32C, "e3069283"},
        {S3CK_CRC64NVME, "ae8b14860a799888"},
        {S3CK_SHA1, "f7c3bc1d808e04732adf679965ccc34ca7ae3441"},
        {S3CK_SHA256, "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        for (size_t cut = 0; cut <= 9; cut++) {
            char hex[2 * S3CK_RAW_MAX + 1] = "";
            hex_of(want[i].a, CHECK_IN, 9, cut, hex);
            CHECK(!strcmp(hex, want[i].hex));
        }
    /* a long input through CRC64NVME's 8-byte loop, split anywhere */
    size_t n = 1000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)(i * 7 + 3);
    char whole[40], split[40];
    hex_of(S3CK_CRC64NVME, big, n, 0, whole);
    for (size_t cut = 1; cut < 20; cut++) {
        hex_of(S3CK_CRC64NVME, big, n, cut * 37, split);
        CHECK(!strcmp(whole, split));
    }
    free(big);
}

static void test_names_and_values(void)
{
    CHECK(s3ck_alg_named("crc32c") == S3CK_CRC32C);
    CHECK(s3ck_alg_named("CRC64NVME") == S3CK_CRC64NVME);
    CHECK(s3ck_alg_named("md5") == S3CK_NONE);
    CHECK(s3ck_alg_named(NULL) == S3CK_NONE);
    CHECK(!strcmp(s3ck_header(S3CK_SHA256), "x-amz-checksum-sha256"));
    CHECK(!strcmp(s3ck_element(S3CK_CRC32), "ChecksumCRC32"));
    CHECK(s3ck_is_crc(S3CK_CRC64NVME) && !s3ck_is_crc(S3CK_SHA1));
    /* what the AWS SDK sends for "hello world" */
    struct s3ck c;
    unsigned char raw[S3CK_RAW_MAX];
    char v[S3CK_VALUE_MAX];
    s3ck_init(&c, S3CK_CRC32);
    s3ck_update(&c, "hello world", 11);
    s3ck_b64(raw, s3ck_final(&c, raw), v);
    CHECK(!strcmp(v, "DUoRhQ=="));
    unsigned char back[S3CK_RAW_MAX];
    CHECK(s3ck_decode(S3CK_CRC32, "DUoRhQ==", back) == 0 && !memcmp(back, raw, 4));
    CHECK(s3ck_decode(S3CK_CRC32C, "DUoRhQ", back) == -1);        /* not padded */
    CHECK(s3ck_decode(S3CK_CRC64NVME, "DUoRhQ==", back) == -1);   /* 4 bytes, not 8 */
    CHECK(s3ck_decode(S3CK_SHA1, "", back) == -1);
    /* a composite: the checksum of the parts' checksums, "-N" */
    unsigned char cat[8] = {0x0d, 0x4a, 0x11, 0x85, 0x0d, 0x4a, 0x11, 0x85};
    s3ck_init(&c, S3CK_CRC32);
    s3ck_update(&c, cat, 8);
    s3ck_b64(raw, s3ck_final(&c, raw), v);
    char comp[S3CK_VALUE_MAX];
    s3ck_composite(S3CK_CRC32, cat, 2, comp);
    CHECK(!strncmp(comp, v, strlen(v)) && !strcmp(comp + strlen(v), "-2"));
    /* a SHA never finished is freed */
    s3ck_init(&c, S3CK_SHA256);
    s3ck_update(&c, "x", 1);
    s3ck_free(&c);
    s3ck_free(&c);
}

static int sink(void *arg, const char *p, size_t n)
{
    (void)arg;
    (void)p;
    (void)n;
    return 0;
}

static void test_trailers(void)
{
    static const char body[] = "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n"
                               "X-Other: a b \r\n\r\n";
    struct awschunk *c = awschunk_new(NULL, 5, sink, NULL);
    for (size_t i = 0; i < sizeof(body) - 1; i++)       /* a byte at a time */
        CHECK(awschunk_feed(c, body + i, 1) == 0);
    CHECK(awschunk_finish(c) == 0);
    char v[64];
    CHECK(awschunk_trailer(c, "X-AMZ-CHECKSUM-CRC32", v, sizeof(v)) == 8 &&
          !strcmp(v, "NhCmhg=="));
    CHECK(awschunk_trailer(c, "x-other", v, sizeof(v)) == 3 && !strcmp(v, "a b"));
    CHECK(awschunk_trailer(c, "x-other", v, 3) == -1);       /* does not fit */
    CHECK(awschunk_trailer(c, "x-amz-checksum", v, sizeof(v)) == -1);
    CHECK(awschunk_trailer(c, "x-missing", v, sizeof(v)) == -1);
    awschunk_free(c);
}

int main(void)
{
    test_check_values();
    test_names_and_values();
    test_trailers();
    return check_done("test_s3ck");
}
