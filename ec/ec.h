/*
 * ec: Reed-Solomon erasure coding over GF(2^8) with ISA-L, as pure
 * functions over buffers (no I/O, no daemon types). An object is cut into
 * d data slices of equal length (the last zero-padded) and p parity
 * slices are computed from them with a Cauchy matrix (every square
 * submatrix of a Cauchy matrix is invertible, so any d of the d + p
 * slices rebuild the rest; a Vandermonde matrix does not promise that).
 *
 * Thread: a struct ec_code is read-only once made; share it freely.
 */
#ifndef SHOAL_EC_H
#define SHOAL_EC_H

#include <stddef.h>
#include <stdint.h>

#define EC_DATA_MAX 16
#define EC_PARITY_MAX 8
#define EC_LEN_MAX 0x7fffffc0u /* a slice's bytes: ISA-L counts in an int */

struct ec_code {
    int d, p;
    unsigned char *matrix;       /* (d + p) x d: identity, then the Cauchy rows */
    unsigned char *tables;       /* ISA-L's expanded tables of the parity rows */
};

/* 0, or -1 when d is not 1..EC_DATA_MAX or p not 1..EC_PARITY_MAX. */
int ec_code_init(struct ec_code *c, int d, int p);
void ec_code_free(struct ec_code *c);

/* The length of each slice of an object of size bytes: size / d rounded
 * up to a multiple of 64 (ISA-L's vector width), at least 64. */
size_t ec_slice_len(uint64_t size, int d);

/* The bytes of data slice i of an object of size bytes, slices of len
 * bytes: len, less for the one the object ends in, 0 past it (the rest of
 * a data slice is zeros). */
uint64_t ec_data_len(uint64_t size, uint64_t len, int i);

/* parity[0..p-1] from data[0..d-1], each len bytes. 0, or -1 when len
 * is over EC_LEN_MAX. */
int ec_encode(const struct ec_code *c, size_t len, const uint8_t *const *data,
               uint8_t *const *parity);

/* Rebuild the slices that are missing: slices[0..d+p-1] each len bytes,
 * present[i] nonzero for those holding their bytes; the missing ones are
 * written in place. 0, or -1 when more than p are missing or len is over
 * EC_LEN_MAX (nothing written). */
int ec_decode(const struct ec_code *c, size_t len, uint8_t *const *slices,
              const unsigned char *present);

#endif
