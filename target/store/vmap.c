/*
 * vmap: the blocks checked since their pages were loaded.
 *
 * Bit rot lives on the drive: a page the kernel read from it holds what
 * the drive gave, good or bad, until it is dropped from memory. So a
 * block is checked when its bytes come from the drive, and a block whose
 * pages were checked and have stayed in memory since is sent as it is.
 * This map remembers, for each recently read data file, which of its
 * blocks (bsum.h) were checked; a read asks the kernel which pages are
 * in memory (cachestat, one system call for a range) and forgets the
 * blocks that lost a page.
 *
 * Pages come into memory only by reads. A read's plan looks at its own
 * blocks and at what its kernel read-ahead may bring in after them
 * (VM_SCAN_AHEAD), and forgets every block there that lost a page: what
 * the read then brings in is checked by the next read that plans it.
 * Other readers of data files (scrub, copies, uploads, rebalance) take a
 * lease (vmap_reading) for as long as they may take: while it holds,
 * nothing of that file counts as checked. A file is known by its device
 * and inode together with its version's uid, size and ctime, so a file
 * written over in place (ctime changes) or a new file on a reused inode
 * starts unchecked.
 *
 * What is left: a page dropped and read again in the instant between a
 * read's plan and the kernel sending it (microseconds for a page that
 * was in memory a moment before, on the hot end of the kernel's lists).
 *
 * The map is a fixed table of VM_SLOTS entries chosen by the file's
 * inode, each holding one file; a new file takes the slot over, which
 * only makes the old one's next read check again. Locks are striped.
 * Thread: any.
 */
#include "vmap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bsum.h"
#include "log.h"
#include "objmeta.h"
#include "util.h"
#include "xxh.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451       /* the same number on every architecture */
#endif

struct cs_range {
    uint64_t off, len;
};
struct cs_stat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

#define VM_SLOTS 8192
#define VM_LOCKS 64
#define VM_LEASES 65536          /* leases by uid hash: a collision only checks more */
#define VM_SCAN_AHEAD (16u << 20) /* past a read's end, what read-ahead may bring in */
#define VM_LEASE_MIN_MS 60000
#define VM_LEASE_RATE (4u << 20) /* bytes/s: the slowest another reader is taken to go */

struct vm_ent {
    int used;
    dev_t dev;
    ino_t ino;
    uint64_t uid, size;
    struct timespec ctime;
    uint64_t bits[BSUM_MAX / 64]; /* checked blocks */
};

static struct vm_ent *slots;
static pthread_mutex_t locks[VM_LOCKS];
static uint64_t leases[VM_LEASES]; /* CLOCK_MONOTONIC ms until which a uid is read by others */
static int can_tell;             /* cachestat works */
static uint64_t page = 4096;

static size_t slot_index(const struct stat *st);

static int cachestat_of(int fd, uint64_t off, uint64_t len, struct cs_stat *cs)
{
    struct cs_range rg = {off, len};
    return (int)syscall(__NR_cachestat, fd, &rg, cs, 0);
}

int vmap_init(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        page = (uint64_t)ps;
    slots = xcalloc(VM_SLOTS, sizeof(*slots));
    for (int i = 0; i < VM_LOCKS; i++)
        pthread_mutex_init(&locks[i], NULL);
    struct cs_stat cs;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    can_tell = fd >= 0 && cachestat_of(fd, 0, page, &cs) == 0;
    if (fd >= 0)
        close(fd);
    if (!can_tell)
        log_info("this kernel cannot tell which pages are in memory (cachestat): every read "
                 "checks its blocks");
    return can_tell;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t *lease_of(uint64_t uid)
{
    return &leases[XXH3_64bits(&uid, sizeof(uid)) % VM_LEASES];
}

void vmap_forget(const struct stat *st)
{
    if (!slots || !st)
        return;
    size_t i = slot_index(st);
    pthread_mutex_lock(&locks[i % VM_LOCKS]);
    if (slots[i].used && slots[i].dev == st->st_dev && slots[i].ino == st->st_ino)
        slots[i].used = 0;
    pthread_mutex_unlock(&locks[i % VM_LOCKS]);
}

void vmap_reading(const struct stat *st, uint64_t uid, uint64_t size)
{
    /* what it brings in is never planned: the file's checked blocks go
     * now, and none are kept while it may read */
    vmap_forget(st);
    uint64_t until = now_ms() + VM_LEASE_MIN_MS + size / VM_LEASE_RATE * 1000u;
    uint64_t *l = lease_of(uid), cur = __atomic_load_n(l, __ATOMIC_ACQUIRE);
    while (cur < until && !__atomic_compare_exchange_n(l, &cur, until, 0, __ATOMIC_ACQ_REL,
                                                        __ATOMIC_ACQUIRE))
        ;
}

static int leased(uint64_t uid)
{
    return __atomic_load_n(lease_of(uid), __ATOMIC_ACQUIRE) > now_ms();
}

/* Is every page of [off, off + len) in memory? */
static int all_in(int fd, uint64_t off, uint64_t len)
{
    if (!len)
        return 1;
    struct cs_stat cs;
    uint64_t pages = (off + len + page - 1) / page - off / page;
    return cachestat_of(fd, off, len, &cs) == 0 && cs.nr_cache >= pages;
}

static size_t slot_index(const struct stat *st)
{
    uint64_t k[2] = {(uint64_t)st->st_dev, (uint64_t)st->st_ino};
    return XXH3_64bits(k, sizeof(k)) % VM_SLOTS;
}

static int ent_is(const struct vm_ent *e, const struct stat *st, const struct objmeta *m)
{
    return e->used && e->dev == st->st_dev && e->ino == st->st_ino && e->uid == m->uid &&
           e->size == m->size && e->ctime.tv_sec == st->st_ctim.tv_sec &&
           e->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static int bit(const uint64_t *b, uint32_t k)
{
    return (int)(b[k / 64] >> (k % 64) & 1);
}

/* Forget the checked blocks of the scan window [b0, bend) that lost a
 * page; snap is the entry's bits as read, updated too. */
static void forget_dropped(int fd, const struct stat *st, const struct objmeta *m, uint64_t bsz,
                           uint32_t b0, uint32_t bend, uint64_t *snap)
{
    uint64_t ws = (uint64_t)b0 * bsz, we = (uint64_t)bend * bsz;
    if (we > m->size)
        we = m->size;
    if (all_in(fd, ws, we - ws))
        return;
    uint64_t gone[BSUM_MAX / 64] = {0};
    int any = 0;
    for (uint32_t k = b0; k < bend; k++) {
        uint64_t s = (uint64_t)k * bsz, l = m->size - s < bsz ? m->size - s : bsz;
        if (bit(snap, k) && !all_in(fd, s, l)) {
            gone[k / 64] |= 1ull << (k % 64);
            snap[k / 64] &= ~(1ull << (k % 64));
            any = 1;
        }
    }
    if (!any)
        return;
    size_t i = slot_index(st);
    pthread_mutex_lock(&locks[i % VM_LOCKS]);
    if (ent_is(&slots[i], st, m))
        for (size_t w = 0; w < BSUM_MAX / 64; w++)
            slots[i].bits[w] &= ~gone[w];
    pthread_mutex_unlock(&locks[i % VM_LOCKS]);
}

static void plan_ahead(int fd, const struct stat *st, const struct objmeta *m, uint64_t off,
                       uint64_t len, uint64_t ahead_bytes, struct vmap_plan *p);

void vmap_plan(int fd, const struct stat *st, const struct objmeta *m, uint64_t off, uint64_t len,
               struct vmap_plan *p)
{
    plan_ahead(fd, st, m, off, len, VM_SCAN_AHEAD, p);
}

int vmap_plan_random(int fd, const struct stat *st, const struct objmeta *m, uint64_t off,
                     uint64_t len, struct vmap_plan *p)
{
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM)) {
        plan_ahead(fd, st, m, off, len, VM_SCAN_AHEAD, p);
        return 0;
    }
    plan_ahead(fd, st, m, off, len, 0, p);
    return 1;
}

static void plan_ahead(int fd, const struct stat *st, const struct objmeta *m, uint64_t off,
                       uint64_t len, uint64_t ahead_bytes, struct vmap_plan *p)
{
    memset(p, 0, sizeof(*p));
    if (!len || off >= m->size)
        return;
    uint64_t bsz = bsum_block_size(m);
    uint32_t nb = bsum_blocks(m), b0 = (uint32_t)(off / bsz);
    uint32_t b1 = (uint32_t)((off + len - 1) / bsz);
    if (b1 >= nb)
        b1 = nb - 1;
    uint64_t snap[BSUM_MAX / 64] = {0};
    p->keep = can_tell && !leased(m->uid);
    if (p->keep) {
        size_t i = slot_index(st);
        pthread_mutex_lock(&locks[i % VM_LOCKS]);
        if (ent_is(&slots[i], st, m))
            memcpy(snap, slots[i].bits, sizeof(snap));
        pthread_mutex_unlock(&locks[i % VM_LOCKS]);
        uint64_t ahead = (ahead_bytes + bsz - 1) / bsz;
        uint32_t bend = (uint64_t)b1 + 1 + ahead < nb ? (uint32_t)(b1 + 1 + ahead) : nb;
        forget_dropped(fd, st, m, bsz, b0, bend, snap);
    }
    uint32_t lo = b0, hi = b1;
    while (lo <= b1 && bit(snap, lo))
        lo++;
    if (lo > b1)
        return;                  /* every block checked, and in memory since */
    while (hi > lo && bit(snap, hi))
        hi--;
    p->lo = (uint64_t)lo * bsz;
    p->hi = (uint64_t)(hi + 1) * bsz < m->size ? (uint64_t)(hi + 1) * bsz : m->size;
    p->resident = can_tell && all_in(fd, p->lo, p->hi - p->lo);
}

void vmap_mark(int fd, const struct stat *st, const struct objmeta *m, uint64_t lo, uint64_t hi)
{
    if (!can_tell || hi <= lo || leased(m->uid))
        return;
    uint64_t bsz = bsum_block_size(m);
    /* only blocks whose pages all stayed in memory since they were
     * hashed: one dropped meanwhile comes back from the drive unchecked */
    uint64_t keep[BSUM_MAX / 64] = {0};
    int any = 0;
    for (uint64_t k = lo / bsz; k * bsz < hi && k < BSUM_MAX; k++) {
        uint64_t s = k * bsz, l = m->size - s < bsz ? m->size - s : bsz;
        if (all_in(fd, s, l)) {
            keep[k / 64] |= 1ull << (k % 64);
            any = 1;
        }
    }
    if (!any)
        return;
    size_t i = slot_index(st);
    pthread_mutex_lock(&locks[i % VM_LOCKS]);
    struct vm_ent *e = &slots[i];
    if (!ent_is(e, st, m)) {
        memset(e, 0, sizeof(*e));
        e->used = 1;
        e->dev = st->st_dev;
        e->ino = st->st_ino;
        e->uid = m->uid;
        e->size = m->size;
        e->ctime = st->st_ctim;
    }
    for (size_t w = 0; w < BSUM_MAX / 64; w++)
        e->bits[w] |= keep[w];
    pthread_mutex_unlock(&locks[i % VM_LOCKS]);
}

/* Read len bytes at off into buf, all of them: 0, -EIO or -ENODATA (the
 * file ends first). */
static int read_all(int fd, char *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -EIO;
        if (n == 0)
            return -ENODATA;
        got += (size_t)n;
    }
    return 0;
}

int vmap_check_whole(int fd, const struct objmeta *m, uint64_t at, uint64_t end, char *buf,
                     size_t cap, void **state)
{
    XXH3_state_t *xs = *state;
    if (!xs) {
        if (!(xs = XXH3_createState()))
            abort();
        XXH3_64bits_reset(xs);
        *state = xs;
    }
    int rc = 0;
    for (; !rc && at < end; at += cap) {
        size_t l = end - at < cap ? (size_t)(end - at) : cap;
        if (!(rc = read_all(fd, buf, l, at)))
            XXH3_64bits_update(xs, buf, l);
    }
    if (!rc && end < m->size)
        return 0;                /* more to come */
    if (!rc && XXH3_64bits_digest(xs) != m->cksum)
        rc = -EUCLEAN;
    XXH3_freeState(xs);
    *state = NULL;
    return rc;
}

void vmap_check_whole_free(void *state)
{
    if (state)
        XXH3_freeState(state);
}

/* An object without block sums: the whole of it against its checksum. */
static int check_whole(int fd, const struct objmeta *m, char *buf, size_t cap)
{
    void *state = NULL;
    return vmap_check_whole(fd, m, 0, m->size, buf, cap, &state);
}

int vmap_check(int fd, const struct objmeta *m, uint64_t lo, uint64_t hi, char *buf, size_t cap)
{
    if (!bsum_kept(m))
        return check_whole(fd, m, buf, cap);
    uint64_t bsz = bsum_block_size(m);
    cap -= cap % BSUM_LEAF;
    uint64_t *leaves = xmalloc((size_t)(bsz / BSUM_LEAF) * sizeof(*leaves));
    int rc = 0;
    for (uint64_t k = lo / bsz; !rc && k * bsz < hi; k++) {
        uint64_t s = k * bsz, e = s + bsz < m->size ? s + bsz : m->size;
        size_t nl = 0;
        for (uint64_t at = s; !rc && at < e; at += cap) {
            size_t l = e - at < cap ? (size_t)(e - at) : cap;
            if ((rc = read_all(fd, buf, l, at)))
                break;
            for (size_t o = 0; o < l; o += BSUM_LEAF)
                leaves[nl++] = XXH3_64bits(buf + o, l - o < BSUM_LEAF ? l - o : BSUM_LEAF);
        }
        if (!rc && !bsum_leaves_good(m, (uint32_t)k, leaves, nl))
            rc = -EUCLEAN;
    }
    free(leaves);
    return rc;
}
