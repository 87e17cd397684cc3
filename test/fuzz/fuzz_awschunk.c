/* libFuzzer target for the aws-chunked decoder (streaming upload bodies
 * come from clients, to a proxy or to a target's S3 root). The first
 * input byte picks the mode and the declared length's low bits; the rest
 * is the body, fed in pieces whose sizes the input also drives; then its
 * trailers are looked up.
 *
 * Signed mode links a stand-in for s3auth_chunk_sig (the chunk's SHA-256
 * is its own "signature"), so the fuzzer can reach past the first chunk
 * and explore the framing of chained chunks; the real HMAC chain is
 * tested against AWS's example in test/unit/test_awschunk.c. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "awschunk.h"
#include "s3auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

void s3auth_chunk_sig(const struct s3auth_result *res, const char *prev_sig,
                      const char *chunk_sha256, char out[65])
{
    (void)res;
    (void)prev_sig;
    memcpy(out, chunk_sha256, 65);
}

static int sink(void *arg, const char *p, size_t n)
{
    uint64_t *total = arg;
    (void)p;
    *total += n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int is_signed = data[0] & 1;
    uint64_t want = (uint64_t)(data[0] >> 1) * 3 + data[1];
    size_t cap = (size_t)(data[1] & 63) + 1;   /* the trailer lookups' room */
    data += 2, size -= 2;
    struct s3auth_result signer;
    memset(&signer, 0, sizeof(signer));
    uint64_t total = 0;
    struct awschunk *c = awschunk_new(is_signed ? &signer : NULL, want, sink, &total);
    /* piece sizes: 1, 2, 3, ... wrapping, so lines split everywhere */
    size_t off = 0, step = 1;
    int rc = 0;
    while (off < size && rc == 0) {
        size_t k = step < size - off ? step : size - off;
        rc = awschunk_feed(c, (const char *)data + off, k);
        off += k;
        step = step % 97 + 1;
    }
    int fin = awschunk_finish(c);
    if (fin == AWSCHUNK_OK && total != want)
        __builtin_trap(); /* a complete body decodes to exactly its length */
    if (rc && fin != rc)
        __builtin_trap(); /* failures are sticky */
    /* trailers: whatever came, a lookup stays in bounds and NUL-ended */
    static const char *const names[] = {"x-amz-checksum-crc32", "x", "x-amz-checksum-sha256"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char v[64];
        int n = awschunk_trailer(c, names[i], v, cap);
        if (n >= 0 && (strlen(v) != (size_t)n || (size_t)n >= cap))
            __builtin_trap();
    }
    awschunk_free(c);
    return 0;
}
