/*
 * ocache: each worker's cache of the records and open data files of the
 * objects it read last, so that a warm GET finds its record without a
 * RocksDB lookup and its file without a path walk.
 *
 * An entry vouches for a record only while the mountpath it came from has
 * had no write of an object's record since the record was read (the
 * mountpath's write generation, store_wgen, taken before the read and
 * bumped after every such write): any PUT, DELETE, metadata change or move
 * on the drive makes every entry of it stale. Its data file is checked on
 * every use (fstat: still linked, of the record's size), so a file
 * removed or cut short is met as it would be without the cache. The
 * caller gets a descriptor of its own (dup), as from an open.
 *
 * Thread: the calling thread's own cache; no locks.
 */
#include "ocache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "store.h"
#include "util.h"

#define OC_SLOTS_MAX 1024        /* per thread: its open files at most */

static int n_slots;              /* per thread; 0: no cache (ocache_init) */

struct oc_ent {
    struct store_mp *mp;         /* NULL: empty */
    uint64_t gen;
    char *mkey;
    size_t klen;
    char *val;                   /* the record, encoded */
    size_t vl;
    int fd;
};

static __thread struct oc_ent *slots;
static __thread char *enc;       /* OMETA_MAX bytes: a record being encoded */

static void ent_drop(struct oc_ent *e)
{
    if (!e->mp)
        return;
    close(e->fd);
    free(e->mkey);
    free(e->val);
    e->mp = NULL;
}

void ocache_init(int threads)
{
    /* room for the cache's files beside everything else: a quarter of
     * the descriptors, once the soft limit is raised to the hard one */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t share = rl.rlim_cur / 4 / (rlim_t)(threads > 0 ? threads : 1);
    n_slots = share > OC_SLOTS_MAX ? OC_SLOTS_MAX : (int)share;
    if (n_slots < 16)
        n_slots = 0;             /* too few to be worth it */
}

static struct oc_ent *slot_of(const char *mkey, size_t klen)
{
    if (!n_slots)
        return NULL;
    if (!slots)
        slots = xcalloc((size_t)n_slots, sizeof(*slots));
    return &slots[XXH3_64bits(mkey, klen) % (uint64_t)n_slots];
}

int ocache_open(struct store *s, const char *mkey, size_t klen, struct ometa *m)
{
    struct oc_ent *e = slot_of(mkey, klen);
    if (!e || !e->mp || e->klen != klen || memcmp(e->mkey, mkey, klen))
        return -1;
    struct store_mp *mp = store_pick(s, mkey, klen);
    struct stat st;
    int good = e->mp == mp && !__atomic_load_n(&mp->gone, __ATOMIC_ACQUIRE) &&
               e->gen == store_wgen(mp) && ometa_decode(e->val, e->vl, m) == 0 &&
               fstat(e->fd, &st) == 0 && st.st_nlink > 0 && (uint64_t)st.st_size == m->size;
    int fd = good ? dup(e->fd) : -1;
    if (fd < 0)
        ent_drop(e);
    return fd;
}

void ocache_put(struct store_mp *mp, uint64_t gen, const char *mkey, size_t klen,
                const struct ometa *m, int fd)
{
    struct oc_ent *e = slot_of(mkey, klen);
    int mine = e ? dup(fd) : -1;
    if (mine < 0)
        return;
    ent_drop(e);
    if (!enc)
        enc = xmalloc(OMETA_MAX);
    e->vl = ometa_encode(m, enc);
    e->val = xmalloc(e->vl);
    memcpy(e->val, enc, e->vl);
    e->mkey = xmalloc(klen);
    memcpy(e->mkey, mkey, klen);
    e->klen = klen;
    e->gen = gen;
    e->fd = mine;
    e->mp = mp;
}
