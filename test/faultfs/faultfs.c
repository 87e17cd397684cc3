/* faultfs: a FUSE file system that loses exactly what a power cut loses.
 *
 *   faultfs BACKING MOUNTPOINT [-f] [-o FUSE options]
 *
 * Why. kill -9 of a daemon proves that what it acknowledged survives the
 * process, not the machine: the page cache outlives the process, so data
 * written and never fsynced still reads back. faultfs keeps what was
 * written apart from what was made durable and, on command, throws away
 * the difference, as a power loss would (the idea of Jepsen's LazyFS).
 * Run a daemon's files on it, cut, restart the daemon: whatever it then
 * reads is what its fsyncs had promised, nothing more.
 *
 * Model. BACKING/live is the file system as readers see it: every
 * operation goes straight through to it (a passthrough), so reads,
 * listings and sizes are those of the backing file system. Beside it,
 * BACKING/durable holds what has been made durable (durable.c):
 *
 *   - a file's content is durable as of its last fsync or fdatasync: the
 *     byte ranges written since (kept per file, with truncations and
 *     fallocations) are copied to its durable copy then, and only then;
 *   - a directory's entries (creates, links, renames, unlinks, mkdir,
 *     rmdir, and the mode bits of what they name) are durable as of its
 *     last fsync (FUSE's fsyncdir): the directory's live listing becomes
 *     its durable name table. fsync of a file does not make its name
 *     durable: a file created and fsynced in a directory never fsynced
 *     is gone after a cut, as POSIX allows (ext4 often keeps it);
 *   - a file is known by an id, not by a name, so a rename is durable in
 *     each directory separately: a file renamed out of work/ into data/
 *     after its fsync, with data/ fsynced, is found in data/ with its
 *     content; a file never fsynced but named in a durable table comes
 *     back empty (the state ext4 shows after a crash);
 *   - "sync" (the control command; FUSE does not deliver sync(2) or
 *     syncfs(2)) flushes every file and every directory; so does a clean
 *     unmount.
 *
 * The cut. "cut" drops everything not durable: the live tree is made
 * again from the durable tables and contents (so every file is at its
 * last fsynced content and size, and every directory holds the entries
 * of its last fsync), and the file system goes down: every operation
 * but the control file's fails with EIO, and every handle opened before
 * the cut fails with EIO for good, like a dead disk, so that a process
 * still running writes into errors, never into success. The test then
 * kills its daemons, writes "up", and starts them again on the same
 * mount. Mounting again after faultfs itself was killed is a cut too: a
 * mount always starts from the durable state. Unsynced writes are
 * dropped whole: a cut never keeps some of them (no torn pages), so
 * faultfs tests what fsync promises, not which unsynced states a disk
 * could also leave.
 *
 * The control file. /.faultfs at the mount's root (not listed, not in
 * the backing directory). Write one command a line:
 *
 *   cut                           drop what is not durable; go down
 *   up                            serve again after a cut
 *   sync                          make everything durable
 *   fail PREFIX ERRNO [OPS]       fail operations under PREFIX with ERRNO
 *                                 (EIO, ENOSPC, EROFS, EDQUOT); OPS is
 *                                 read, write or all (the default)
 *   clear                         drop every fail rule
 *   slow-forget US                wait US microseconds (at most 1000000)
 *                                 between freeing an inode number (an
 *                                 unlink, a rename over a name) and
 *                                 forgetting its node, so a test can
 *                                 show no create in between reuses it
 *
 * A bad command fails the write with EINVAL. Read it for the status:
 * "state up|down", counters (gen, cuts, fsyncs, dirsyncs, syncs,
 * dirty_files, flushed_bytes, injected), then the rules as written.
 *
 * Injected failures. "write" operations are write, create, mknod, mkdir,
 * symlink, link, rename (judged by its destination), truncate,
 * fallocate, fsync and fsyncdir; "read" is read. unlink and rmdir never
 * fail, so that a full drive can be emptied. A failed operation changes
 * nothing. Paths are those under the mount ("/t0/mp1/data"); a handle's
 * operations use its current path (its path at open if it was unlinked).
 *
 * Not modelled: timestamps and owners (live only), extended attributes,
 * fifos and devices (never durable), a directory renamed between two
 * directories both fsynced in the wrong order (it is made once, under
 * the first name found), O_DIRECT and mmap beyond what reaches FUSE.
 *
 * Threads. libfuse runs operations on several threads. They share
 * ff.lock; a directory fsync, sync, cut and rule change take it
 * exclusively (writers first, so a stream of writes does not starve a
 * cut). */
#define FUSE_USE_VERSION 31

#include "faultfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* An open file. fi->fh holds it; 0 is the control file. */
struct ff_file {
    int fd;                         /* on the live copy, opened with the caller's flags */
    unsigned gen;                   /* ff.gen at open: a cut since makes it dead */
    struct ff_node *node;
    char *path;                     /* at open, for rules once it is unlinked */
    int flags;                      /* open(2) flags */
};

static struct ff_file *file_of(const struct fuse_file_info *fi)
{
    return fi ? (struct ff_file *)(uintptr_t)fi->fh : NULL;
}

/* Takes ff.lock shared for an operation of class ops (0: never failed)
 * on path; on an error the lock is not held. */
static int enter(const char *path, int ops)
{
    pthread_rwlock_rdlock(&ff.lock);
    int rc = ff.down ? -EIO : ff_fault(path, ops);
    if (rc)
        pthread_rwlock_unlock(&ff.lock);
    return rc;
}

/* enter() for an operation on an open file: also -EIO for a handle from
 * before a cut. */
static int enter_file(const char *path, struct ff_file *f, int ops)
{
    int rc = enter(path ? path : f->path, ops);
    if (!rc && f->gen != ff.gen) {
        pthread_rwlock_unlock(&ff.lock);
        rc = -EIO;
    }
    return rc;
}

static void leave(void)
{
    pthread_rwlock_unlock(&ff.lock);
}

static int err_of(int r)
{
    return r < 0 ? -errno : 0;
}

static int ff_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (ff_is_ctl(path)) {
        memset(st, 0, sizeof(*st));
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        return 0;
    }
    if (!strcmp(path, "/"))         /* the mount point answers even when down */
        return err_of(fstat(ff.live_fd, st));
    struct ff_file *f = file_of(fi);
    int rc = f ? enter_file(path, f, 0) : enter(path, 0);
    if (rc)
        return rc;
    rc = err_of(f ? fstat(f->fd, st) : fstatat(ff.live_fd, ff_rel(path), st, AT_SYMLINK_NOFOLLOW));
    leave();
    return rc;
}

static int ff_readlink(const char *path, char *buf, size_t size)
{
    int rc = enter(path, FF_OP_READ);
    if (rc)
        return rc;
    ssize_t n = readlinkat(ff.live_fd, ff_rel(path), buf, size - 1);
    leave();
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

static int ff_mknod(const char *path, mode_t mode, dev_t rdev)
{
    int rc = enter(path, FF_OP_WRITE);
    if (rc)
        return rc;
    if (S_ISREG(mode)) {
        int fd = openat(ff.live_fd, ff_rel(path), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        rc = err_of(fd);
        if (fd >= 0)
            close(fd);
    } else {
        rc = err_of(mknodat(ff.live_fd, ff_rel(path), mode, rdev));
    }
    leave();
    return rc;
}

static int ff_mkdir(const char *path, mode_t mode)
{
    int rc = enter(path, FF_OP_WRITE);
    if (rc)
        return rc;
    rc = err_of(mkdirat(ff.live_fd, ff_rel(path), mode));
    leave();
    return rc;
}

/* An inode number freed (map_mu held since before): its node goes, after
 * the wait "slow-forget" asked for. */
static void forget(ino_t ino)
{
    unsigned us = __atomic_load_n(&ff.forget_delay_us, __ATOMIC_RELAXED);
    if (us)
        usleep(us);
    ff_node_forget_locked(ino);
}

/* unlink and rmdir: an inode whose last name goes leaves the map. */
static int remove_name(const char *path, int flags)
{
    int rc = enter(path, 0);
    if (rc)
        return rc;
    struct stat st;
    rc = err_of(fstatat(ff.live_fd, ff_rel(path), &st, AT_SYMLINK_NOFOLLOW));
    if (!rc) {                   /* the number freed and the node gone, at once */
        pthread_mutex_lock(&ff.map_mu);
        rc = err_of(unlinkat(ff.live_fd, ff_rel(path), flags));
        if (!rc && (S_ISDIR(st.st_mode) || st.st_nlink <= 1))
            forget(st.st_ino);
        pthread_mutex_unlock(&ff.map_mu);
    }
    leave();
    return rc;
}

static int ff_unlink(const char *path)
{
    return remove_name(path, 0);
}

static int ff_rmdir(const char *path)
{
    return remove_name(path, AT_REMOVEDIR);
}

static int ff_symlink(const char *target, const char *path)
{
    int rc = enter(path, FF_OP_WRITE);
    if (rc)
        return rc;
    rc = err_of(symlinkat(target, ff.live_fd, ff_rel(path)));
    leave();
    return rc;
}

static int ff_rename(const char *from, const char *to, unsigned int flags)
{
    int rc = enter(to, FF_OP_WRITE);
    if (rc)
        return rc;
    struct stat sf, st;
    int replaced = !(flags & RENAME_EXCHANGE) &&
                   !fstatat(ff.live_fd, ff_rel(to), &st, AT_SYMLINK_NOFOLLOW) &&
                   !fstatat(ff.live_fd, ff_rel(from), &sf, AT_SYMLINK_NOFOLLOW) &&
                   sf.st_ino != st.st_ino;
    pthread_mutex_lock(&ff.map_mu);      /* as remove_name: the number and the node at once */
    rc = err_of(renameat2(ff.live_fd, ff_rel(from), ff.live_fd, ff_rel(to), flags));
    if (!rc && replaced && (S_ISDIR(st.st_mode) || st.st_nlink <= 1))
        forget(st.st_ino);
    pthread_mutex_unlock(&ff.map_mu);
    leave();
    return rc;
}

static int ff_link(const char *from, const char *to)
{
    int rc = enter(to, FF_OP_WRITE);
    if (rc)
        return rc;
    rc = err_of(linkat(ff.live_fd, ff_rel(from), ff.live_fd, ff_rel(to), 0));
    leave();
    return rc;
}

static int ff_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct ff_file *f = file_of(fi);
    int rc = f ? enter_file(path, f, 0) : enter(path, 0);
    if (rc)
        return rc;
    rc = err_of(f ? fchmod(f->fd, mode) : fchmodat(ff.live_fd, ff_rel(path), mode, 0));
    leave();
    return rc;
}

static int ff_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    struct ff_file *f = file_of(fi);
    int rc = f ? enter_file(path, f, 0) : enter(path, 0);
    if (rc)
        return rc;
    rc = err_of(f ? fchown(f->fd, uid, gid) :
                fchownat(ff.live_fd, ff_rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
    leave();
    return rc;
}

static int ff_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    struct ff_file *f = file_of(fi);
    int rc = f ? enter_file(path, f, 0) : enter(path, 0);
    if (rc)
        return rc;
    rc = err_of(f ? futimens(f->fd, tv) :
                utimensat(ff.live_fd, ff_rel(path), tv, AT_SYMLINK_NOFOLLOW));
    leave();
    return rc;
}

/* A truncation marks everything from the new size on: a later extension
 * must read as zeros from the durable copy too. */
static int ff_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (ff_is_ctl(path))
        return 0;                   /* "echo cut > .faultfs" opens with O_TRUNC */
    struct ff_file *f = file_of(fi);
    int rc = f ? enter_file(path, f, FF_OP_WRITE) : enter(path, FF_OP_WRITE);
    if (rc)
        return rc;
    int fd = f ? f->fd : openat(ff.live_fd, ff_rel(path), O_WRONLY | O_CLOEXEC);
    struct stat st;
    rc = fd < 0 || fstat(fd, &st) ? -errno : 0;
    if (!rc)
        rc = err_of(ftruncate(fd, size));
    if (!rc)
        ff_node_dirty(f ? f->node : ff_node_get(st.st_ino, 1), (uint64_t)size, UINT64_MAX);
    if (!f && fd >= 0)
        close(fd);
    leave();
    return rc;
}

/* Wraps an fd just opened on the live copy into fi->fh. Caller holds
 * ff.lock shared. */
static int file_new(int fd, const char *path, struct fuse_file_info *fi)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        int rc = -errno;
        if (fd >= 0)
            close(fd);
        return rc;
    }
    struct ff_file *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path)))
        abort();
    f->fd = fd;
    f->flags = fi->flags;
    f->gen = ff.gen;
    f->node = ff_node_get(st.st_ino, 1);
    if (fi->flags & O_TRUNC)
        ff_node_dirty(f->node, 0, UINT64_MAX);
    fi->fh = (uintptr_t)f;
    fi->keep_cache = 0;             /* a cut changes files under the kernel's cache */
    return 0;
}

static int ff_open(const char *path, struct fuse_file_info *fi)
{
    if (ff_is_ctl(path)) {
        fi->fh = 0;
        fi->direct_io = 1;          /* the status is made at each read */
        return 0;
    }
    int rc = enter(path, 0);
    if (rc)
        return rc;
    rc = file_new(openat(ff.live_fd, ff_rel(path), fi->flags | O_CLOEXEC), path, fi);
    leave();
    return rc;
}

static int ff_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int rc = enter(path, FF_OP_WRITE);
    if (rc)
        return rc;
    rc = file_new(openat(ff.live_fd, ff_rel(path), fi->flags | O_CREAT | O_CLOEXEC, mode), path, fi);
    leave();
    return rc;
}

static int ctl_read(char *buf, size_t size, off_t off)
{
    size_t len;
    char *text = ff_ctl_status(&len);
    size_t n = (size_t)off < len ? len - (size_t)off : 0;
    n = n < size ? n : size;
    memcpy(buf, text + (n ? off : 0), n);
    free(text);
    return (int)n;
}

static int ff_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct ff_file *f = file_of(fi);
    if (!f)
        return ctl_read(buf, size, off);
    int rc = enter_file(path, f, FF_OP_READ);
    if (rc)
        return rc;
    ssize_t n = pread(f->fd, buf, size, off);
    leave();
    return n < 0 ? -errno : (int)n;
}

static int ff_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct ff_file *f = file_of(fi);
    if (!f) {
        int rc = ff_ctl_command(buf, size);
        return rc ? rc : (int)size;
    }
    int rc = enter_file(path, f, FF_OP_WRITE);
    if (rc)
        return rc;
    ssize_t n = pwrite(f->fd, buf, size, off);
    struct stat st;
    if (n > 0) {                    /* with O_APPEND the bytes land at the end, not at off */
        uint64_t lo = (uint64_t)off, hi = (uint64_t)off + (uint64_t)n;
        if ((f->flags & O_APPEND) && !fstat(f->fd, &st)) {
            hi = (uint64_t)st.st_size;
            lo = hi - (uint64_t)n < lo ? hi - (uint64_t)n : lo;
        }
        ff_node_dirty(f->node, lo, hi);
    }
    leave();
    return n < 0 ? -errno : (int)n;
}

static int ff_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    return err_of(fstatvfs(ff.live_fd, st));
}

static int ff_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct ff_file *f = file_of(fi);
    if (f) {
        close(f->fd);
        free(f->path);
        free(f);
    }
    return 0;
}

/* The handle may be write-only: the durable copy is read through a
 * second, read-only open of the same inode. */
static int ff_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    struct ff_file *f = file_of(fi);
    if (!f)
        return 0;
    int rc = enter_file(path, f, FF_OP_WRITE);
    if (rc)
        return rc;
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
    int rfd = open(proc, O_RDONLY | O_CLOEXEC);
    rc = rfd < 0 ? -errno : ff_flush(f->node, rfd);
    if (rfd >= 0)
        close(rfd);
    if (!rc)
        __atomic_add_fetch(&ff.fsyncs, 1, __ATOMIC_RELAXED);
    leave();
    return rc;
}

static int ff_opendir(const char *path, struct fuse_file_info *fi)
{
    int rc = enter(path, 0);
    if (rc)
        return rc;
    struct stat st;
    rc = err_of(fstatat(ff.live_fd, ff_rel(path), &st, 0));
    if (!rc && !S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    fi->fh = ff.gen;
    leave();
    return rc;
}

/* The whole listing in one call, offsets 0 (libfuse keeps it). */
static int ff_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off;
    (void)flags;
    int rc = enter(path, FF_OP_READ);
    if (rc)
        return rc;
    int fd = fi->fh == ff.gen ? openat(ff.live_fd, ff_rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        rc = fi->fh != ff.gen ? -EIO : -errno;
        if (fd >= 0)
            close(fd);
        leave();
        return rc;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st = {.st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type)};
        if (fill(buf, e->d_name, &st, 0, 0))
            break;
    }
    closedir(d);
    leave();
    return 0;
}

static int ff_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    pthread_rwlock_wrlock(&ff.lock);
    int rc = ff.down || fi->fh != ff.gen ? -EIO : ff_fault(path, FF_OP_WRITE);
    if (!rc)
        rc = ff_dir_persist(path);
    if (!rc)
        __atomic_add_fetch(&ff.dirsyncs, 1, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&ff.lock);
    return rc;
}

static int ff_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
    struct ff_file *f = file_of(fi);
    if (!f)
        return -EOPNOTSUPP;
    int rc = enter_file(path, f, FF_OP_WRITE);
    if (rc)
        return rc;
    rc = err_of(fallocate(f->fd, mode, off, len));
    if (!rc)
        ff_node_dirty(f->node, (uint64_t)off, (uint64_t)off + (uint64_t)len);
    leave();
    return rc;
}

static void *ff_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->entry_timeout = 0;         /* a cut changes the tree under the kernel */
    cfg->attr_timeout = 0;
    cfg->negative_timeout = 0;
    cfg->hard_remove = 1;           /* no .fuse_hidden files in the durable tables */
    cfg->use_ino = 1;
    return NULL;
}

/* A clean unmount keeps everything, as a clean shutdown would. */
static void ff_destroy(void *data)
{
    (void)data;
    pthread_rwlock_wrlock(&ff.lock);
    if (!ff.down && ff_sync_all())
        fprintf(stderr, "faultfs: sync at unmount failed\n");
    pthread_rwlock_unlock(&ff.lock);
}

static const struct fuse_operations ops = {
    .getattr = ff_getattr,
    .readlink = ff_readlink,
    .mknod = ff_mknod,
    .mkdir = ff_mkdir,
    .unlink = ff_unlink,
    .rmdir = ff_rmdir,
    .symlink = ff_symlink,
    .rename = ff_rename,
    .link = ff_link,
    .chmod = ff_chmod,
    .chown = ff_chown,
    .truncate = ff_truncate,
    .open = ff_open,
    .read = ff_read,
    .write = ff_write,
    .statfs = ff_statfs,
    .release = ff_release,
    .fsync = ff_fsync,
    .opendir = ff_opendir,
    .readdir = ff_readdir,
    .fsyncdir = ff_fsyncdir,
    .init = ff_init,
    .destroy = ff_destroy,
    .create = ff_create,
    .utimens = ff_utimens,
    .fallocate = ff_fallocate,
};

int main(int argc, char **argv)
{
    if (argc < 3 || argv[1][0] == '-') {
        fprintf(stderr, "usage: faultfs BACKING MOUNTPOINT [-f] [-o FUSE options]\n");
        return 2;
    }
    umask(0);                       /* modes as the callers ask */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&ff.lock, &attr);
    pthread_mutex_init(&ff.map_mu, NULL);
    int rc = ff_open_backing(argv[1]);
    if (!rc)
        rc = ff_rebuild();
    if (rc) {
        fprintf(stderr, "faultfs: %s: %s\n", argv[1], strerror(-rc));
        return 1;
    }
    argv[1] = argv[0];              /* fuse_main takes the rest as they are */
    rc = fuse_main(argc - 1, argv + 1, &ops, NULL);
    ff_close_backing();
    ff_rules_clear();
    return rc;
}
