/* ocache: a worker's cached record and file are handed out while the
 * drive has had no object write since, and never after one; a file
 * removed or cut short is not vouched for; a sweep closes the files of
 * deleted and overwritten objects and keeps the rest. A real store in a
 * temporary directory. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ocache.h"
#include "store.h"
#include "storeint.h"
#include "util.h"

/* Commit body as mkey's new version: its record in m. */
static int put(struct store *s, const char *mkey, size_t kl, const char *body, struct objmeta *m)
{
    struct store_mp *mp = store_place(s, mkey, kl);
    char work[PATH_MAX];
    memset(m, 0, sizeof(*m));
    int fd = store_work_open(mp, &m->uid, work, sizeof(work));
    if (fd < 0 || write(fd, body, strlen(body)) != (ssize_t)strlen(body))
        return -1;
    m->size = strlen(body);
    return store_commit(s, mp, mkey, kl, work, fd, m);
}

/* What the cache gives for mkey: the bytes it names, or "" when it gives
 * nothing. */
static const char *cached(struct store *s, const char *mkey, size_t kl, struct objmeta *m)
{
    static char buf[64];
    struct stat st, own;
    int fd = ocache_open(s, mkey, kl, m, &st);
    if (fd < 0)
        return "";
    /* the stat handed back is the given file's, of the record's size */
    if (fstat(fd, &own) || own.st_ino != st.st_ino || own.st_dev != st.st_dev ||
        (uint64_t)st.st_size != m->size) {
        close(fd);
        return "(another file's stat)";
    }
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/* How many of this process's descriptors are of unlinked files. */
static int deleted_open(void)
{
    int n = 0;
    char fd[32], path[PATH_MAX + 32], to[PATH_MAX];
    for (int i = 0; i < 1024; i++) {
        snprintf(fd, sizeof(fd), "%d", i);
        snprintf(path, sizeof(path), "/proc/self/fd/%s", fd);
        ssize_t l = readlink(path, to, sizeof(to) - 1);
        if (l <= 0)
            continue;
        to[l] = '\0';
        n += strstr(to, " (deleted)") != NULL;
    }
    return n;
}

/* Read mkey as get.c does and keep it in the cache. */
static void read_and_keep(struct store *s, const char *mkey, size_t kl)
{
    struct objmeta *m = xmalloc(sizeof(*m));
    struct store_mp *mp = store_pick(s, mkey, kl);
    uint64_t gen = store_wgen(mp);
    if (store_get(s, mp, mkey, kl, m) == 0) {
        int fd = store_data_open(mp, mkey, kl, m);
        if (fd >= 0) {
            ocache_put(mp, gen, mkey, kl, m, fd);
            close(fd);
        }
    }
    free(m);
}

int main(void)
{
    char dir[] = "/tmp/shoal-ocache-XXXXXX", err[256];
    CHECK(mkdtemp(dir) != NULL);
    char *dirs[1] = {dir};
    struct store s;
    memset(&s, 0, sizeof(s));
    CHECK(store_open(&s, dirs, 1, NULL, 0, 0, err, sizeof(err)) == 0);
    ocache_init(2);
    struct objmeta *m = xmalloc(sizeof(*m));
    size_t ka, kb;
    char *a = store_mkey("shoal", "b", "a", 1, &ka), *b = store_mkey("shoal", "b", "b", 1, &kb);

    CHECK(put(&s, a, ka, "first", m) == 0);
    CHECK(!strcmp(cached(&s, a, ka, m), ""));          /* not read yet */
    read_and_keep(&s, a, ka);
    CHECK(!strcmp(cached(&s, a, ka, m), "first") && m->size == 5);
    CHECK(!strcmp(cached(&s, a, ka, m), "first"));     /* again: the entry stays */

    /* a write of another object on the drive: stale, read again */
    CHECK(put(&s, b, kb, "other", m) == 0);
    CHECK(!strcmp(cached(&s, a, ka, m), ""));
    read_and_keep(&s, a, ka);
    CHECK(!strcmp(cached(&s, a, ka, m), "first"));

    /* a new version of the object itself */
    CHECK(put(&s, a, ka, "second", m) == 0);
    CHECK(!strcmp(cached(&s, a, ka, m), ""));
    read_and_keep(&s, a, ka);
    CHECK(!strcmp(cached(&s, a, ka, m), "second") && m->size == 6);

    /* a read that raced a write keeps the generation from before it */
    struct store_mp *mp = store_pick(&s, a, ka);
    uint64_t before = store_wgen(mp);
    CHECK(store_get(&s, mp, a, ka, m) == 0);
    int fd = store_data_open(mp, a, ka, m);
    CHECK(fd >= 0);
    struct objmeta *other = xmalloc(sizeof(*other));
    CHECK(put(&s, b, kb, "again", other) == 0);
    ocache_put(mp, before, a, ka, m, fd);
    close(fd);
    CHECK(!strcmp(cached(&s, a, ka, m), ""));

    /* a data file cut short, or removed, behind the cache's back */
    read_and_keep(&s, a, ka);
    CHECK(!strcmp(cached(&s, a, ka, m), "second"));
    char path[PATH_MAX];
    CHECK(store_get(&s, mp, a, ka, m) == 0);
    store_data_path(mp, a, ka, m->uid, path, sizeof(path));
    CHECK(truncate(path, 2) == 0);
    CHECK(!strcmp(cached(&s, a, ka, m), ""));
    CHECK(put(&s, a, ka, "third", m) == 0);
    read_and_keep(&s, a, ka);
    CHECK(!strcmp(cached(&s, a, ka, m), "third"));
    CHECK(store_delete(&s, mp, a, ka) == 0);           /* the record and the file go */
    CHECK(!strcmp(cached(&s, a, ka, m), ""));

    /* a sweep keeps what can still be served and lets go of the rest: a
     * deleted object's file is closed with no read after the delete */
    CHECK(put(&s, a, ka, "fourth", m) == 0);
    read_and_keep(&s, a, ka);
    CHECK(ocache_sweep() == 0);
    CHECK(!strcmp(cached(&s, a, ka, m), "fourth"));
    CHECK(store_delete(&s, mp, a, ka) == 0);
    CHECK(deleted_open() == 1);
    CHECK(ocache_sweep() == 1);
    CHECK(deleted_open() == 0);
    CHECK(put(&s, a, ka, "fifth", m) == 0);            /* an overwrite too */
    read_and_keep(&s, a, ka);
    CHECK(put(&s, a, ka, "sixth", m) == 0);
    CHECK(deleted_open() == 1);
    CHECK(ocache_sweep() == 1 && deleted_open() == 0);

    /* kept bytes: none before they are kept, then served while the file
     * stands as it was; its own version only; gone with a write on the
     * drive, with a change to the file in place, and with the entry */
    const char *mem = NULL;
    CHECK(put(&s, a, ka, "seventh", m) == 0);
    read_and_keep(&s, a, ka);
    CHECK(!ocache_bytes(&s, a, ka, m, &mem));
    struct stat st;
    CHECK(store_get(&s, mp, a, ka, m) == 0);
    store_data_path(mp, a, ka, m->uid, path, sizeof(path));
    CHECK(stat(path, &st) == 0);
    struct objmeta *older = xmalloc(sizeof(*older));
    *older = *m;
    older->uid ^= 1;                                   /* another version's bytes */
    ocache_keep_bytes(&s, a, ka, older, &st, "SEVENTH");
    CHECK(!ocache_bytes(&s, a, ka, m, &mem));
    ocache_keep_bytes(&s, a, ka, m, &st, "seventh");
    CHECK(ocache_bytes(&s, a, ka, m, &mem) && m->size == 7 && !memcmp(mem, "seventh", 7));
    CHECK(ocache_bytes(&s, a, ka, m, &mem) && !memcmp(mem, "seventh", 7));
    usleep(20000);                                     /* a later change time */
    int wfd = open(path, O_WRONLY);
    CHECK(wfd >= 0 && pwrite(wfd, "S", 1, 0) == 1);
    close(wfd);
    CHECK(!ocache_bytes(&s, a, ka, m, &mem));          /* back to the file */
    CHECK(!strcmp(cached(&s, a, ka, m), "Seventh"));
    CHECK(stat(path, &st) == 0);
    ocache_keep_bytes(&s, a, ka, m, &st, "Seventh");
    CHECK(ocache_bytes(&s, a, ka, m, &mem) && !memcmp(mem, "Seventh", 7));
    CHECK(put(&s, b, kb, "write", other) == 0);        /* the drive written */
    CHECK(!ocache_bytes(&s, a, ka, m, &mem));
    read_and_keep(&s, a, ka);
    CHECK(!ocache_bytes(&s, a, ka, m, &mem));          /* a new entry keeps none */
    free(older);

    free(other);
    free(m);
    free(a);
    free(b);
    store_close(&s);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return check_done("test_ocache");
}
