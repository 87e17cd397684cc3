/*
 * md5mb: RFC 1321's MD5, one stream at a time (md5_update) and several
 * at once (md5_update_lanes). Two streams go through a scalar kernel
 * that interleaves their steps (blocks2: one stream's steps wait on each
 * other, the other's fill the idle units); three or more, on a CPU with
 * AVX-512, through a vector kernel of 8 or 16 32-bit lanes (blocks8,
 * blocks16), which loads a block of each stream into a register apiece,
 * transposes the words so that register k holds word k of every stream,
 * and runs the 64 steps on every state at once; a stream with fewer
 * blocks than the longest reads a block of zeros and keeps its state
 * (masked add). Bytes short of a block wait in the state's buffer, so
 * lanes take any lengths: the partial block before and after each
 * stream's run is hashed one stream at a time.
 */
#include "md5mb.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};
static const unsigned char S[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

/* The message word step i takes. */
static int word(int i)
{
    switch (i >> 4) {
    case 0: return i;
    case 1: return (5 * i + 1) & 15;
    case 2: return (3 * i + 5) & 15;
    default: return (7 * i) & 15;
    }
}

static uint32_t load_le(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One step: a takes f's value, the word, the constant, the rotation. */
#define STEP1(f, a, b, c, d, i)                                  \
    do {                                                         \
        uint32_t t_ = a + (f) + K[i] + m[word(i)];               \
        a = b + (t_ << S[i] | t_ >> (32 - S[i]));                \
    } while (0)
#define FF(b, c, d) (d ^ (b & (c ^ d)))
#define GG(b, c, d) (c ^ (d & (b ^ c)))
#define HH(b, c, d) (b ^ c ^ d)
#define II(b, c, d) (c ^ (b | ~d))
/* Four steps of round R from step i, the registers rotating. */
#define QUAD(R, i)                                               \
    do {                                                         \
        STEP1(R(b, c, d), a, b, c, d, i);                        \
        STEP1(R(a, b, c), d, a, b, c, i + 1);                    \
        STEP1(R(d, a, b), c, d, a, b, i + 2);                    \
        STEP1(R(c, d, a), b, c, d, a, i + 3);                    \
    } while (0)

/* nb blocks at p into h, one stream. */
static void blocks1(uint32_t h[4], const unsigned char *p, size_t nb)
{
    for (; nb; nb--, p += 64) {
        uint32_t m[16];
        for (int k = 0; k < 16; k++)
            m[k] = load_le(p + 4 * k);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
        QUAD(FF, 0);
        QUAD(FF, 4);
        QUAD(FF, 8);
        QUAD(FF, 12);
        QUAD(GG, 16);
        QUAD(GG, 20);
        QUAD(GG, 24);
        QUAD(GG, 28);
        QUAD(HH, 32);
        QUAD(HH, 36);
        QUAD(HH, 40);
        QUAD(HH, 44);
        QUAD(II, 48);
        QUAD(II, 52);
        QUAD(II, 56);
        QUAD(II, 60);
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
    }
}

/* Two streams' nb blocks at once, their steps interleaved: one stream's
 * steps wait on each other, and the other's fill the idle units. */
static void blocks2(uint32_t h[4], const unsigned char *p, uint32_t g[4], const unsigned char *q,
                    size_t nb)
{
    for (; nb; nb--, p += 64, q += 64) {
        uint32_t m[16], n[16];
        for (int k = 0; k < 16; k++) {
            m[k] = load_le(p + 4 * k);
            n[k] = load_le(q + 4 * k);
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
        uint32_t e = g[0], f = g[1], x = g[2], y = g[3];
#define STEP2(R, a, b, c, d, e, f, x, y, i)                      \
        do {                                                     \
            STEP1(R(b, c, d), a, b, c, d, i);                    \
            uint32_t u_ = e + R(f, x, y) + K[i] + n[word(i)];    \
            e = f + (u_ << S[i] | u_ >> (32 - S[i]));            \
        } while (0)
#define QUAD2(R, i)                                              \
        do {                                                     \
            STEP2(R, a, b, c, d, e, f, x, y, i);                 \
            STEP2(R, d, a, b, c, y, e, f, x, i + 1);             \
            STEP2(R, c, d, a, b, x, y, e, f, i + 2);             \
            STEP2(R, b, c, d, a, f, x, y, e, i + 3);             \
        } while (0)
        QUAD2(FF, 0);
        QUAD2(FF, 4);
        QUAD2(FF, 8);
        QUAD2(FF, 12);
        QUAD2(GG, 16);
        QUAD2(GG, 20);
        QUAD2(GG, 24);
        QUAD2(GG, 28);
        QUAD2(HH, 32);
        QUAD2(HH, 36);
        QUAD2(HH, 40);
        QUAD2(HH, 44);
        QUAD2(II, 48);
        QUAD2(II, 52);
        QUAD2(II, 56);
        QUAD2(II, 60);
#undef QUAD2
#undef STEP2
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        g[0] += e;
        g[1] += f;
        g[2] += x;
        g[3] += y;
    }
}

void md5_init(struct md5 *c)
{
    c->h[0] = 0x67452301;
    c->h[1] = 0xefcdab89;
    c->h[2] = 0x98badcfe;
    c->h[3] = 0x10325476;
    c->len = 0;
}

/* Fill c's partial block from *d (at most to a block): the bytes taken. */
static size_t top_up(struct md5 *c, const unsigned char *d, size_t n)
{
    size_t have = (size_t)(c->len & 63), take = 0;
    if (have) {
        take = 64 - have < n ? 64 - have : n;
        memcpy(c->buf + have, d, take);
        c->len += take;
        if (have + take == 64)
            blocks1(c->h, c->buf, 1);
    }
    return take;
}

/* The tail short of a block into c's buffer (c->len is a block's end). */
static void keep_tail(struct md5 *c, const unsigned char *d, size_t n)
{
    memcpy(c->buf, d, n);
    c->len += n;
}

void md5_update(struct md5 *c, const void *data, size_t n)
{
    const unsigned char *d = data;
    size_t t = top_up(c, d, n);
    d += t;
    n -= t;
    if (!n)
        return;
    blocks1(c->h, d, n / 64);
    c->len += n / 64 * 64;
    keep_tail(c, d + n / 64 * 64, n % 64);
}

void md5_final(struct md5 *c, unsigned char out[16])
{
    uint64_t bits = c->len * 8;
    unsigned char pad[72] = {0x80};
    size_t have = (size_t)(c->len & 63);
    size_t plen = (have < 56 ? 56 : 120) - have;
    for (int i = 0; i < 8; i++)
        pad[plen + (size_t)i] = (unsigned char)(bits >> (8 * i));
    md5_update(c, pad, plen + 8);
    for (int i = 0; i < 16; i++)
        out[i] = (unsigned char)(c->h[i / 4] >> (8 * (i % 4)));
}

#if defined(__x86_64__)
#define AVX512 __attribute__((target("avx512f")))
/* From this many streams the vector lanes beat scalar pairs. On AMD's
 * Zen 4 here a lane of blocks8 steps at 455 MiB/s, of blocks16 at 315
 * (it splits 512-bit operations in two), one scalar stream at 690 and an
 * interleaved pair at 1,240 together: three lanes of blocks8 (1,365)
 * beat a pair and one alone (960); past eight, blocks16's lanes win. */
#define WIDE_MIN 3

/* r[0..15] rows -> columns, 32-bit elements. */
static AVX512 void transpose16(__m512i r[16])
{
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    /* u[4g + c], lane L: column 4L + c of rows 4g..4g+3 */
    __m512i u[16];
    for (int g = 0; g < 16; g += 4) {
        u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
        u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
        u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
        u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
    }
    /* the 4x4 of 128-bit blocks of each c across the groups */
    for (int c = 0; c < 4; c++) {
        __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
        __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
        __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
        __m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
        r[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
        r[8 + c] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        r[12 + c] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
    }
}

/* One step in W-bit lanes (W: 512 or 256): a takes F's value (a
 * ternary-logic table) of b, c, d, the word, the constant and the
 * rotation. */
#define VSTEP(W, F, a, b, c, d, j_)                                                    \
    do {                                                                              \
        __m##W##i t_ = _mm##W##_add_epi32(                                            \
            a, _mm##W##_add_epi32(m[word(j_)], _mm##W##_set1_epi32((int)K[j_])));       \
        t_ = _mm##W##_add_epi32(t_, _mm##W##_ternarylogic_epi32(b, c, d, F));         \
        a = _mm##W##_add_epi32(b, _mm##W##_rolv_epi32(t_, _mm##W##_set1_epi32(S[j_]))); \
    } while (0)
#define VQUAD(W, F, j_)                                                                \
    do {                                                                              \
        VSTEP(W, F, a, b, c, d, j_);                                                   \
        VSTEP(W, F, d, a, b, c, j_ + 1);                                               \
        VSTEP(W, F, c, d, a, b, j_ + 2);                                               \
        VSTEP(W, F, b, c, d, a, j_ + 3);                                               \
    } while (0)
#define VROUND(W, F, j_)                                                               \
    do {                                                                              \
        VQUAD(W, F, j_);                                                               \
        VQUAD(W, F, j_ + 4);                                                           \
        VQUAD(W, F, j_ + 8);                                                           \
        VQUAD(W, F, j_ + 12);                                                          \
    } while (0)
/* The 64 steps over the words m[], from the state a, b, c, d. */
#define VBLOCK(W)                                                                     \
    do {                                                                              \
        VROUND(W, 0xca, 0);      /* F: b ? c : d */                                   \
        VROUND(W, 0xe4, 16);     /* G: d ? b : c */                                   \
        VROUND(W, 0x96, 32);     /* H: b ^ c ^ d */                                   \
        VROUND(W, 0x39, 48);     /* I: c ^ (b | ~d) */                                \
    } while (0)

/*
 * Lane i takes nb[i] blocks at p[i], i < n <= 16, into st[i]->h. A lane
 * past its blocks (or past n) reads zeros and keeps its state.
 */
static AVX512 void blocks16(struct md5 *const *st, const unsigned char *const *p, const size_t *nb, int n)
{
    static const unsigned char zero[64];
    uint32_t hv[4][16] = {{0}};
    const unsigned char *at[16];
    size_t most = 0;
    for (int i = 0; i < 16; i++) {
        at[i] = i < n ? p[i] : zero;
        for (int k = 0; k < 4 && i < n; k++)
            hv[k][i] = st[i]->h[k];
        if (i < n && nb[i] > most)
            most = nb[i];
    }
    __m512i A = _mm512_loadu_si512(hv[0]), B = _mm512_loadu_si512(hv[1]);
    __m512i C = _mm512_loadu_si512(hv[2]), D = _mm512_loadu_si512(hv[3]);
    for (size_t j = 0; j < most; j++) {
        __mmask16 live = 0;
        __m512i m[16];
        for (int i = 0; i < 16; i++) {
            if (i < n && j < nb[i]) {
                live |= (__mmask16)(1u << i);
                m[i] = _mm512_loadu_si512(at[i] + 64 * j);
            } else {
                m[i] = _mm512_setzero_si512();
            }
        }
        transpose16(m);
        __m512i a = A, b = B, c = C, d = D;
        VBLOCK(512);
        A = _mm512_mask_add_epi32(A, live, A, a);
        B = _mm512_mask_add_epi32(B, live, B, b);
        C = _mm512_mask_add_epi32(C, live, C, c);
        D = _mm512_mask_add_epi32(D, live, D, d);
    }
    _mm512_storeu_si512(hv[0], A);
    _mm512_storeu_si512(hv[1], B);
    _mm512_storeu_si512(hv[2], C);
    _mm512_storeu_si512(hv[3], D);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            st[i]->h[k] = hv[k][i];
}

#define AVX512VL __attribute__((target("avx512f,avx512vl")))

/* r[0..7] rows -> columns, 32-bit elements. */
static AVX512VL void transpose8(__m256i r[8])
{
    __m256i t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
    }
    /* u[4g + c], lane L: column 4L + c of rows 4g..4g+3 */
    for (int g = 0; g < 8; g += 4) {
        u[g] = _mm256_unpacklo_epi64(t[g], t[g + 2]);
        u[g + 1] = _mm256_unpackhi_epi64(t[g], t[g + 2]);
        u[g + 2] = _mm256_unpacklo_epi64(t[g + 1], t[g + 3]);
        u[g + 3] = _mm256_unpackhi_epi64(t[g + 1], t[g + 3]);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x31);
    }
}

/* blocks16 in 256-bit registers, 8 lanes: on a core that splits 512-bit
 * operations in two (AMD's Zen 4), a lane steps nearly twice as fast. */
static AVX512VL void blocks8(struct md5 *const *st, const unsigned char *const *p, const size_t *nb, int n)
{
    static const unsigned char zero[64];
    uint32_t hv[4][8] = {{0}};
    const unsigned char *at[8];
    size_t most = 0;
    for (int i = 0; i < 8; i++) {
        at[i] = i < n ? p[i] : zero;
        for (int k = 0; k < 4 && i < n; k++)
            hv[k][i] = st[i]->h[k];
        if (i < n && nb[i] > most)
            most = nb[i];
    }
    __m256i A = _mm256_loadu_si256((const void *)hv[0]), B = _mm256_loadu_si256((const void *)hv[1]);
    __m256i C = _mm256_loadu_si256((const void *)hv[2]), D = _mm256_loadu_si256((const void *)hv[3]);
    for (size_t j = 0; j < most; j++) {
        __mmask8 live = 0;
        __m256i m[16], lo[8], hi[8];
        for (int i = 0; i < 8; i++) {
            if (i < n && j < nb[i]) {
                live |= (__mmask8)(1u << i);
                lo[i] = _mm256_loadu_si256((const void *)(at[i] + 64 * j));
                hi[i] = _mm256_loadu_si256((const void *)(at[i] + 64 * j + 32));
            } else {
                lo[i] = hi[i] = _mm256_setzero_si256();
            }
        }
        transpose8(lo);          /* words 0..7 of every lane */
        transpose8(hi);          /* words 8..15 */
        for (int k = 0; k < 8; k++) {
            m[k] = lo[k];
            m[8 + k] = hi[k];
        }
        __m256i a = A, b = B, c = C, d = D;
        VBLOCK(256);
        A = _mm256_mask_add_epi32(A, live, A, a);
        B = _mm256_mask_add_epi32(B, live, B, b);
        C = _mm256_mask_add_epi32(C, live, C, c);
        D = _mm256_mask_add_epi32(D, live, D, d);
    }
    _mm256_storeu_si256((void *)hv[0], A);
    _mm256_storeu_si256((void *)hv[1], B);
    _mm256_storeu_si256((void *)hv[2], C);
    _mm256_storeu_si256((void *)hv[3], D);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            st[i]->h[k] = hv[k][i];
}
#endif

/* k streams in pairs (blocks2), the odd one and a pair's longer tail
 * alone. */
static void blocks_pairs(struct md5 *const *c, const unsigned char *const *p, const size_t *nb, int k)
{
    int i = 0;
    for (; i + 1 < k; i += 2) {
        size_t both = nb[i] < nb[i + 1] ? nb[i] : nb[i + 1];
        blocks2(c[i]->h, p[i], c[i + 1]->h, p[i + 1], both);
        blocks1(c[i]->h, p[i] + 64 * both, nb[i] - both);
        blocks1(c[i + 1]->h, p[i + 1] + 64 * both, nb[i + 1] - both);
    }
    if (i < k)
        blocks1(c[i]->h, p[i], nb[i]);
}

int md5_lanes_wide(void)
{
#if defined(__x86_64__)
    static int wide = -1;
    if (wide < 0)
        wide = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
    return wide;
#else
    return 0;
#endif
}

void md5_update_lanes(struct md5 *const *c, const unsigned char *const *d, const size_t *n, int count)
{
    for (int base = 0; base < count; base += MD5_LANES) {
        int k = count - base < MD5_LANES ? count - base : MD5_LANES;
        struct md5 *const *cc = c + base;
        const unsigned char *p[MD5_LANES];
        size_t nb[MD5_LANES], left[MD5_LANES];
        for (int i = 0; i < k; i++) {
            size_t t = top_up(cc[i], d[base + i], n[base + i]);
            p[i] = d[base + i] + t;
            left[i] = n[base + i] - t;
            nb[i] = left[i] / 64;   /* c->len is at a block's end if left */
        }
#if defined(__x86_64__)
        if (k >= WIDE_MIN && md5_lanes_wide()) {
            if (k <= 8)
                blocks8(cc, p, nb, k);
            else
                blocks16(cc, p, nb, k);
        } else
#endif
            blocks_pairs(cc, p, nb, k);
        for (int i = 0; i < k; i++) {
            if (!left[i])
                continue;
            cc[i]->len += nb[i] * 64;
            keep_tail(cc[i], p[i] + nb[i] * 64, left[i] % 64);
        }
    }
}
