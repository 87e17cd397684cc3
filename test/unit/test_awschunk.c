/* awschunk: AWS's published chunked-upload example (decoded whole, split
 * at every byte, tampered), and framings the decoder must refuse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awschunk.h"
#include "check.h"
#include "s3auth.h"
#include "sigv4.h"
#include "util.h"

#define EX_SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
/* The example's seed and chunk signatures (see test_s3auth.c). */
#define EX_SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define EX_SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define EX_SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define EX_SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
#define EX_LEN 66560

/* What the example request's verification yields (s3auth_check). */
static struct s3auth_result example_signer(void)
{
    struct s3auth_result s;
    memset(&s, 0, sizeof(s));
    snprintf(s.payload, sizeof(s.payload), "%s", S3AUTH_STREAMING);
    snprintf(s.seed_sig, sizeof(s.seed_sig), "%s", EX_SEED);
    snprintf(s.amzdate, sizeof(s.amzdate), "20130524T000000Z");
    snprintf(s.scope, sizeof(s.scope), "20130524/us-east-1/s3/aws4_request");
    sigv4_signing_key(EX_SK, "20130524", "us-east-1", "s3", s.key);
    return s;
}

/* The example body: 64 KiB of 'a', 1 KiB of 'a', the final chunk. */
static char *example_body(size_t *len)
{
    struct gbuf b = {0};
    char *a = xmalloc(65536);
    memset(a, 'a', 65536);
    gbuf_str(&b, "10000;chunk-signature=" EX_SIG1 "\r\n");
    gbuf_add(&b, a, 65536);
    gbuf_str(&b, "\r\n400;chunk-signature=" EX_SIG2 "\r\n");
    gbuf_add(&b, a, 1024);
    gbuf_str(&b, "\r\n0;chunk-signature=" EX_SIG3 "\r\n\r\n");
    free(a);
    *len = b.n;
    return gbuf_take(&b);
}

struct sink {
    struct gbuf got;
    int stop_after;              /* > 0: refuse once this many bytes came */
};

static int sink_out(void *arg, const char *p, size_t n)
{
    struct sink *s = arg;
    gbuf_add(&s->got, p, n);
    return s->stop_after > 0 && s->got.n >= (size_t)s->stop_after ? 7 : 0;
}

/* Decode body in pieces of step bytes (0: whole); the feed's first
 * failure, else finish's answer. */
static int decode(const struct s3auth_result *signer, uint64_t want, const char *body,
                  size_t len, size_t step, struct sink *s)
{
    struct awschunk *c = awschunk_new(signer, want, sink_out, s);
    int rc = 0;
    for (size_t off = 0; off < len && !rc;) {
        size_t k = step && step < len - off ? step : len - off;
        rc = awschunk_feed(c, body + off, k);
        off += k;
    }
    if (!rc)
        rc = awschunk_finish(c);
    awschunk_free(c);
    return rc;
}

static int decode_str(const struct s3auth_result *signer, uint64_t want, const char *body)
{
    struct sink s = {0};
    int rc = decode(signer, want, body, strlen(body), 0, &s);
    gbuf_free(&s.got);
    return rc;
}

static int all_a(const struct gbuf *g, size_t n)
{
    if (g->n != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (g->p[i] != 'a')
            return 0;
    return 1;
}

static void test_example(void)
{
    struct s3auth_result sg = example_signer();
    size_t len;
    char *body = example_body(&len);
    CHECK(len == 66824); /* the example's Content-Length */
    size_t steps[] = {0, 1, 2, 3, 7, 64, 4096, 65557};
    for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
        struct sink s = {0};
        CHECK(decode(&sg, EX_LEN, body, len, steps[i], &s) == AWSCHUNK_OK);
        CHECK(all_a(&s.got, EX_LEN));
        gbuf_free(&s.got);
    }
    /* the same framing unsigned: signatures are ignored */
    struct sink s = {0};
    CHECK(decode(NULL, EX_LEN, body, len, 0, &s) == AWSCHUNK_OK && all_a(&s.got, EX_LEN));
    gbuf_free(&s.got);

    /* one byte of data changed, in the first and in the second chunk */
    size_t at[] = {100, 65536 + 100 + 100};
    for (size_t i = 0; i < ARRAY_LEN(at); i++) {
        body[at[i]] = 'b';
        struct sink t = {0};
        CHECK(decode(&sg, EX_LEN, body, len, 0, &t) == AWSCHUNK_BADSIG);
        gbuf_free(&t.got);
        body[at[i]] = 'a';
    }
    /* a signature changed (the final chunk's too) */
    char *sig3 = strstr(body + 65536, EX_SIG3);
    sig3[10] = sig3[10] == '0' ? '1' : '0';
    {
        struct sink t = {0};
        CHECK(decode(&sg, EX_LEN, body, len, 0, &t) == AWSCHUNK_BADSIG);
        gbuf_free(&t.got);
    }
    free(body);
    /* the wrong seed: the first chunk fails */
    struct s3auth_result other = sg;
    other.seed_sig[0] = other.seed_sig[0] == 'a' ? 'b' : 'a';
    body = example_body(&len);
    struct sink t = {0};
    CHECK(decode(&other, EX_LEN, body, len, 0, &t) == AWSCHUNK_BADSIG);
    gbuf_free(&t.got);
    /* a declared length one off either way */
    CHECK(decode(&sg, EX_LEN - 1, body, len, 0, &t) == AWSCHUNK_MALFORMED);
    gbuf_free(&t.got);
    CHECK(decode(&sg, EX_LEN + 1, body, len, 0, &t) == AWSCHUNK_MALFORMED);
    gbuf_free(&t.got);
    /* cut short anywhere: never complete */
    size_t cuts[] = {0, 5, 90, 65536, len - 3, len - 1};
    for (size_t i = 0; i < ARRAY_LEN(cuts); i++) {
        CHECK(decode(&sg, EX_LEN, body, cuts[i], 0, &t) == AWSCHUNK_MALFORMED);
        gbuf_free(&t.got);
    }
    /* bytes after the end */
    char *longer = xmalloc(len + 2);
    memcpy(longer, body, len);
    memcpy(longer + len, "\r\n", 2);
    CHECK(decode(&sg, EX_LEN, longer, len + 2, 0, &t) == AWSCHUNK_MALFORMED);
    gbuf_free(&t.got);
    CHECK(decode(&sg, EX_LEN, longer, len + 1, 1, &t) == AWSCHUNK_MALFORMED);
    gbuf_free(&t.got);
    free(longer);
    free(body);
}

/* Malformed framings, unsigned (the structure alone decides). */
static void test_framing(void)
{
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_OK);
    CHECK(decode_str(NULL, 0, "0\r\n\r\n") == AWSCHUNK_OK);
    CHECK(decode_str(NULL, 5, "5;ext=1\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_OK);
    CHECK(decode_str(NULL, 8, "3\r\nabc\r\n5\r\ndefgh\r\n0\r\n\r\n") == AWSCHUNK_OK);
    CHECK(decode_str(NULL, 10, "A\r\n0123456789\r\n0\r\n\r\n") == AWSCHUNK_OK);
    /* trailers (STREAMING-UNSIGNED-PAYLOAD-TRAILER) */
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n") ==
          AWSCHUNK_OK);
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n0\r\nno-colon\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n0\r\n:value\r\n\r\n") == AWSCHUNK_MALFORMED);
    /* missing CRLF after the data, or only half of it */
    CHECK(decode_str(NULL, 5, "5\r\nhello0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\r\nhello\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\r\nhello\r0\r\n\r\n") == AWSCHUNK_MALFORMED);
    /* bare LF, CR without LF, in a size line */
    CHECK(decode_str(NULL, 5, "5\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\rhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n0\r\n\n") == AWSCHUNK_MALFORMED);
    /* bad hex, no digits, a sign, white space, too many digits */
    CHECK(decode_str(NULL, 5, "5g\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, ";x\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "+5\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, " 5\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5 \r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "00000000000000005\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "0000000000000005\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_OK);
    CHECK(decode_str(NULL, 5, "ffffffffffffffff\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    /* an oversized size line (a long extension) */
    char big[400];
    memset(big, 'x', sizeof(big));
    memcpy(big, "5;", 2);
    memcpy(big + 300, "\r\nhello\r\n0\r\n\r\n", 15);
    CHECK(decode_str(NULL, 5, big) == AWSCHUNK_MALFORMED);
    /* chunks past the declared length, the end before it */
    CHECK(decode_str(NULL, 4, "5\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 6, "5\r\nhello\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    /* data shorter than its size; the final line missing; extra bytes */
    CHECK(decode_str(NULL, 5, "5\r\nhell\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n0\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n0\r\n\r\nx") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(NULL, 5, "5\r\nhello\r\n0\r\n\r\n0\r\n\r\n") == AWSCHUNK_MALFORMED);
    /* an empty body */
    CHECK(decode_str(NULL, 0, "") == AWSCHUNK_MALFORMED);
    /* out() refusing stops the decoder with its value, for good */
    struct sink s = {.stop_after = 3};
    struct awschunk *c = awschunk_new(NULL, 8, sink_out, &s);
    CHECK(awschunk_feed(c, "8\r\nabcdefgh\r\n", 13) == 7);
    CHECK(awschunk_feed(c, "0\r\n\r\n", 5) == 7 && awschunk_finish(c) == 7);
    awschunk_free(c);
    gbuf_free(&s.got);
}

/* Signed framing: the signature extension is exact, and there are no
 * trailers. */
static void test_signed_framing(void)
{
    struct s3auth_result sg = example_signer();
    /* the example's final chunk alone makes no valid body (the chain
     * starts at the seed), but its framing is checked first */
    CHECK(decode_str(&sg, 0, "0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(&sg, 0, "0;chunk-signature=" EX_SIG3 "\r\n\r\n") == AWSCHUNK_BADSIG);
    CHECK(decode_str(&sg, 0, "0;chunk-signature=" EX_SIG3 "0\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(&sg, 0, "0;chunk-signature=B6C6EA8A5354EAF15B3CB7646744F4275B71EA724FED81CE"
                             "B9323E279D449DF9\r\n\r\n") == AWSCHUNK_MALFORMED);
    CHECK(decode_str(&sg, 0, "0;chunk-signatur=" EX_SIG3 "x\r\n\r\n") == AWSCHUNK_MALFORMED);
    /* a valid empty object: the final chunk signed from the seed */
    char sig[65], body[200];
    s3auth_chunk_sig(&sg, sg.seed_sig, SIGV4_EMPTY_SHA256, sig);
    snprintf(body, sizeof(body), "0;chunk-signature=%s\r\n\r\n", sig);
    CHECK(decode_str(&sg, 0, body) == AWSCHUNK_OK);
    snprintf(body, sizeof(body), "0;chunk-signature=%s\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n",
             sig);
    CHECK(decode_str(&sg, 0, body) == AWSCHUNK_MALFORMED);
}

int main(void)
{
    test_example();
    test_framing();
    test_signed_framing();
    return check_done("test_awschunk");
}
