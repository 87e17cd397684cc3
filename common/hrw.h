/*
 * hrw: rendezvous (highest random weight) hashing over xxhash. The owner of
 * a key is the node whose mix(xxh64(key) ^ xxh64(node id)) is largest, so
 * adding or removing one of N nodes moves about 1/N of the keys, and only to
 * or from that node.
 */
#ifndef SHOAL_HRW_H
#define SHOAL_HRW_H

#include <stddef.h>
#include <stdint.h>

uint64_t hrw_hash(const void *p, size_t n);
/* Index of the winning node among n (n > 0), or -1 when n == 0. */
int hrw_pick(uint64_t key_hash, const uint64_t *node_hashes, int n);
/* The k best nodes, best first, into order[0..k-1]; returns how many. */
int hrw_top(uint64_t key_hash, const uint64_t *node_hashes, int n, int *order, int k);

#endif
