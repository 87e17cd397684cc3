/* md5mb against OpenSSL's MD5: RFC 1321's vectors, then streams of random
 * lengths fed in random pieces, one at a time and in lanes of 1 to 20
 * streams (past MD5_LANES, so two turns), starting with partial blocks. */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "md5mb.h"

#define STREAMS 20
#define MAXLEN 5000

static void ref_md5(const unsigned char *d, size_t n, unsigned char out[16])
{
    unsigned int len = 0;
    EVP_Digest(d, n, out, &len, EVP_md5(), NULL);
}

static unsigned rnd(void)
{
    static unsigned long long s = 0x9e3779b97f4a7c15ULL;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (unsigned)(s >> 11);
}

static void vectors(void)
{
    static const char *in[] = {"", "a", "abc", "message digest", "abcdefghijklmnopqrstuvwxyz",
        "12345678901234567890123456789012345678901234567890123456789012345678901234567890"};
    static const char *hex[] = {"d41d8cd98f00b204e9800998ecf8427e", "0cc175b9c0f1b6a831c399e269772661",
        "900150983cd24fb0d6963f7d28e17f72", "f96b697d7cb7938d525a2f31aaf161d0",
        "c3fcd3d76192e4007dfb496cca67e13b", "57edf4a22be3c955ac49da2e2107b67a"};
    for (int i = 0; i < 6; i++) {
        struct md5 c;
        unsigned char out[16];
        char s[33];
        md5_init(&c);
        md5_update(&c, in[i], strlen(in[i]));
        md5_final(&c, out);
        for (int k = 0; k < 16; k++)
            snprintf(s + 2 * k, 3, "%02x", out[k]);
        CHECK(!strcmp(s, hex[i]));
    }
}

int main(void)
{
    vectors();
    static unsigned char data[STREAMS][MAXLEN];
    size_t len[STREAMS];
    for (int round = 0; round < 300; round++) {
        int count = 1 + (int)(rnd() % STREAMS);
        struct md5 st[STREAMS], *sp[STREAMS];
        size_t at[STREAMS];
        for (int i = 0; i < count; i++) {
            len[i] = rnd() % MAXLEN;
            if (round % 7 == 0)
                len[i] = (size_t)(rnd() % 40) * 64;     /* whole blocks */
            for (size_t k = 0; k < len[i]; k++)
                data[i][k] = (unsigned char)rnd();
            md5_init(&st[i]);
            sp[i] = &st[i];
            at[i] = rnd() % 3 ? rnd() % 70 : 0;     /* a partial block first */
            if (at[i] > len[i])
                at[i] = len[i];
            md5_update(&st[i], data[i], at[i]);
        }
        /* lanes of random pieces until every stream is in */
        for (int turn = 0; turn < 50; turn++) {
            const unsigned char *d[STREAMS];
            size_t n[STREAMS];
            for (int i = 0; i < count; i++) {
                size_t left = len[i] - at[i];
                n[i] = rnd() % 2 ? left : (left ? rnd() % (left + 1) : 0);
                if (turn == 49)
                    n[i] = left;
                d[i] = data[i] + at[i];
                at[i] += n[i];
            }
            md5_update_lanes(sp, d, n, count);
        }
        for (int i = 0; i < count; i++) {
            unsigned char got[16], want[16];
            CHECK(at[i] == len[i]);
            md5_final(&st[i], got);
            ref_md5(data[i], len[i], want);
            CHECK(!memcmp(got, want, 16));
        }
    }
    /* one stream hashed in one call and in bytes */
    {
        struct md5 a, b;
        unsigned char x[16], y[16], want[16];
        md5_init(&a);
        md5_init(&b);
        md5_update(&a, data[0], MAXLEN);
        for (size_t k = 0; k < MAXLEN; k++)
            md5_update(&b, data[0] + k, 1);
        md5_final(&a, x);
        md5_final(&b, y);
        ref_md5(data[0], MAXLEN, want);
        CHECK(!memcmp(x, want, 16) && !memcmp(y, want, 16));
    }
    printf("md5mb: vector lanes %s\n", md5_lanes_wide() ? "on" : "off");
    return check_done("test_md5mb");
}
