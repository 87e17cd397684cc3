#include "hrw.h"

#include <xxhash.h>

uint64_t hrw_hash(const void *p, size_t n)
{
    return XXH64(p, n, 0);
}

/* splitmix64's finalizer: xor of two well-mixed hashes is mixed again so
 * that weights of one key on different nodes are independent. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Weight of a key (by its hash) on a node (by its id hash). */
static uint64_t hrw_weight(uint64_t key_hash, uint64_t node_hash)
{
    return mix(key_hash ^ node_hash);
}

int hrw_pick(uint64_t key_hash, const uint64_t *node_hashes, int n)
{
    int best = -1;
    uint64_t bw = 0;
    for (int i = 0; i < n; i++) {
        uint64_t w = hrw_weight(key_hash, node_hashes[i]);
        if (best < 0 || w > bw) {
            best = i;
            bw = w;
        }
    }
    return best;
}

int hrw_top(uint64_t key_hash, const uint64_t *node_hashes, int n, int *order, int k)
{
    uint64_t w[k > 0 ? k : 1];
    int m = 0;
    for (int i = 0; i < n; i++) {
        uint64_t x = hrw_weight(key_hash, node_hashes[i]);
        /* insertion into the sorted top-k */
        int j = m < k ? m++ : k;
        if (j == k && (k == 0 || x <= w[k - 1]))
            continue;
        if (j == k)
            j = k - 1;
        while (j > 0 && w[j - 1] < x) {
            w[j] = w[j - 1];
            order[j] = order[j - 1];
            j--;
        }
        w[j] = x;
        order[j] = i;
    }
    return m;
}
