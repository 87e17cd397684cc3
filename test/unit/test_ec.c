/* ec: every erasure pattern up to p for every d + p up to 8 + 4 rebuilds
 * the exact bytes; parity equals ISA-L's reference (base) encoder and a
 * plain GF(2^8) dot product with the Cauchy rows; more than p lost is
 * refused without writing; the limits (16 + 8) work and are enforced. */
#include <isa-l/erasure_code.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ec.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint8_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint8_t)rng;
}

/* Every pattern of up to p lost slices (or the listed masks) rebuilds. */
static void try_code(int d, int p, size_t len, int all_patterns)
{
    struct ec_code c;
    int n = d + p;
    CHECK(ec_code_init(&c, d, p) == 0);
    uint8_t *orig[EC_DATA_MAX + EC_PARITY_MAX], *work[EC_DATA_MAX + EC_PARITY_MAX];
    uint8_t *ref[EC_PARITY_MAX];
    for (int i = 0; i < n; i++) {
        orig[i] = malloc(len);
        work[i] = malloc(len);
    }
    for (int i = 0; i < d; i++)
        for (size_t b = 0; b < len; b++)
            orig[i][b] = rnd();
    CHECK(ec_encode(&c, len, (const uint8_t *const *)orig, orig + d) == 0);
    /* against ISA-L's reference encoder with the same tables */
    for (int r = 0; r < p; r++)
        ref[r] = malloc(len);
    ec_encode_data_base((int)len, d, p, c.tables, orig, ref);
    int same = 1;
    for (int r = 0; r < p; r++)
        same &= !memcmp(ref[r], orig[d + r], len);
    CHECK(same);
    /* and against the definition: parity = Cauchy row . data */
    int dot = 1;
    for (int r = 0; r < p && dot; r++)
        for (size_t b = 0; b < len; b++) {
            unsigned char s = 0;
            for (int j = 0; j < d; j++)
                s ^= gf_mul(c.matrix[(d + r) * d + j], orig[j][b]);
            if (s != orig[d + r][b]) {
                dot = 0;
                break;
            }
        }
    CHECK(dot);
    int tried = 0, ok = 0;
    for (unsigned mask = 1; mask < (1u << n); mask++) {
        int lost = __builtin_popcount(mask);
        if (lost > p || (!all_patterns && rnd() > 8))
            continue;
        unsigned char present[EC_DATA_MAX + EC_PARITY_MAX];
        for (int i = 0; i < n; i++) {
            present[i] = !(mask & (1u << i));
            memcpy(work[i], orig[i], len);
            if (!present[i])
                memset(work[i], 0xa5, len);
        }
        int rc = ec_decode(&c, len, work, present);
        int right = rc == 0;
        for (int i = 0; i < n && right; i++)
            right = !memcmp(work[i], orig[i], len);
        tried++;
        ok += right;
    }
    CHECK(tried > 0 && ok == tried);
    if (ok != tried)
        fprintf(stderr, "d=%d p=%d: %d of %d patterns rebuilt\n", d, p, ok, tried);
    /* one more than p lost: refused, nothing written */
    if (p + 1 <= n) {
        unsigned char present[EC_DATA_MAX + EC_PARITY_MAX];
        for (int i = 0; i < n; i++) {
            present[i] = i > p;  /* slices 0..p lost */
            memcpy(work[i], orig[i], len);
            if (!present[i])
                memset(work[i], 0xa5, len);
        }
        CHECK(ec_decode(&c, len, work, present) == -1);
        CHECK(work[0][0] == 0xa5 && work[0][len - 1] == 0xa5);
    }
    for (int i = 0; i < n; i++) {
        free(orig[i]);
        free(work[i]);
    }
    for (int r = 0; r < p; r++)
        free(ref[r]);
    ec_code_free(&c);
}

int main(void)
{
    for (int d = 1; d <= 8; d++)
        for (int p = 1; p <= 4; p++)
            try_code(d, p, 64 * 5, 1);
    /* lengths ISA-L's vector loops do not divide */
    try_code(3, 2, 1000, 1);
    try_code(8, 4, 4097, 0);
    /* the limits, on sampled patterns */
    try_code(16, 8, 640, 0);
    try_code(10, 4, 256, 0);
    /* nothing lost: nothing to do */
    struct ec_code c;
    CHECK(ec_code_init(&c, 2, 1) == 0);
    uint8_t a[64] = {1}, b[64] = {2}, q[64];
    uint8_t *s[3] = {a, b, q};
    unsigned char all[3] = {1, 1, 1};
    CHECK(ec_decode(&c, 64, s, all) == 0 && a[0] == 1 && b[0] == 2);
    /* a slice longer than ISA-L counts is refused, not wrapped */
    CHECK(ec_encode(&c, (size_t)EC_LEN_MAX + 64, (const uint8_t *const *)s, s + 2) == -1);
    CHECK(ec_decode(&c, (size_t)EC_LEN_MAX + 64, s, all) == -1);
    ec_code_free(&c);
    /* what is refused */
    CHECK(ec_code_init(&c, 0, 1) == -1);
    CHECK(ec_code_init(&c, 17, 1) == -1);
    CHECK(ec_code_init(&c, 4, 0) == -1);
    CHECK(ec_code_init(&c, 4, 9) == -1);
    /* slice lengths */
    CHECK(ec_slice_len(0, 4) == 64);
    CHECK(ec_slice_len(1, 4) == 64);
    CHECK(ec_slice_len(256, 4) == 64);
    CHECK(ec_slice_len(257, 4) == 128);
    CHECK(ec_slice_len(8u << 20, 2) == 4u << 20);
    CHECK(ec_slice_len(1000001, 3) % 64 == 0 && ec_slice_len(1000001, 3) * 3 >= 1000001);
    return check_done("test_ec");
}
