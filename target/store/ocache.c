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
 * caller gets a descriptor of its own (dup), as from an open. Only files
 * of up to 256 KiB are kept (for larger ones the open is lost in the
 * transfer).
 *
 * The bytes of a small object (up to OC_MEM_MAX), once a read checked
 * them against the record's checksum, may be kept with its entry, within
 * OC_MEM_BUDGET bytes per thread, and answer later reads without a read
 * of the file or a hash. They are served only while the entry vouches
 * for its record, of the same uid, and while the file is still linked, of
 * the record's size and with the change time it had before those bytes
 * were read (fstat, as for a descriptor): a file written over in place
 * (or otherwise changed) goes back to the drive and its check.
 *
 * An inline record (objmeta.h) has its bytes with it: its entry holds no
 * file and answers reads while it vouches for the record, as the record
 * itself would.
 *
 * A deleted or overwritten object's file must not stay open here, or its
 * space is not freed: the write may come on another worker, so each
 * worker lets go of its own. Each call looks at one other entry in turn
 * and drops a stale one, and a timer on the worker's loop sweeps the
 * whole cache every OC_SWEEP_MS, so the files are let go within about a
 * second even when no read comes. A sweep drops only what could not be
 * served again (an entry of a drive written since, or whose file is
 * unlinked): the entries of a drive with no writes stay warm.
 *
 * Thread: the calling thread's own cache; no locks.
 */
#include "ocache.h"

#include <event2/event.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "util.h"
#include "xxh.h"

#define OC_SLOTS_MAX 4096        /* per thread: its open files at most (even: pairs) */
#define OC_SIZE_MAX (256u << 10) /* larger files are opened per read: their transfer
                                  * costs more than the open, and a removed file's
                                  * space stays taken while it is held */

#define OC_SWEEP_MS 1000         /* the whole cache looked at, on each worker */
#define OC_MEM_MAX (32u << 10)   /* an object's bytes kept in memory: up to this size */
#define OC_MEM_BUDGET (16u << 20) /* per thread, in all */

static int n_slots;              /* per thread; 0: no cache (ocache_init) */

struct oc_ent {
    struct store_mp *mp;         /* NULL: empty */
    uint64_t gen;
    char *mkey;
    size_t klen;
    char *val;                   /* the record, encoded */
    size_t vl;
    int fd;                      /* -1: an inline record's, with no file */
    char *mem;                   /* the file's bytes, checked; NULL: not kept */
    size_t msize;
    struct timespec mctime;      /* the file's change time before they were read */
    uint32_t flags;              /* the record's (objmeta's) */
    uint64_t used;               /* when it was last made or found (uses) */
};

static __thread struct oc_ent *slots;
static __thread char *enc;       /* OBJMETA_MAX bytes: a record being encoded */
static __thread size_t mem_used; /* bytes kept in this thread's entries */
static __thread uint64_t uses;   /* entries made or found on this thread */

static void mem_drop(struct oc_ent *e)
{
    if (e->mem) {
        mem_used -= e->msize;
        free(e->mem);
        e->mem = NULL;
    }
}

static void ent_drop(struct oc_ent *e)
{
    if (!e->mp)
        return;
    mem_drop(e);
    if (e->fd >= 0)
        close(e->fd);
    else                         /* an inline record's bytes, counted as kept ones */
        mem_used -= e->msize;
    free(e->mkey);
    free(e->val);
    e->mp = NULL;
}

void ocache_init(int threads)
{
    /* room for the cache's files beside everything else: a quarter of
     * the descriptors, once the soft limit is raised to the hard one */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) {
        n_slots = 0;
        return;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) || getrlimit(RLIMIT_NOFILE, &rl))
            rl.rlim_cur = 0;
    }
    rlim_t share = rl.rlim_cur / 4 / (rlim_t)(threads > 0 ? threads : 1);
    n_slots = share > OC_SLOTS_MAX ? OC_SLOTS_MAX : (int)share & ~1;   /* pairs */
    if (n_slots < 16)
        n_slots = 0;             /* too few to be worth it */
}

/* The two neighbouring slots mkey may sit in (the first), or NULL. Two
 * ways, so that two names of one hash do not push each other out on
 * every read. */
static struct oc_ent *pair_of(const char *mkey, size_t klen)
{
    if (!n_slots)
        return NULL;
    if (!slots)
        slots = xcalloc((size_t)n_slots, sizeof(*slots));
    return &slots[2 * (XXH3_64bits(mkey, klen) % (uint64_t)(n_slots / 2))];
}

static int holds(const struct oc_ent *e, const char *mkey, size_t klen)
{
    return e->mp && e->klen == klen && !memcmp(e->mkey, mkey, klen);
}

/* The slot of pair p that holds mkey, or NULL. */
static struct oc_ent *held(struct oc_ent *p, const char *mkey, size_t klen)
{
    return holds(&p[0], mkey, klen) ? &p[0] : holds(&p[1], mkey, klen) ? &p[1] : NULL;
}

/* Where an entry of mkey goes: the slot of the pair that holds it, else
 * an empty one, else the one used longer ago. */
static struct oc_ent *slot_for(struct oc_ent *p, const char *mkey, size_t klen)
{
    struct oc_ent *e = held(p, mkey, klen);
    if (e)
        return e;
    if (!p[0].mp || !p[1].mp)
        return !p[0].mp ? &p[0] : &p[1];
    return p[0].used <= p[1].used ? &p[0] : &p[1];
}

/* Is e still good for its drive (no object write since it was made)? */
static int ent_current(const struct oc_ent *e)
{
    return !__atomic_load_n(&e->mp->gone, __ATOMIC_ACQUIRE) && e->gen == store_wgen(e->mp);
}

/* Could e ever be served again? Not once its drive was written, nor
 * when its file was unlinked (a delete or overwrite whose record write
 * is not counted yet, or a file removed behind the store's back). */
static int ent_alive(const struct oc_ent *e)
{
    struct stat st;
    return ent_current(e) && (e->fd < 0 || (fstat(e->fd, &st) == 0 && st.st_nlink > 0));
}

/* One more slot looked at on each call, in turn: a stale entry goes, so
 * the files of objects since removed are let go while reads go on. */
static void sweep_one(void)
{
    static __thread int next;
    struct oc_ent *e = &slots[next];
    next = (next + 1) % n_slots;
    if (e->mp && !ent_current(e))
        ent_drop(e);
}

int ocache_sweep(void)
{
    int dropped = 0;
    for (int i = 0; slots && i < n_slots; i++) {
        if (slots[i].mp && !ent_alive(&slots[i])) {
            ent_drop(&slots[i]);
            dropped++;
        }
    }
    return dropped;
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    ocache_sweep();
}

struct event *ocache_start(struct event_base *base)
{
    struct event *ev = event_new(base, -1, EV_PERSIST, on_sweep, NULL);
    struct timeval tv = {OC_SWEEP_MS / 1000, (OC_SWEEP_MS % 1000) * 1000};
    event_add(ev, &tv);
    return ev;
}

void ocache_stop(struct event *sweeper)
{
    event_free(sweeper);
    for (int i = 0; slots && i < n_slots; i++)
        ent_drop(&slots[i]);
    free(slots);
    slots = NULL;
    free(enc);
    enc = NULL;
}

/* mkey's entry on this thread (*at; NULL: none), and whether it vouches
 * for its record on the drive that holds mkey now. */
static int vouched(struct store *s, const char *mkey, size_t klen, struct oc_ent **at)
{
    struct oc_ent *p = pair_of(mkey, klen), *e = NULL;
    if (p) {
        sweep_one();
        e = held(p, mkey, klen);
    }
    *at = e;
    if (!e)
        return 0;
    e->used = ++uses;
    return e->mp == store_pick(s, mkey, klen) && ent_current(e);
}

/* vouched, with the record decoded into m */
static int ent_find(struct store *s, const char *mkey, size_t klen, struct objmeta *m,
                    struct oc_ent **at)
{
    return vouched(s, mkey, klen, at) && objmeta_decode((*at)->val, (*at)->vl, m) == 0;
}

int ocache_flags(struct store *s, const char *mkey, size_t klen, uint32_t *flags)
{
    struct oc_ent *e;
    if (!vouched(s, mkey, klen, &e))
        return 0;
    *flags = e->flags;
    return 1;
}

/* Is e's file still linked and of m's size? st: its stat. */
static int file_good(const struct oc_ent *e, const struct objmeta *m, struct stat *st)
{
    return fstat(e->fd, st) == 0 && st->st_nlink > 0 && (uint64_t)st->st_size == m->size;
}

int ocache_bytes(struct store *s, const char *mkey, size_t klen, struct objmeta *m,
                 const char **mem)
{
    struct oc_ent *e;
    struct stat st;
    if (!ent_find(s, mkey, klen, m, &e))
        return 0;
    if (e->fd < 0) {             /* an inline record: its bytes came with it */
        *mem = m->inl;
        return objmeta_inline(m) && m->inl_loaded;
    }
    if (!e->mem)
        return 0;
    if (!file_good(e, m, &st) || e->msize != m->size || st.st_ctim.tv_sec != e->mctime.tv_sec ||
        st.st_ctim.tv_nsec != e->mctime.tv_nsec) {
        mem_drop(e);             /* the file changed: back to it and its check */
        return 0;
    }
    *mem = e->mem;
    return 1;
}

void ocache_keep_bytes(struct store *s, const char *mkey, size_t klen, const struct objmeta *m,
                       const struct stat *st, const char *bytes)
{
    struct objmeta cur;
    struct oc_ent *e;
    if (m->size > OC_MEM_MAX || mem_used + m->size > OC_MEM_BUDGET ||
        !ent_find(s, mkey, klen, &cur, &e) || e->fd < 0 || e->mem || cur.uid != m->uid ||
        cur.size != m->size)
        return;
    e->mem = xmalloc(m->size ? m->size : 1);
    memcpy(e->mem, bytes, m->size);
    e->msize = m->size;
    e->mctime = st->st_ctim;
    mem_used += m->size;
}

int ocache_open(struct store *s, const char *mkey, size_t klen, struct objmeta *m,
                struct stat *st)
{
    struct oc_ent *e;
    int good = ent_find(s, mkey, klen, m, &e) && e->fd >= 0 && file_good(e, m, st);
    int fd = good ? fcntl(e->fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (fd < 0 && e && e->fd >= 0)
        ent_drop(e);
    return fd;
}

void ocache_put(struct store_mp *mp, uint64_t gen, const char *mkey, size_t klen,
                const struct objmeta *m, int fd)
{
    struct oc_ent *p = m->size <= OC_SIZE_MAX ? pair_of(mkey, klen) : NULL;
    struct oc_ent *e = p ? slot_for(p, mkey, klen) : NULL;
    int inl = fd < 0 && objmeta_inline(m) && m->inl_loaded;
    int mine = !e || inl ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (!e || (mine < 0 && !inl))
        return;
    ent_drop(e);
    if (inl && mem_used + m->size > OC_MEM_BUDGET)
        return;                  /* within the budget of kept bytes */
    if (!enc)
        enc = xmalloc(OBJMETA_MAX);
    e->vl = objmeta_encode_full(m, enc);   /* an inline record's bytes too */
    e->val = xmalloc(e->vl);
    memcpy(e->val, enc, e->vl);
    e->mkey = xmalloc(klen);
    memcpy(e->mkey, mkey, klen);
    e->klen = klen;
    e->gen = gen;
    e->flags = m->flags;
    e->fd = mine;
    e->msize = inl ? m->size : 0;
    mem_used += e->msize;
    e->used = ++uses;
    e->mp = mp;
}
