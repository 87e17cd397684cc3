/*
 * vmap: which blocks of which data files were checked against their sums
 * since their pages came from the drive (vmap.c), so that a warm read
 * sends them without hashing them again.
 */
#ifndef SHOAL_TARGET_VMAP_H
#define SHOAL_TARGET_VMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct objmeta;

/* What a read of [off, off + len) of a data file must check before its
 * bytes go: the blocks from lo to hi (byte offsets, whole blocks; lo ==
 * hi: none). resident: every page of them is in memory (hashing them
 * costs no drive read). */
struct vmap_plan {
    uint64_t lo, hi;
    int resident;
    int keep;                    /* what is checked may be remembered */
};

/* Can this kernel tell which pages are in memory (cachestat, Linux 6.5)?
 * Where it cannot, every read checks its blocks. Call once at start-up. */
int vmap_init(void);

/* The plan for reading [off, off + len) of the file fd (st: its fstat) of
 * the record m. Any thread. */
void vmap_plan(int fd, const struct stat *st, const struct objmeta *m, uint64_t off, uint64_t len,
               struct vmap_plan *p);

/* The same for a read that brings in no page past its own: fd (an open
 * file of its own, not shared) is set to POSIX_FADV_RANDOM, so the kernel
 * reads exactly what is asked and nothing ahead, and the plan looks at
 * the read's own blocks only, not at a read-ahead window (a small member
 * of a large archive: a window of 16 MiB cost more than the read). 1, or
 * 0 when the advice was refused (the plan is vmap_plan's). */
int vmap_plan_random(int fd, const struct stat *st, const struct objmeta *m, uint64_t off,
                     uint64_t len, struct vmap_plan *p);

/* Check the blocks [lo, hi) of fd against m's sums, reading them into
 * buf (cap bytes, at least BSUM_LEAF: read in turns of cap).
 * 0: they match; -EUCLEAN: one does not; -EIO / -errno: unreadable or
 * short. May block on the drive: the I/O pool's, unless resident. */
int vmap_check(int fd, const struct objmeta *m, uint64_t lo, uint64_t hi, char *buf, size_t cap);

/* An object without block sums (bsum_kept false) checked whole in turns:
 * [at, end) hashed into *state (made at the first turn, NULL at first);
 * at the object's end, the whole compared with its checksum. 0 (good, or
 * more to come while end < size), -EUCLEAN, -EIO or -ENODATA; *state is
 * freed at the end and on error (else vmap_check_whole_free). */
int vmap_check_whole(int fd, const struct objmeta *m, uint64_t at, uint64_t end, char *buf,
                     size_t cap, void **state);
void vmap_check_whole_free(void *state);

/* The blocks [lo, hi) of the file fd (st, m) were checked and found good
 * (p->keep from the plan made before the check): those whose pages are
 * all still in memory are remembered as checked. */
void vmap_mark(int fd, const struct stat *st, const struct objmeta *m, uint64_t lo, uint64_t hi);

/* Another reader (a scrub, a copy, an upload) is about to read the data file st (NULL: unknown) of version uid (size
 * bytes): pages it brings in are not checked by a read's plan, so the
 * file's checked blocks are forgotten and none are kept while it may
 * still be reading. Any thread. */
void vmap_reading(const struct stat *st, uint64_t uid, uint64_t size);
/* A GET that does not check (verify_reads: false) reads the file st:
 * its checked blocks are forgotten. */
void vmap_forget(const struct stat *st);

#endif
