/* Inline records: a version of up to inline_max bytes is kept in its
 * record with no data file, whether it came as a file or in memory; a
 * larger one is a file; each replaces the other; reads (store_data_open,
 * ocache) give the bytes either way; a delete, a restart and kept
 * versions work for both. A real store in a temporary directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "ocache.h"
#include "store.h"
#include "storeint.h"
#include "util.h"
#include "xxh.h"

/* Commit n bytes of c as mkey's new version, from a work file (mem 0) or
 * one in memory (mem 1): the commit's answer, the record in m. */
static int put(struct store *s, const char *mkey, size_t kl, size_t n, char c, int mem,
               struct objmeta *m)
{
    struct store_mp *mp = store_place(s, mkey, kl);
    char work[PATH_MAX];
    memset(m, 0, sizeof(*m));
    int fd = mem ? store_work_open_mem(&m->uid, work, sizeof(work))
                 : store_work_open(mp, &m->uid, work, sizeof(work));
    char *body = xmalloc(n + 1);
    memset(body, c, n);
    int ok = fd >= 0 && pwrite_full(fd, body, n, 0) == 0;
    m->size = n;
    m->cksum = XXH3_64bits(body, n);
    free(body);
    if (!ok)
        return -1;
    return store_commit(s, mp, mkey, kl, work, fd, m);
}

/* Files below dir/data (one level of XX/ directories). */
static int data_files(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/data", dir);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char sub[PATH_MAX + 300];
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        DIR *s = opendir(sub);
        for (struct dirent *f; s && (f = readdir(s));)
            n += f->d_name[0] != '.';
        if (s)
            closedir(s);
    }
    if (d)
        closedir(d);
    return n;
}

/* Does the data of mkey's record, as store_data_open gives it, hold n
 * bytes of c? */
static int reads_as(struct store *s, const char *mkey, size_t kl, size_t n, char c)
{
    struct objmeta *m = xmalloc(sizeof(*m));
    struct store_mp *mp = store_pick(s, mkey, kl);
    int ok = store_get(s, mp, mkey, kl, m) == 0 && m->size == n;
    int fd = ok ? store_data_open(mp, mkey, kl, m) : -1;
    struct stat st;
    ok = fd >= 0 && !fstat(fd, &st) && (uint64_t)st.st_size == n;
    char *buf = xmalloc(n + 1);
    ok = ok && pread_full(fd, buf, n, 0) == 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = buf[i] == c;
    free(buf);
    if (fd >= 0)
        close(fd);
    free(m);
    return ok;
}

int main(void)
{
    char dir[] = "/tmp/shoal-inline-XXXXXX";
    struct store s;
    memset(&s, 0, sizeof(s));
    CHECK(fixture_store_open(&s, dir) == 0);
    s.inline_max = 16384;
    ocache_init(2);
    struct objmeta *m = xmalloc(sizeof(*m));
    char *enc = xmalloc(OBJMETA_MAX);
    size_t ka, kb;
    char *a = store_mkey("shoal", "b", "a", 1, &ka), *b = store_mkey("shoal", "b", "b", 1, &kb);
    struct store_mp *mp = store_pick(&s, a, ka);

    /* small, from a file: in the record, the work file gone, no data file */
    CHECK(put(&s, a, ka, 4096, 'x', 0, m) == 0 && objmeta_inline(m));
    CHECK(data_files(dir) == 0);
    CHECK(reads_as(&s, a, ka, 4096, 'x'));
    struct objmeta *got = xmalloc(sizeof(*got));
    CHECK(store_get(&s, mp, a, ka, got) == 0 && objmeta_inline(got) && got->size == 4096 &&
          got->inl[0] == 'x' && got->inl[4095] == 'x');
    /* the record as stored has the flag, not the bytes: they are under a
     * key of their own, which scans of records do not read */
    size_t rec = objmeta_encode(got, enc);
    CHECK(objmeta_decode(enc, rec, m) == 0 && objmeta_inline(m) && !m->inl_loaded);
    CHECK(store_inline_load(mp, a, ka, m) == 0 && m->inl_loaded && m->inl[4095] == 'x');
    size_t dl;
    char *dk = store_inline_key(a, ka, &dl), *v = NULL;
    size_t vl = 0;
    CHECK(store_kv_get(&s, mp, dk, dl, &v, &vl) == 0 && vl == 4096 && v[0] == 'x');
    free(v);
    /* the cache's encoding carries them; the record sent to another node
     * has neither bytes nor flag */
    size_t full = objmeta_encode_full(got, enc), bare = objmeta_encode_meta(got, enc);
    CHECK(full == bare + 3 + 4096 && rec == bare);
    CHECK(objmeta_decode(enc, bare, m) == 0 && !objmeta_inline(m) && m->size == 4096);

    /* larger than inline_max: a file, replacing the inline version */
    CHECK(put(&s, a, ka, 20000, 'y', 0, m) == 0 && !objmeta_inline(m));
    CHECK(data_files(dir) == 1);
    CHECK(reads_as(&s, a, ka, 20000, 'y'));
    /* and small again: the file goes with the version it held */
    CHECK(put(&s, a, ka, 100, 'z', 1, m) == 0 && objmeta_inline(m));
    CHECK(data_files(dir) == 0);
    CHECK(reads_as(&s, a, ka, 100, 'z'));
    /* an empty object */
    CHECK(put(&s, b, kb, 0, 'e', 1, m) == 0 && objmeta_inline(m));
    CHECK(reads_as(&s, b, kb, 0, 'e'));

    /* a work file in memory is never placed: too large for a record */
    CHECK(put(&s, b, kb, OBJMETA_INLINE_MAX + 1, 'q', 1, m) == -EFBIG);
    CHECK(reads_as(&s, b, kb, 0, 'e'));
    /* inline_max 0: every version a file */
    s.inline_max = 0;
    CHECK(put(&s, b, kb, 10, 'f', 0, m) == 0 && !objmeta_inline(m) && data_files(dir) == 1);
    CHECK(reads_as(&s, b, kb, 10, 'f'));
    s.inline_max = 16384;

    /* a record already inline, committed with no work file */
    CHECK(store_get(&s, mp, a, ka, m) == 0);
    memset(m->inl, 'w', 50);
    m->size = 50;
    m->inl_loaded = 1;
    m->cksum = XXH3_64bits(m->inl, 50);
    CHECK(store_commit(&s, mp, a, ka, NULL, -1, m) == 0);
    CHECK(reads_as(&s, a, ka, 50, 'w'));
    m->flags &= ~OBJMETA_F_INLINE;
    CHECK(store_commit(&s, mp, a, ka, NULL, -1, m) == -EINVAL);   /* no bytes to keep */
    CHECK(reads_as(&s, a, ka, 50, 'w'));

    /* the cache: an inline record's bytes, until the drive is written */
    uint64_t gen = store_wgen(mp);
    CHECK(store_get(&s, mp, a, ka, m) == 0);
    ocache_put(mp, gen, a, ka, m, -1);
    const char *mem = NULL;
    struct stat st;
    CHECK(ocache_bytes(&s, a, ka, got, &mem) == 1 && got->size == 50 && mem && mem[49] == 'w');
    CHECK(ocache_open(&s, a, ka, got, &st) == -1);                /* no file to hand out */
    CHECK(ocache_bytes(&s, a, ka, got, &mem) == 1);               /* and the entry stays */
    CHECK(ocache_sweep() == 0);
    CHECK(put(&s, b, kb, 10, 'g', 0, m) == 0);
    CHECK(ocache_bytes(&s, a, ka, got, &mem) == 0);               /* stale */
    CHECK(ocache_sweep() >= 0);

    /* a delete: the record and its bytes go, nothing else to remove */
    CHECK(store_delete(&s, mp, a, ka) == 0 && store_get(&s, mp, a, ka, m) == -ENOENT);
    CHECK(store_kv_get(&s, mp, dk, dl, &v, &vl) == -ENOENT);
    CHECK(data_files(dir) == 0);
    /* a file-backed version over an inline one takes its bytes away */
    CHECK(put(&s, a, ka, 10, 'h', 0, m) == 0);
    CHECK(put(&s, a, ka, 20000, 'j', 0, m) == 0 && !objmeta_inline(m));
    CHECK(store_kv_get(&s, mp, dk, dl, &v, &vl) == -ENOENT);
    free(dk);

    /* the bytes are durable with the record: they outlive a restart */
    CHECK(put(&s, a, ka, 3000, 'r', 0, m) == 0);
    store_close(&s);
    memset(&s, 0, sizeof(s));
    char err[256];
    char *dirs[1] = {dir};
    CHECK(store_open(&s, dirs, 1, NULL, 0, 0, err, sizeof(err)) == 0);
    s.inline_max = 16384;
    CHECK(reads_as(&s, a, ka, 3000, 'r'));
    CHECK(reads_as(&s, b, kb, 10, 'g'));
    CHECK(data_files(dir) == 0);

    /* an encoding whose bytes are not its size's is refused */
    mp = store_pick(&s, a, ka);
    CHECK(store_get(&s, mp, a, ka, m) == 0 && m->inl_loaded);
    size_t n = objmeta_encode_full(m, enc);
    CHECK(objmeta_decode(enc, n - 1, got) == -EINVAL);
    m->size = 2999;
    n = objmeta_encode_full(m, enc);
    CHECK(objmeta_decode(enc, n, got) == 0 && got->size == 2999 && got->inl_loaded);
    m->size = 3000;
    m->flags &= ~OBJMETA_F_INLINE;
    n = objmeta_encode_full(m, enc);             /* no bytes without the flag */
    CHECK(objmeta_decode(enc, n, got) == 0 && !objmeta_inline(got));
    enc[41] |= OBJMETA_F_INLINE;                 /* the flag alone: the bytes are elsewhere */
    CHECK(objmeta_decode(enc, n, got) == 0 && objmeta_inline(got) && !got->inl_loaded);
    m->size = OBJMETA_INLINE_MAX + 1;            /* too large to be inline */
    n = objmeta_encode_meta(m, enc);
    enc[41] |= OBJMETA_F_INLINE;
    CHECK(objmeta_decode(enc, n, got) == -EINVAL);

    free(a);
    free(b);
    free(m);
    free(got);
    free(enc);
    CHECK(fixture_store_close(&s, dir) == 0);
    return check_done("test_inline");
}
