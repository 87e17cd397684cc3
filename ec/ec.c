/*
 * ec: encode and decode (see ec.h). Decoding follows ISA-L's recipe: take
 * the rows of the first d slices present, invert that d x d matrix, and
 * make from it one row per missing slice (a data slice's row of the
 * inverse; for a parity slice, its encoding row times the inverse); ISA-L
 * then computes all missing slices in one pass over the present ones.
 */
#include "ec.h"

#include <isa-l/erasure_code.h>
#include <stdlib.h>
#include <string.h>

int ec_code_init(struct ec_code *c, int d, int p)
{
    memset(c, 0, sizeof(*c));
    if (d < 1 || d > EC_DATA_MAX || p < 1 || p > EC_PARITY_MAX)
        return -1;
    c->d = d;
    c->p = p;
    c->matrix = malloc((size_t)(d + p) * (size_t)d);
    c->tables = malloc((size_t)d * (size_t)p * 32);
    if (!c->matrix || !c->tables)
        abort();
    gf_gen_cauchy1_matrix(c->matrix, d + p, d);
    ec_init_tables(d, p, c->matrix + d * d, c->tables);
    return 0;
}

void ec_code_free(struct ec_code *c)
{
    free(c->matrix);
    free(c->tables);
    memset(c, 0, sizeof(*c));
}

size_t ec_slice_len(uint64_t size, int d)
{
    uint64_t per = (size + (uint64_t)d - 1) / (uint64_t)d;
    per = (per + 63) & ~(uint64_t)63;
    return per ? (size_t)per : 64;
}

uint64_t ec_data_len(uint64_t size, uint64_t len, int i)
{
    uint64_t start = (uint64_t)i * len;
    return start >= size ? 0 : size - start < len ? size - start : len;
}

int ec_encode(const struct ec_code *c, size_t len, const uint8_t *const *data,
              uint8_t *const *parity)
{
    if (len > EC_LEN_MAX)
        return -1;
    ec_encode_data((int)len, c->d, c->p, c->tables, (unsigned char **)data,
                   (unsigned char **)parity);
    return 0;
}

int ec_decode(const struct ec_code *c, size_t len, uint8_t *const *slices,
              const unsigned char *present)
{
    int d = c->d, n = c->d + c->p;
    int src[EC_DATA_MAX], lost[EC_DATA_MAX + EC_PARITY_MAX];
    int ns = 0, nl = 0;
    for (int i = 0; i < n; i++) {
        if (!present[i])
            lost[nl++] = i;
        else if (ns < d)
            src[ns++] = i;
    }
    if (len > EC_LEN_MAX)
        return -1;
    if (nl == 0)
        return 0;
    if (ns < d || nl > c->p)
        return -1;
    unsigned char sub[EC_DATA_MAX * EC_DATA_MAX], inv[EC_DATA_MAX * EC_DATA_MAX];
    unsigned char rows[(EC_DATA_MAX + EC_PARITY_MAX) * EC_DATA_MAX];
    unsigned char tables[(EC_DATA_MAX + EC_PARITY_MAX) * EC_DATA_MAX * 32];
    for (int r = 0; r < d; r++)
        memcpy(sub + r * d, c->matrix + src[r] * d, (size_t)d);
    if (gf_invert_matrix(sub, inv, d))
        return -1;               /* not with a Cauchy matrix */
    for (int k = 0; k < nl; k++) {
        int i = lost[k];
        if (i < d) {
            memcpy(rows + k * d, inv + i * d, (size_t)d);
            continue;
        }
        for (int j = 0; j < d; j++) {   /* encoding row i times the inverse */
            unsigned char s = 0;
            for (int m = 0; m < d; m++)
                s ^= gf_mul(c->matrix[i * d + m], inv[m * d + j]);
            rows[k * d + j] = s;
        }
    }
    unsigned char *in[EC_DATA_MAX], *out[EC_DATA_MAX + EC_PARITY_MAX];
    for (int r = 0; r < d; r++)
        in[r] = slices[src[r]];
    for (int k = 0; k < nl; k++)
        out[k] = slices[lost[k]];
    ec_init_tables(d, nl, rows, tables);
    ec_encode_data((int)len, d, nl, tables, in, out);
    return 0;
}
