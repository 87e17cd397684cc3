/*
 * place: where an object's copies and slices go (see place.h).
 */
#include "place.h"

#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

int place_bucket_copies(const struct bmd_bucket *bk)
{
    struct bmd_ec ec;
    return bmd_ec(bk, &ec) ? ec.p + 1 : bmd_copies(bk);
}

static int copies_of(const struct bmd_bucket *bk, uint64_t size)
{
    struct bmd_ec ec;
    if (!bmd_ec(bk, &ec))
        return bmd_copies(bk);
    if (size == PLACE_ANY_SIZE)
        return 1 + ec.d + ec.p;
    return size < ec.limit ? ec.p + 1 : 1;
}

int place_copies(const char *mkey, size_t klen, uint64_t size)
{
    struct bmd *b;
    const struct bmd_bucket *bk = xfer_key_bucket(mkey, klen, &b);
    int copies = bk ? copies_of(bk, size) : 1;
    bmd_unref(b);
    return copies;
}

int place_spreads(const char *mkey, size_t klen)
{
    struct bmd *b;               /* one look at the BMD on every write */
    const struct bmd_bucket *bk = xfer_key_bucket(mkey, klen, &b);
    struct bmd_ec ec;
    int spreads = bk && (bmd_copies(bk) > 1 || bmd_ec(bk, &ec));
    bmd_unref(b);
    return spreads;
}

int place_holders(const struct cmap *m, const char *mkey, size_t klen, int copies,
                   const struct cmap_node **out)
{
    size_t pl;
    char *pkey = m ? xfer_place_key(mkey, klen, &pl) : NULL;
    if (!pkey)
        return 0;
    int n = cmap_holders(m, pkey, pl, out, copies);
    free(pkey);
    return n;
}

int place_rank(const struct cmap *m, const char *mkey, size_t klen, int copies, const char *id)
{
    const struct cmap_node *h[CMAP_COPIES_MAX];
    int n = place_holders(m, mkey, klen, copies, h);
    for (int i = 0; i < n; i++)
        if (!strcmp(h[i]->id, id))
            return i;
    return -1;
}

int place_ec(const char *mkey, size_t klen, struct bmd_ec *ec)
{
    struct bmd *b;
    const struct bmd_bucket *bk = xfer_key_bucket(mkey, klen, &b);
    int is = bk && bmd_ec(bk, ec);
    bmd_unref(b);
    return is;
}

int place_local_copies(const struct target *t, const struct cmap *m, const char *mkey, size_t klen,
               uint64_t size)
{
    int copies = place_copies(mkey, klen, size == PLACE_ANY_SIZE ? 0 : size);
    const struct cmap_node *h[CMAP_COPIES_MAX];
    int n = copies > 1 ? place_holders(m, mkey, klen, copies, h) : 0;
    if (size == PLACE_ANY_SIZE || n == 0 || n >= copies || strcmp(h[0]->id, t->node.id))
        return 0;
    int others = __atomic_load_n(&t->store.n, __ATOMIC_ACQUIRE) - 1;
    return copies - n < others ? copies - n : others;
}
