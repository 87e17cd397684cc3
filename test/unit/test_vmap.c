/* bsum and vmap: block sums made as bytes pass, in any pieces, check each
 * block alone (folded past BSUM_MAX leaves too) and catch a flipped byte
 * in its block only; a record keeps them; a read's plan asks for the
 * blocks not checked since their pages were loaded: all of them at
 * first, none once checked, a block again once its pages are dropped
 * (also one past the read's end, which read-ahead may bring back), all
 * of them once the file is written in place or another reader holds it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bsum.h"
#include "check.h"
#include "objmeta.h"
#include "vmap.h"
#include "xxh.h"

static struct objmeta m;         /* large: not on the stack */
static struct objmeta d;

/* m's sums for n bytes of p, fed in pieces of step bytes. */
static void sums_of(const char *p, size_t n, size_t step)
{
    struct bsum b;
    bsum_init(&b);
    for (size_t o = 0; o < n; o += step)
        bsum_update(&b, p + o, n - o < step ? n - o : step);
    memset(&m, 0, sizeof(m));
    m.size = n;
    m.cksum = XXH3_64bits(p, n);
    m.uid = 42;
    bsum_finish(&b, &m);
    bsum_deinit(&b);
}

/* Does every block of p (m's object) pass, but bad (-1: none)? */
static int blocks_pass_but(const char *p, long bad)
{
    uint64_t bsz = bsum_block_size(&m);
    uint64_t *leaves = malloc((bsz / BSUM_LEAF + 1) * sizeof(*leaves));
    int ok = 1;
    for (uint32_t i = 0; i < bsum_blocks(&m); i++) {
        uint64_t s = i * bsz, e = s + bsz < m.size ? s + bsz : m.size;
        size_t nl = 0;
        for (uint64_t o = s; o < e; o += BSUM_LEAF)
            leaves[nl++] = XXH3_64bits(p + o, e - o < BSUM_LEAF ? e - o : BSUM_LEAF);
        ok &= bsum_leaves_good(&m, i, leaves, nl) == ((long)i != bad);
    }
    free(leaves);
    return ok;
}

static void test_sums(void)
{
    size_t big = (size_t)(BSUM_MAX * 2 + 3) * BSUM_LEAF + 777;   /* folded twice */
    char *p = malloc(big);
    for (size_t i = 0; i < big; i++)
        p[i] = (char)(i * 2654435761u >> 13);
    sums_of(p, 4096, 1000);
    CHECK(m.nbs == 0 && bsum_blocks(&m) == 1 && bsum_block_size(&m) == 4096);
    sums_of(p, 300000, 7777);
    CHECK(m.nbs == 5 && m.bs_level == 0 && bsum_block_size(&m) == BSUM_LEAF);
    CHECK(m.bs[1] == XXH3_64bits(p + BSUM_LEAF, BSUM_LEAF));
    CHECK(blocks_pass_but(p, -1));
    sums_of(p, big, 100003);
    CHECK(m.bs_level == 2 && m.nbs == (BSUM_MAX * 2 + 4 + 3) / 4);
    CHECK(bsum_block_size(&m) == 4 * BSUM_LEAF && bsum_kept(&m));
    CHECK(blocks_pass_but(p, -1));
    p[5 * 4 * BSUM_LEAF + 9] ^= 1;
    CHECK(blocks_pass_but(p, 5));
    p[5 * 4 * BSUM_LEAF + 9] ^= 1;
    /* kept with the record, and a record whose sums do not fit its size
     * is checked whole */
    char *buf = malloc(OBJMETA_MAX);
    size_t n = objmeta_encode(&m, buf);
    CHECK(objmeta_decode(buf, n, &d) == 0 && d.nbs == m.nbs && d.bs_level == 2 &&
          !memcmp(d.bs, m.bs, m.nbs * 8));
    d.size = 100;
    CHECK(!bsum_kept(&d) && bsum_blocks(&d) == 1 && bsum_block_size(&d) == 100);
    buf[n - 8 * m.nbs - 1] = 41;   /* the level: out of range */
    CHECK(objmeta_decode(buf, n, &d) == -EINVAL);
    free(buf);
    free(p);
}

/* Drop the pages of [off, off + len) of path from memory. */
static void drop(const char *path, off_t off, off_t len)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && fdatasync(fd) == 0 && posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED) == 0);
    close(fd);
}

static void test_plans(void)
{
    char path[] = "/tmp/shoal-vmap-XXXXXX";
    int fd = mkstemp(path);
    size_t n = 40 * BSUM_LEAF + 5;   /* 41 blocks, a 16 MiB read-ahead window past 1 */
    char *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(i * 7);
    CHECK(write(fd, p, n) == (ssize_t)n && fsync(fd) == 0);
    sums_of(p, n, 65536);
    struct stat st;
    struct vmap_plan pl;
    char *buf = malloc(1 << 20);
    CHECK(fstat(fd, &st) == 0);
    vmap_plan(fd, &st, &m, 100000, 5000, &pl);   /* in block 1 */
    CHECK(pl.lo == BSUM_LEAF && pl.hi == 2 * BSUM_LEAF && pl.keep);
    CHECK(vmap_check(fd, &m, 0, n, buf, 1 << 20) == 0);
    vmap_mark(fd, &st, &m, 0, n);
    vmap_plan(fd, &st, &m, 0, n, &pl);
    CHECK(pl.lo == pl.hi);   /* checked, in memory since */
    /* a block whose pages went between its check and its mark is not kept */
    drop(path, 0, 0);
    vmap_forget(&st);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0);   /* no read-ahead */
    CHECK(pread(fd, buf, BSUM_LEAF, 0) == BSUM_LEAF);
    vmap_mark(fd, &st, &m, 0, 2 * BSUM_LEAF);
    vmap_plan(fd, &st, &m, 0, 2 * BSUM_LEAF, &pl);
    CHECK(pl.lo == BSUM_LEAF && pl.hi == 2 * BSUM_LEAF);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL) == 0);
    for (size_t o = 0; o < n; o += 1 << 20)
        CHECK(pread(fd, buf, 1 << 20, (off_t)o) > 0);
    vmap_mark(fd, &st, &m, 0, n);
    /* dropped (the kernel drops whole folios: the file, to be sure) */
    drop(path, 0, 0);
    vmap_plan(fd, &st, &m, 0, BSUM_LEAF, &pl);   /* block 3 is in block 0's read-ahead */
    CHECK(pl.lo == 0 && pl.hi == BSUM_LEAF && !pl.resident);
    CHECK(pread(fd, buf, 10, 3 * BSUM_LEAF + 10) == 10);   /* loaded again, unchecked */
    vmap_plan(fd, &st, &m, 3 * BSUM_LEAF, 1, &pl);
    CHECK(pl.lo == 3 * BSUM_LEAF && pl.hi == 4 * BSUM_LEAF);
    CHECK(vmap_check(fd, &m, 0, n, buf, 1 << 20) == 0);
    vmap_mark(fd, &st, &m, 0, n);
    vmap_plan(fd, &st, &m, 0, n, &pl);
    CHECK(pl.lo == pl.hi && !pl.resident);
    /* a read of its own blocks only (a member): nothing is loaded past it */
    int rfd = open(path, O_RDONLY);
    drop(path, 0, 0);
    CHECK(vmap_plan_random(rfd, &st, &m, 5 * BSUM_LEAF + 7, 10, &pl) == 1);
    CHECK(pl.lo == 5 * BSUM_LEAF && pl.hi == 6 * BSUM_LEAF && !pl.resident);
    CHECK(vmap_check(rfd, &m, pl.lo, pl.hi, buf, 1 << 20) == 0);
    vmap_mark(rfd, &st, &m, pl.lo, pl.hi);
    vmap_plan(fd, &st, &m, 5 * BSUM_LEAF, 10, &pl);
    CHECK(pl.lo == pl.hi);                       /* block 5: checked, in memory */
    vmap_plan(fd, &st, &m, 6 * BSUM_LEAF, 10, &pl);
    CHECK(pl.lo == 6 * BSUM_LEAF && !pl.resident);   /* block 6 was not read ahead */
    close(rfd);
    /* a byte written in place: a new ctime, nothing checked */
    usleep(20000);
    CHECK(pwrite(fd, p + 9, 1, 9) == 1);
    CHECK(fstat(fd, &st) == 0);
    vmap_plan(fd, &st, &m, 200000, 10, &pl);
    CHECK(pl.lo == 3 * BSUM_LEAF && pl.hi == 4 * BSUM_LEAF);
    /* a flipped byte is found in its block */
    p[7 * BSUM_LEAF + 3] ^= 0x20;
    CHECK(pwrite(fd, p + 7 * BSUM_LEAF + 3, 1, 7 * BSUM_LEAF + 3) == 1);
    CHECK(vmap_check(fd, &m, 0, 7 * BSUM_LEAF, buf, 1 << 20) == 0);
    CHECK(vmap_check(fd, &m, 7 * BSUM_LEAF, 8 * BSUM_LEAF, buf, 1 << 20) == -EUCLEAN);
    CHECK(vmap_check(fd, &m, 0, n, buf, BSUM_LEAF) == -EUCLEAN);
    /* another reader: nothing counts as checked while it may read */
    CHECK(fstat(fd, &st) == 0);
    vmap_mark(fd, &st, &m, 0, n);
    vmap_plan(fd, &st, &m, 0, 10, &pl);
    CHECK(pl.lo == pl.hi);
    vmap_reading(&st, m.uid, n);
    vmap_plan(fd, &st, &m, 0, 10, &pl);
    CHECK(pl.lo == 0 && pl.hi == BSUM_LEAF && !pl.keep);
    /* a short file */
    CHECK(ftruncate(fd, 1000) == 0);
    CHECK(vmap_check(fd, &m, 0, BSUM_LEAF, buf, 1 << 20) == -ENODATA);
    free(buf);
    free(p);
    close(fd);
    unlink(path);
}

int main(void)
{
    test_sums();
    struct statfs fs;
    if (!vmap_init())
        printf("test_vmap: this kernel has no cachestat: plans not tested\n");
    else if (statfs("/tmp", &fs) == 0 && fs.f_type == 0x01021994)
        printf("test_vmap: /tmp is a tmpfs, whose pages cannot be dropped: plans not tested\n");
    else
        test_plans();
    return check_done("test_vmap");
}
