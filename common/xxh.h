/*
 * xxh: xxhash, with XXH3 on the widest vectors the CPU has. libxxhash's
 * XXH3_64bits and XXH3_64bits_update are built for the baseline x86-64
 * (SSE2); on x86-64 the same library's _dispatch variants choose AVX2 or
 * AVX-512 at run time and give the same hashes (2.3x as fast on 3 MiB
 * here). Include this, not <xxhash.h>: it maps the XXH3 calls onto them.
 */
#ifndef SHOAL_XXH_H
#define SHOAL_XXH_H

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

#endif
