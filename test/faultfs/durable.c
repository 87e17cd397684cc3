/* durable.c: what faultfs has made durable, and how a cut goes back to it.
 *
 * BACKING/durable/dirs/<id> is a directory's name table as of its last
 * fsync, one entry a line: "<type> <id> <mode> <name length> <name>\n",
 * type f (file), d (directory) or l (symlink). BACKING/durable/files/<id>
 * is a file's content as of its last fsync (a symlink's target). The
 * root's table is dirs/1. Durable copies are written without fsync of
 * their own: faultfs simulates power cuts, the machine under it has none.
 *
 * Ids name live files and directories through an inode map (the live
 * copy's st_ino -> node). A name's last unlink drops it from the map, so
 * an inode number the backing file system hands out again gets a new id.
 *
 * Locking: ff_dir_persist, ff_sync_all and ff_rebuild run under ff.lock
 * held exclusively; ff_node_dirty and ff_flush under it shared, with the
 * node's own mutex. */
#include "faultfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_BUF (256 * 1024)

struct ff_state ff;

/* A durable id met while rebuilding: the first path a file was made at,
 * so that a second name of the same id becomes a hard link. */
struct seen {
    uint64_t id;
    char *path;                     /* relative to live; NULL for directories */
};

/* The path handed by FUSE ("/a/b"), relative to the live directory. */
const char *ff_rel(const char *path)
{
    while (*path == '/')
        path++;
    return *path ? path : ".";
}

static int node_cmp(const void *a, const void *b)
{
    ino_t x = ((const struct ff_node *)a)->ino, y = ((const struct ff_node *)b)->ino;
    return x < y ? -1 : x > y;
}

static int seen_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct seen *)a)->id, y = ((const struct seen *)b)->id;
    return x < y ? -1 : x > y;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p)
        abort();
    return p;
}

/* A stream over the directory dfd with an offset of its own (a dup would
 * share dfd's); NULL with errno set. */
static DIR *dir_open(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

/* Caller holds map_mu, or ff.lock exclusively (a rebuild: no other
 * thread then reaches the map). */
static struct ff_node *node_insert(ino_t ino, uint64_t id)
{
    struct ff_node *n = xcalloc(1, sizeof(*n));
    n->ino = ino;
    n->id = id;
    pthread_mutex_init(&n->mu, NULL);
    struct ff_node **slot = tsearch(n, &ff.by_ino, node_cmp);
    if (!slot)
        abort();
    if (*slot != n) {               /* a second name of the same inode */
        pthread_mutex_destroy(&n->mu);
        free(n);
    }
    return *slot;
}

/* The node of a live inode, made with a new id when create is set and
 * none exists; NULL otherwise. */
struct ff_node *ff_node_get(ino_t ino, int create)
{
    struct ff_node key = {.ino = ino};
    pthread_mutex_lock(&ff.map_mu);
    struct ff_node **slot = tfind(&key, &ff.by_ino, node_cmp);
    struct ff_node *n = slot ? *slot : NULL;
    if (!n && create)
        n = node_insert(ino, ff.next_id++);
    pthread_mutex_unlock(&ff.map_mu);
    return n;
}

/* The inode's last name is gone: its number may come back for another
 * file. The node lives on (handles may hold it) until the next cut. The
 * caller holds map_mu, taken before the call that freed the number: a
 * file created meanwhile may get the same number, and must not find
 * this node (its durable content would be the old file's). */
void ff_node_forget_locked(ino_t ino)
{
    struct ff_node key = {.ino = ino};
    struct ff_node **slot = tfind(&key, &ff.by_ino, node_cmp);
    if (slot) {
        struct ff_node *n = *slot;
        tdelete(&key, &ff.by_ino, node_cmp);
        n->next_detached = ff.detached;
        ff.detached = n;
    }
}

/* Records [lo, hi) of n as written and not yet durable. Ranges that
 * touch merge; past FF_MAX_RANGES they collapse into one span, which
 * costs a longer copy at the next flush, never a lost byte. */
void ff_node_dirty(struct ff_node *n, uint64_t lo, uint64_t hi)
{
    pthread_mutex_lock(&n->mu);
    int i;
    for (i = n->nranges - 1; i >= 0; i--) {     /* the last first: appends */
        struct ff_range *r = &n->ranges[i];
        if (lo <= r->hi && hi >= r->lo)
            break;
    }
    if (i < 0 && n->nranges == FF_MAX_RANGES) {
        for (int j = 1; j < n->nranges; j++) {
            if (n->ranges[j].lo < n->ranges[0].lo)
                n->ranges[0].lo = n->ranges[j].lo;
            if (n->ranges[j].hi > n->ranges[0].hi)
                n->ranges[0].hi = n->ranges[j].hi;
        }
        n->nranges = 1;
        i = 0;
    }
    if (i < 0) {
        n->ranges[n->nranges++] = (struct ff_range){lo, hi};
    } else {
        if (lo < n->ranges[i].lo)
            n->ranges[i].lo = lo;
        if (hi > n->ranges[i].hi)
            n->ranges[i].hi = hi;
    }
    pthread_mutex_unlock(&n->mu);
}

/* Copies len bytes at off from in to out (or up to in's end). */
static int copy_range(int in, int out, uint64_t off, uint64_t len)
{
    char *buf = malloc(COPY_BUF);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    while (len > 0) {
        ssize_t r = pread(in, buf, len < COPY_BUF ? len : COPY_BUF, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : 0;
            break;
        }
        for (ssize_t done = 0; done < r;) {
            ssize_t w = pwrite(out, buf + done, (size_t)(r - done), (off_t)(off + (uint64_t)done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                rc = -errno;
                goto out;
            }
            done += w;
        }
        off += (uint64_t)r;
        len -= (uint64_t)r;
        __atomic_add_fetch(&ff.flushed_bytes, (uint64_t)r, __ATOMIC_RELAXED);
    }
out:
    free(buf);
    return rc;
}

static int flush_locked(struct ff_node *n, int live_fd)
{
    struct stat st;
    if (fstat(live_fd, &st))
        return -errno;
    char name[24];
    snprintf(name, sizeof(name), "%" PRIu64, n->id);
    int dfd = openat(ff.files_fd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (dfd < 0)
        return -errno;
    uint64_t size = (uint64_t)st.st_size;
    int rc = ftruncate(dfd, st.st_size) ? -errno : 0;
    for (int i = 0; !rc && i < n->nranges; i++) {
        uint64_t lo = n->ranges[i].lo, hi = n->ranges[i].hi < size ? n->ranges[i].hi : size;
        if (lo < hi)
            rc = copy_range(live_fd, dfd, lo, hi - lo);
    }
    close(dfd);
    if (!rc)
        n->nranges = 0;
    return rc;
}

/* fsync: makes n's content durable, read from live_fd (open for reading
 * on the live copy). The node's mutex is held throughout, so a second
 * fsync returns only once the first one's copy is done. */
int ff_flush(struct ff_node *n, int live_fd)
{
    pthread_mutex_lock(&n->mu);
    int rc = n->nranges ? flush_locked(n, live_fd) : 0;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

/* Writes len bytes as durable/<dirfd>/<id>, whole or not at all. */
static int put_whole(int dirfd, uint64_t id, const char *buf, size_t len)
{
    char name[24], tmp[32];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = 0;
    for (size_t done = 0; !rc && done < len;) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w < 0 && errno != EINTR)
            rc = -errno;
        else if (w > 0)
            done += (size_t)w;
    }
    close(fd);
    if (!rc && renameat(dirfd, tmp, dirfd, name))
        rc = -errno;
    return rc;
}

/* One entry of a name table; a symlink's target is kept with it. */
static int table_entry(FILE *out, int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
        return errno == ENOENT ? 0 : -errno;
    char type = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : S_ISLNK(st.st_mode) ? 'l' : 0;
    if (!type)
        return 0;                   /* fifos, sockets, devices: not kept */
    struct ff_node *n = ff_node_get(st.st_ino, 1);
    if (type == 'l') {
        char target[4096];
        ssize_t len = readlinkat(dfd, name, target, sizeof(target));
        int rc = len < 0 ? -errno : put_whole(ff.files_fd, n->id, target, (size_t)len);
        if (rc)
            return rc;
    }
    fprintf(out, "%c %" PRIu64 " %o %zu %s\n", type, n->id, (unsigned)(st.st_mode & 07777),
            strlen(name), name);
    return 0;
}

/* Makes the live directory dfd's entries its durable name table. */
static int dir_write_table(int dfd)
{
    struct stat st;
    if (fstat(dfd, &st))
        return -errno;
    uint64_t id = ff_node_get(st.st_ino, 1)->id;
    DIR *d = dir_open(dfd);
    if (!d)
        return -errno;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        abort();
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            rc = table_entry(out, dfd, e->d_name);
    closedir(d);
    fclose(out);
    if (!rc)
        rc = put_whole(ff.dirs_fd, id, buf, len);
    free(buf);
    return rc;
}

/* fsyncdir: the directory's entries as they are now become durable. */
int ff_dir_persist(const char *path)
{
    int dfd = openat(ff.live_fd, ff_rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    int rc = dir_write_table(dfd);
    close(dfd);
    return rc;
}

/* Flushes every file under dfd with unsynced bytes, then writes every
 * directory's table, deepest first. */
static int sync_tree(int dfd)
{
    DIR *d = dir_open(dfd);
    if (!d)
        return -errno;
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
            continue;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            rc = sub < 0 ? -errno : sync_tree(sub);
            if (sub >= 0)
                close(sub);
        } else if (S_ISREG(st.st_mode)) {
            struct ff_node *n = ff_node_get(st.st_ino, 0);
            int f = n ? openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC) : -1;
            rc = n && f < 0 ? -errno : n ? ff_flush(n, f) : 0;
            if (f >= 0)
                close(f);
        }
    }
    closedir(d);
    return rc ? rc : dir_write_table(dfd);
}

/* sync(2) of the whole file system. Caller holds ff.lock exclusively. */
int ff_sync_all(void)
{
    return sync_tree(ff.live_fd);
}

/* Removes everything inside the directory dfd. */
static void clear_dir(int dfd)
{
    DIR *d = dir_open(dfd);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (unlinkat(dfd, e->d_name, 0) && (errno == EISDIR || errno == EPERM)) {
            int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                clear_dir(sub);
                close(sub);
            }
            unlinkat(dfd, e->d_name, AT_REMOVEDIR);
        }
    }
    closedir(d);
}

/* The whole of durable/<dirfd>/<id> (a missing one reads as empty);
 * the caller frees it. */
static char *read_whole(int dirfd, uint64_t id, size_t *len)
{
    char name[24];
    snprintf(name, sizeof(name), "%" PRIu64, id);
    *len = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        if (fd >= 0)
            close(fd);
        return xcalloc(1, 1);
    }
    char *buf = xcalloc(1, (size_t)st.st_size + 1);
    ssize_t r = pread(fd, buf, (size_t)st.st_size, 0);
    *len = r > 0 ? (size_t)r : 0;
    close(fd);
    return buf;
}

static int make_file(int dfd, const char *name, uint64_t id, mode_t mode)
{
    int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (out < 0)
        return -errno;
    char src[24];
    snprintf(src, sizeof(src), "%" PRIu64, id);
    int in = openat(ff.files_fd, src, O_RDONLY | O_CLOEXEC);
    int rc = in >= 0 ? copy_range(in, out, 0, UINT64_MAX) : 0;
    struct stat st;
    if (!rc && fstat(out, &st))
        rc = -errno;
    if (!rc)
        node_insert(st.st_ino, id);
    if (in >= 0)
        close(in);
    close(out);
    return rc;
}

static int materialize(int dfd, const char *prefix, uint64_t dir_id, void **seen);

/* Makes one durable entry in the live directory dfd. */
static int make_entry(int dfd, const char *prefix, char type, uint64_t id, mode_t mode,
                      const char *name, void **seen)
{
    char *path;
    if (asprintf(&path, "%s%s%s", prefix, *prefix ? "/" : "", name) < 0)
        abort();
    struct seen key = {.id = id}, **had = tfind(&key, seen, seen_cmp);
    if (had) {                      /* a second name: a hard link (or a directory named twice) */
        int rc = (*had)->path && linkat(ff.live_fd, (*had)->path, dfd, name, 0) ? -errno : 0;
        free(path);
        return rc;
    }
    struct seen *s = xcalloc(1, sizeof(*s));
    s->id = id;
    s->path = type == 'd' ? NULL : path;
    if (!tsearch(s, seen, seen_cmp))
        abort();
    int rc = 0;
    struct stat st;
    if (type == 'd') {
        int sub = mkdirat(dfd, name, mode) ? -1 :
                  openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rc = sub < 0 || fstat(sub, &st) ? -errno : 0;
        if (!rc) {
            node_insert(st.st_ino, id);
            rc = materialize(sub, path, id, seen);
        }
        if (sub >= 0)
            close(sub);
        free(path);
    } else if (type == 'f') {
        rc = make_file(dfd, name, id, mode);
    } else {
        size_t len;
        char *target = read_whole(ff.files_fd, id, &len);
        rc = symlinkat(target, dfd, name) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
        if (!rc)
            node_insert(st.st_ino, id);
        free(target);
    }
    return rc;
}

/* Fills the live directory dfd (empty) from the durable table dir_id. */
static int materialize(int dfd, const char *prefix, uint64_t dir_id, void **seen)
{
    size_t len;
    char *tab = read_whole(ff.dirs_fd, dir_id, &len);
    char *p = tab, *end = tab + len;
    int rc = 0;
    while (!rc && p < end) {
        char type;
        uint64_t id;
        unsigned mode;
        size_t nlen;
        int used;
        if (sscanf(p, "%c %" SCNu64 " %o %zu %n", &type, &id, &mode, &nlen, &used) != 4 ||
            nlen == 0 || nlen > (size_t)(end - p - used) || !strchr("fdl", type)) {
            rc = -EUCLEAN;          /* a table faultfs did not write */
            break;
        }
        char *name = p + used;
        char saved = name[nlen];
        name[nlen] = '\0';
        rc = make_entry(dfd, prefix, type, id, (mode_t)mode, name, seen);
        name[nlen] = saved;
        p = name + nlen + 1;
    }
    free(tab);
    return rc;
}

/* Drops durable copies of ids the rebuilt tree does not name (and
 * half-written .tmp files); returns the highest id kept. */
static uint64_t drop_unnamed(int dirfd, void **seen)
{
    uint64_t max = FF_ROOT_ID;
    DIR *d = dir_open(dirfd);
    if (!d)
        return max;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *endp;
        struct seen key = {.id = strtoull(e->d_name, &endp, 10)};
        if (!*endp && (key.id == FF_ROOT_ID || tfind(&key, seen, seen_cmp)))
            max = key.id > max ? key.id : max;
        else
            unlinkat(dirfd, e->d_name, 0);
    }
    closedir(d);
    return max;
}

static void free_seen(void *p)
{
    struct seen *s = p;
    free(s->path);
    free(s);
}

static void free_node(void *p)
{
    struct ff_node *n = p;
    pthread_mutex_destroy(&n->mu);
    free(n);
}

/* Every node, in the map or detached. Caller holds map_mu (or runs
 * alone). */
static void drop_nodes(void)
{
    tdestroy(ff.by_ino, free_node);
    ff.by_ino = NULL;
    while (ff.detached) {
        struct ff_node *n = ff.detached;
        ff.detached = n->next_detached;
        free_node(n);
    }
}

/* The cut (and the mount): the live tree becomes exactly the durable
 * one. Every node goes, so the caller holds ff.lock exclusively and has
 * bumped ff.gen first. */
int ff_rebuild(void)
{
    clear_dir(ff.live_fd);
    pthread_mutex_lock(&ff.map_mu);
    drop_nodes();
    struct stat st;
    int rc = fstat(ff.live_fd, &st) ? -errno : 0;
    if (!rc)
        node_insert(st.st_ino, FF_ROOT_ID);
    pthread_mutex_unlock(&ff.map_mu);
    void *seen = NULL;
    if (!rc)
        rc = materialize(ff.live_fd, "", FF_ROOT_ID, &seen);
    uint64_t a = drop_unnamed(ff.dirs_fd, &seen), b = drop_unnamed(ff.files_fd, &seen);
    tdestroy(seen, free_seen);
    pthread_mutex_lock(&ff.map_mu);
    ff.next_id = (a > b ? a : b) + 1;
    pthread_mutex_unlock(&ff.map_mu);
    return rc;
}

static int open_sub(int at, const char *name)
{
    if (mkdirat(at, name, 0700) && errno != EEXIST)
        return -1;
    return openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Opens (making what is missing) BACKING/live and BACKING/durable. */
int ff_open_backing(const char *dir)
{
    int b = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int dur = b >= 0 ? open_sub(b, "durable") : -1;
    ff.live_fd = b >= 0 ? open_sub(b, "live") : -1;
    ff.dirs_fd = dur >= 0 ? open_sub(dur, "dirs") : -1;
    ff.files_fd = dur >= 0 ? open_sub(dur, "files") : -1;
    int rc = ff.live_fd < 0 || ff.dirs_fd < 0 || ff.files_fd < 0 ? -errno : 0;
    if (dur >= 0)
        close(dur);
    if (b >= 0)
        close(b);
    return b < 0 ? -errno : rc;
}

void ff_close_backing(void)
{
    drop_nodes();
    close(ff.live_fd);
    close(ff.dirs_fd);
    close(ff.files_fd);
}

static uint64_t dirty_count;

static void count_dirty(const void *nodep, VISIT which, int depth)
{
    (void)depth;
    const struct ff_node *n = *(struct ff_node *const *)nodep;
    if ((which == postorder || which == leaf) && __atomic_load_n(&n->nranges, __ATOMIC_RELAXED))
        dirty_count++;
}

/* Files with bytes not yet durable (for the status read). */
uint64_t ff_dirty_files(void)
{
    pthread_mutex_lock(&ff.map_mu);
    dirty_count = 0;
    twalk(ff.by_ino, count_dirty);
    uint64_t n = dirty_count;
    pthread_mutex_unlock(&ff.map_mu);
    return n;
}
