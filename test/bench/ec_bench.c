/*
 * ec_bench: the speed of ec/ on one core against ISA-L's own loop on the
 * same buffers (the reference). Encode: ec_encode against ec_encode_data
 * with tables made once. Decode of the worst case (p data slices lost):
 * ec_decode, which inverts its matrix on every call, against ISA-L's
 * recipe with the decode tables made once. Figures are GB/s of object
 * bytes (d slices) per core.
 *
 *   ec_bench SLICE_BYTES SECONDS D+P...
 */
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ec.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs fn until secs have passed; returns GB/s of bytes_per_call. */
#define TIMED(secs, bytes_per_call, stmt)                                       \
    ({                                                                          \
        double t0 = now(), t;                                                   \
        long calls = 0;                                                         \
        do {                                                                    \
            for (int k_ = 0; k_ < 8; k_++, calls++) {                           \
                stmt;                                                           \
            }                                                                   \
        } while ((t = now() - t0) < (secs));                                    \
        (double)calls * (double)(bytes_per_call) / t / 1e9;                     \
    })

static void one(int d, int p, size_t len, double secs)
{
    struct ec_code c;
    if (ec_code_init(&c, d, p)) {
        fprintf(stderr, "bad code %d+%d\n", d, p);
        exit(2);
    }
    int n = d + p;
    unsigned char *sl[EC_DATA_MAX + EC_PARITY_MAX];
    for (int i = 0; i < n; i++) {
        if (posix_memalign((void **)&sl[i], 64, len))
            abort();
        for (size_t b = 0; b < len; b++)
            sl[i][b] = (unsigned char)rand();
    }
    size_t obj = (size_t)d * len;
    /* encode */
    unsigned char *tables = malloc((size_t)d * (size_t)p * 32);
    ec_init_tables(d, p, c.matrix + d * d, tables);
    double ref_enc = TIMED(secs, obj, ec_encode_data((int)len, d, p, tables, sl, sl + d));
    double our_enc = TIMED(secs, obj, (void)ec_encode(&c, len, (const uint8_t *const *)sl, sl + d));
    /* decode: the first p data slices lost (the rebuild that costs most) */
    int lost = p < d ? p : d;
    unsigned char present[EC_DATA_MAX + EC_PARITY_MAX];
    for (int i = 0; i < n; i++)
        present[i] = i >= lost;
    unsigned char sub[EC_DATA_MAX * EC_DATA_MAX], inv[EC_DATA_MAX * EC_DATA_MAX];
    unsigned char *dtab = malloc((size_t)d * (size_t)lost * 32);
    unsigned char *in[EC_DATA_MAX];
    for (int r = 0; r < d; r++) {
        memcpy(sub + r * d, c.matrix + (lost + r) * d, (size_t)d);
        in[r] = sl[lost + r];
    }
    gf_invert_matrix(sub, inv, d);
    ec_init_tables(d, lost, inv, dtab);   /* the first `lost` rows of the inverse */
    double ref_dec = TIMED(secs, obj, ec_encode_data((int)len, d, lost, dtab, in, sl));
    double our_dec = TIMED(secs, obj, (void)ec_decode(&c, len, sl, present));
    char code[16];
    snprintf(code, sizeof(code), "%d+%d", d, p);
    printf("%-6s %-14s %9.2f %9.2f %7.2fx  %s\n", code, "encode", our_enc, ref_enc,
           our_enc / ref_enc, our_enc / ref_enc >= 0.9 ? "0.9x PASS" : "0.9x FAIL");
    printf("%-6s %-14s %9.2f %9.2f %7.2fx  %s\n", code, "decode", our_dec, ref_dec,
           our_dec / ref_dec, our_dec / ref_dec >= 0.9 ? "0.9x PASS" : "0.9x FAIL");
    for (int i = 0; i < n; i++)
        free(sl[i]);
    free(tables);
    free(dtab);
    ec_code_free(&c);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: ec_bench SLICE_BYTES SECONDS D+P...\n");
        return 2;
    }
    size_t len = strtoul(argv[1], NULL, 10);
    double secs = atof(argv[2]);
    printf("%-6s %-14s %9s %9s %8s  %s\n", "code", "what", "GB/s", "isa-l", "ratio", "goal");
    for (int i = 3; i < argc; i++) {
        int d, p;
        if (sscanf(argv[i], "%d+%d", &d, &p) != 2) {
            fprintf(stderr, "bad code %s\n", argv[i]);
            return 2;
        }
        one(d, p, len, secs);
    }
    return 0;
}
