/*
 * storemp: the store's mountpaths (see store.h): opening them, at start
 * and at run time, the set new objects are placed on, and where a name
 * is while a resilver moves objects between them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "hrw.h"
#include "log.h"
#include "objname.h"
#include "store.h"
#include "storeint.h"
#include "util.h"

static int mp_id(struct store_mp *mp, char *err, size_t errlen)
{
    char *path = xasprintf("%s/mpath.id", mp->dir);
    int rc = 0;
    mp->id = id_file_load(path, "", 8, &rc);
    if (!mp->id) {
        snprintf(err, errlen, "mountpath %s: cannot write its id: %s", mp->dir,
                 strerror(-rc));
        free(path);
        return -1;
    }
    free(path);
    mp->hash = hrw_hash(mp->id, strlen(mp->id));
    return 0;
}

/* Does data/ hold the nested layout: a directory data/XX/YY? (The flat
 * one has files there, and an empty data/ holds neither.) 1, 0 or -errno. */
static int looks_nested(int data_fd)
{
    int fd = dup(data_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int rc = -errno;
        if (fd >= 0)
            close(fd);
        return rc;
    }
    int nested = 0;
    struct dirent *e;
    while (!nested && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        int sub = openat(data_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
        if (!sd && sub >= 0)
            close(sub);
        struct dirent *f;
        struct stat st;
        while (sd && !nested && (f = readdir(sd)))
            if (f->d_name[0] != '.' &&
                (f->d_type == DT_DIR ||
                 (f->d_type == DT_UNKNOWN &&    /* a file system that does not say */
                  fstatat(dirfd(sd), f->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISDIR(st.st_mode))))
                nested = 1;
        if (sd)
            closedir(sd);
    }
    closedir(d);
    return nested;
}

/* The layout of mp's data files (store.h), kept in its file "layout":
 * "flat" (data/XX/<hash>.<uid>, the 256 directories made here) or
 * "nested" (data/XX/YY/..., files written before the flat layout). A
 * mountpath without the file gets the one its data/ shows (flat when it
 * holds no object); a file that cannot be read stops the mountpath. */
static int mp_layout(struct store_mp *mp, char *err, size_t errlen)
{
    char *path = xasprintf("%s/layout", mp->dir);
    size_t len;
    char *had = file_read(path, 64, &len);
    int rc = 0, made = 0;
    if (had) {
        if (!strcmp(had, "flat\n") || !strcmp(had, "nested\n"))
            mp->nested = had[0] == 'n';
        else
            rc = -EINVAL;
    } else if (errno != ENOENT) {
        rc = -errno;
    } else if ((rc = looks_nested(mp->data_fd)) >= 0) {
        mp->nested = rc;
        const char *line = mp->nested ? "nested\n" : "flat\n";
        rc = file_write_atomic(path, line, strlen(line), 1);
    }
    for (unsigned i = 0; !rc && !mp->nested && i < 256; i++) {
        char sub[3];
        snprintf(sub, sizeof(sub), "%02x", i);
        if (mkdirat(mp->data_fd, sub, 0755) == 0)
            made = 1;
        else if (errno != EEXIST)
            rc = -errno;
    }
    if (!rc && made && fsync(mp->data_fd))
        rc = -errno;
    if (rc)
        snprintf(err, errlen, "mountpath %s: layout: %s%s", mp->dir, strerror(-rc),
                 rc == -EINVAL ? " (the file names no layout of this version)" : "");
    free(had);
    free(path);
    return rc;
}

/* Remove leftovers of writes that never committed. */
static void sweep_work(struct store_mp *mp)
{
    char *wd = xasprintf("%s/work", mp->dir);
    DIR *d = opendir(wd);
    long n = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            if (unlinkat(dirfd(d), e->d_name, 0) == 0)
                n++;
        }
        closedir(d);
    }
    if (n)
        log_info("mountpath %s: removed %ld unfinished work files", mp->dir, n);
    free(wd);
}

/* A new placement set from the enabled mountpaths; with set_mu held. */
static void set_rebuild(struct store *s)
{
    struct store_set *n = xcalloc(1, sizeof(*n));
    int cnt = __atomic_load_n(&s->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < cnt; i++) {
        if (!__atomic_load_n(&s->mp[i].enabled, __ATOMIC_RELAXED))
            continue;
        n->idx[n->n] = i;
        n->hashes[n->n++] = s->mp[i].hash;
    }
    n->older = s->set;
    __atomic_store_n(&s->set, n, __ATOMIC_RELEASE);
    __atomic_add_fetch(&s->gen, 1, __ATOMIC_RELEASE);
}

/* A mountpath's memtable size: 32 MiB, for the bytes of small objects
 * (store.h: inline_max) pass through it and fewer, larger flushes keep
 * level 0 short; an eighth of a drive smaller than 256 MiB (at least
 * 1 MiB), since a memtable's log stays until it is flushed. */
static size_t memtable_size(int fd)
{
    struct statvfs v;
    uint64_t want = 32u << 20;
    if (fstatvfs(fd, &v) == 0 && (uint64_t)v.f_blocks * v.f_frsize / 8 < want)
        want = (uint64_t)v.f_blocks * v.f_frsize / 8;
    return want < (1u << 20) ? 1u << 20 : (size_t)want;
}

/* Open dir as mountpath s->mp[n] (not yet counted); 0 or -1 with err. */
static int mp_open(struct store *s, const char *dir, char *err, size_t errlen)
{
    int i = s->n;
    if (i == STORE_MP_MAX) {
        snprintf(err, errlen, "at most %d mountpaths", STORE_MP_MAX);
        return -1;
    }
    struct store_mp *mp = &s->mp[i];
    memset(mp, 0, sizeof(*mp));
    mp->dir = xstrdup(dir);
    mp->s = s;
    mp->data_fd = -1;
    pthread_mutex_init(&mp->mu, NULL);
    store_gsync_init(&mp->wal);
    const char *sub[] = {"", "/data", "/work", "/meta"};
    for (size_t j = 0; j < ARRAY_LEN(sub); j++) {
        char *d = xasprintf("%s%s", mp->dir, sub[j]);
        int rc = mkdir_p(d, 0755);
        free(d);
        if (rc) {
            snprintf(err, errlen, "mountpath %s: %s", mp->dir, strerror(-rc));
            goto fail;
        }
    }
    if (mp_id(mp, err, errlen))
        goto fail;
    for (int j = 0; j < i; j++) {
        if (!strcmp(s->mp[j].id, mp->id) && !s->mp[j].gone) {
            snprintf(err, errlen, "mountpaths %s and %s have the same id (copied, or the same)",
                     s->mp[j].dir, mp->dir);
            goto fail;
        }
    }
    char *datadir = xasprintf("%s/data", mp->dir);
    mp->data_fd = open(datadir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(datadir);
    if (mp->data_fd < 0) {
        snprintf(err, errlen, "mountpath %s: data: %s", mp->dir, strerror(errno));
        goto fail;
    }
    if (mp_layout(mp, err, errlen))
        goto fail;
    char *metadir = xasprintf("%s/meta", mp->dir);
    char *e = NULL;
    rocksdb_options_t *o = rocksdb_options_create_copy(s->opts);
    rocksdb_options_set_write_buffer_size(o, memtable_size(mp->data_fd));
    static const char *const families[] = {"default"};
    const rocksdb_options_t *fo[] = {o};
    mp->db = rocksdb_open_column_families(o, metadir, 1, families, fo, &mp->cf, &e);
    rocksdb_options_destroy(o);
    free(metadir);
    if (!mp->db) {
        snprintf(err, errlen, "mountpath %s: cannot open metadata: %s", mp->dir, e ? e : "?");
        free(e);
        goto fail;
    }
    sweep_work(mp);
    store_mp_settle(s, mp);
    return 0;
fail:
    if (mp->data_fd >= 0)
        close(mp->data_fd);
    free(mp->dir);
    free(mp->id);
    pthread_mutex_destroy(&mp->mu);
    store_gsync_destroy(&mp->wal);
    memset(mp, 0, sizeof(*mp));
    return -1;
}

int store_open(struct store *s, char **dirs, int n, char **off, int noff, int do_fsync,
               char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    if (n < 1) {
        snprintf(err, errlen, "option 'mountpaths' needs at least one directory");
        return -1;
    }
    pthread_mutex_init(&s->set_mu, NULL);
    s->fsync = do_fsync;
    s->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(s->opts, 1);
    /* each mountpath's memtables: memtable_size */
    rocksdb_options_set_max_write_buffer_number(s->opts, 2);
    rocksdb_options_set_max_open_files(s->opts, 512);
    rocksdb_options_set_compression(s->opts, rocksdb_lz4_compression);
    /* RocksDB's own log (LOG, beside its files) only for the fatal: once a
     * line of it fails on a full drive, the next one aborts the process (a
     * debug assertion left on in the packaged library); the errors RocksDB
     * returns are logged by the store (store_db_errno) */
    rocksdb_options_set_info_log_level(s->opts, 4);   /* FATAL_LEVEL */
    s->cache = rocksdb_cache_create_lru(32u << 20);
    s->topts = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(s->topts, s->cache);
    /* a point lookup (a GET's record, an inline version's bytes) skips
     * the files that cannot hold its key */
    rocksdb_block_based_options_set_filter_policy(s->topts,
                                                  rocksdb_filterpolicy_create_bloom(10));
    rocksdb_options_set_block_based_table_factory(s->opts, s->topts);
    s->wo_sync = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(s->wo_sync, do_fsync);
    s->wo = rocksdb_writeoptions_create();
    s->ro = rocksdb_readoptions_create();
    s->mp = xcalloc(STORE_MP_MAX, sizeof(*s->mp));
    for (int i = 0; i < n + noff; i++) {
        if (mp_open(s, i < n ? dirs[i] : off[i - n], err, errlen))
            return -1;
        s->mp[i].enabled = i < n;
        s->n = i + 1;
    }
    s->moving = noff > 0;        /* objects of the removed ones move once a resilver runs */
    set_rebuild(s);
    return 0;
}

void store_close(struct store *s)
{
    for (int i = 0; i < s->n; i++) {
        if (s->mp[i].cf)
            rocksdb_column_family_handle_destroy(s->mp[i].cf);
        if (s->mp[i].db)
            rocksdb_close(s->mp[i].db);
        if (s->mp[i].data_fd >= 0)
            close(s->mp[i].data_fd);
        free(s->mp[i].dir);
        free(s->mp[i].id);
        pthread_mutex_destroy(&s->mp[i].mu);
        store_gsync_destroy(&s->mp[i].wal);
    }
    free(s->mp);
    for (struct store_set *st = s->set, *o; st; st = o) {
        o = st->older;
        free(st);
    }
    if (s->opts) {
        rocksdb_options_destroy(s->opts);
        rocksdb_block_based_options_destroy(s->topts);
        rocksdb_cache_destroy(s->cache);
        rocksdb_writeoptions_destroy(s->wo_sync);
        rocksdb_writeoptions_destroy(s->wo);
        rocksdb_readoptions_destroy(s->ro);
        pthread_mutex_destroy(&s->set_mu);
    }
    memset(s, 0, sizeof(*s));
}

int store_mp_index(struct store *s, const char *dir)
{
    int n = __atomic_load_n(&s->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (!strcmp(s->mp[i].dir, dir) && !__atomic_load_n(&s->mp[i].gone, __ATOMIC_RELAXED))
            return i;
    return -1;
}

int store_mp_add(struct store *s, const char *dir, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->set_mu);
    int i = store_mp_index(s, dir);
    if (i >= 0) {
        snprintf(err, errlen, "mountpath %s is open already", dir);
        pthread_mutex_unlock(&s->set_mu);
        return -1;
    }
    i = s->n;
    if (mp_open(s, dir, err, errlen)) {
        pthread_mutex_unlock(&s->set_mu);
        return -1;
    }
    s->mp[i].enabled = 1;
    __atomic_store_n(&s->n, i + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->moving, 1, __ATOMIC_RELEASE);
    set_rebuild(s);
    pthread_mutex_unlock(&s->set_mu);
    log_info("mountpath %s added: objects HRW places on it move there", dir);
    return i;
}

int store_mp_enable(struct store *s, int i, int on)
{
    pthread_mutex_lock(&s->set_mu);
    struct store_mp *mp = &s->mp[i];
    if (!on && mp->enabled && s->set->n == 1) {
        pthread_mutex_unlock(&s->set_mu);
        return -EBUSY;           /* new objects need somewhere to go */
    }
    if (mp->enabled != on) {
        __atomic_store_n(&mp->enabled, on, __ATOMIC_RELAXED);
        __atomic_store_n(&s->moving, 1, __ATOMIC_RELEASE);
        set_rebuild(s);
    }
    pthread_mutex_unlock(&s->set_mu);
    return 0;
}

void store_note_error(struct store_mp *mp, int rc)
{
    struct store *s = mp->s;
    if (rc != -EIO && rc != -EROFS)
        return;
    int n = __atomic_add_fetch(&mp->io_errors, 1, __ATOMIC_RELAXED);
    log_error("mountpath %s: I/O error %d of %d: %s", mp->dir, n, STORE_MP_ERRORS,
              strerror(-rc));
    if (n != STORE_MP_ERRORS)
        return;
    __atomic_store_n(&mp->failed, 1, __ATOMIC_RELAXED);   /* before it stops being placed */
    if (store_mp_enable(s, (int)(mp - s->mp), 0)) {
        __atomic_store_n(&mp->failed, 0, __ATOMIC_RELAXED);
        log_error("mountpath %s fails, but it is the last one: it stays", mp->dir);
        return;
    }
    log_error("mountpath %s disabled: its objects move to the others", mp->dir);
    if (s->on_failed)
        s->on_failed(s->on_failed_arg, mp);
}

struct store_mp *store_place(struct store *s, const char *mkey, size_t klen)
{
    const struct store_set *st = __atomic_load_n(&s->set, __ATOMIC_ACQUIRE);
    /* a version goes with its name: keeping it is a rename on one drive */
    size_t bl = objname_base_len(mkey, klen);
    return &s->mp[st->idx[hrw_pick(hrw_hash(mkey, bl), st->hashes, st->n)]];
}

int store_mark_damaged(struct store *s, const char *mkey, size_t klen, uint64_t uid)
{
    struct store_mp *mp = store_pick(s, mkey, klen);
    struct objmeta *m = xmalloc(sizeof(*m));
    char *buf = xmalloc(OBJMETA_MAX);
    pthread_mutex_lock(&mp->mu);
    int rc = store_get(s, mp, mkey, klen, m);
    if (!rc && uid && m->uid != uid)
        rc = -ESTALE;            /* written again since the caller looked */
    if (!rc && !(m->flags & OBJMETA_F_DAMAGED)) {
        m->flags |= OBJMETA_F_DAMAGED; /* its version stays: a good copy of it replaces it */
        rc = store_kv_put(s, mp, mkey, klen, buf, objmeta_encode(m, buf));
    }
    pthread_mutex_unlock(&mp->mu);
    free(buf);
    free(m);
    return rc;
}

uint64_t store_held_version(const struct objmeta *m)
{
    uint64_t v = m->version ? m->version : 1;
    return (m->flags & OBJMETA_F_DAMAGED) && v > 1 ? v - 1 : v;
}

uint64_t store_version(struct store *s, struct store_mp *mp, const char *mkey, size_t klen)
{
    struct objmeta m;
    uint64_t v = 0, tv = 0;
    if (store_get(s, mp, mkey, klen, &m) == 0)
        v = store_held_version(&m);
    if (store_tomb_get(s, mp, mkey, klen, &tv) == 0 && tv > v)
        v = tv;
    return v;
}

struct store_mp *store_pick(struct store *s, const char *mkey, size_t klen)
{
    struct store_mp *w = store_place(s, mkey, klen);
    if (!__atomic_load_n(&s->moving, __ATOMIC_ACQUIRE))
        return w;
    /* while objects move: the newest copy, wherever it sits (a write that
     * chose its mountpath before a change may land after a copy moved) */
    struct store_mp *best = w;
    uint64_t bv = store_version(s, w, mkey, klen);
    int n = __atomic_load_n(&s->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        struct store_mp *mp = &s->mp[i];
        if (mp == w || __atomic_load_n(&mp->gone, __ATOMIC_RELAXED))
            continue;
        uint64_t v = store_version(s, mp, mkey, klen);
        if (v > bv) {
            bv = v;
            best = mp;
        }
    }
    return best;
}

/* Does mp hold no object record or slice (and, with tombs, no tombstone)? */
static int mp_empty(struct store *s, struct store_mp *mp, int tombs)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator(mp->db, s->ro);
    int any = 0;
    static const char *const kinds = "ost";
    for (int k = 0; k < 2 + tombs && !any; k++) {
        const char pre[2] = {kinds[k], '\0'};
        rocksdb_iter_seek(it, pre, 1);
        size_t kl;
        any = rocksdb_iter_valid(it) && (rocksdb_iter_key(it, &kl)[0] == pre[0]);
    }
    rocksdb_iter_destroy(it);
    return !any;
}

int store_mp_retire(struct store *s, int i)
{
    struct store_mp *mp = &s->mp[i];
    pthread_mutex_lock(&mp->mu);
    int empty = !__atomic_load_n(&mp->enabled, __ATOMIC_RELAXED) && mp_empty(s, mp, 1);
    if (empty)
        __atomic_store_n(&mp->gone, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&mp->mu);
    return empty;
}

int store_empty(struct store *s)
{
    int n = __atomic_load_n(&s->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (!__atomic_load_n(&s->mp[i].gone, __ATOMIC_RELAXED) && !mp_empty(s, &s->mp[i], 0))
            return 0;
    return 1;
}

/* ---- room for the records ------------------------------------------------- */

/*
 * A full drive must never reach RocksDB: once one of its writes fails, it
 * refuses every write until DB::Resume (not in its C API), and a sync of
 * its log after the failure aborts the process (a debug assertion left on
 * in the packaged library), as does Resume itself. So no write is handed
 * to it while its drive has less than its margin free (STORE_DB_MARGIN,
 * or a 64th of a smaller drive; a delete, which frees room, an eighth of
 * that) (store_db_room: a statvfs, skipped for ROOM_FRESH_NS after one
 * that found ROOM_SPARE); the operation fails with ENOSPC (507) instead,
 * and is taken again as soon as there is room. Should a write fail all the same (EIO, or a drive
 * filled in between), the mountpath's database takes no more and its log
 * is never synced again (db_failed): the target stays up and serves reads.
 */
#define STORE_DB_MARGIN (4u << 20)
#define ROOM_SPARE (64u << 20)
#define ROOM_FRESH_NS 20000000ull
static const char no_room[] = "No space left on device: the drive's last MiB are kept for its "
                              "records";

int store_db_room(struct store_mp *mp, char **e, int deleting)
{
    uint64_t now = mono_ns();
    if (now - __atomic_load_n(&mp->room_ns, __ATOMIC_RELAXED) < ROOM_FRESH_NS)
        return 1;
    struct statvfs v;
    if (fstatvfs(mp->data_fd, &v))
        return 1;                /* cannot tell: RocksDB tries */
    uint64_t free_b = (uint64_t)v.f_bavail * v.f_frsize;
    uint64_t total = (uint64_t)v.f_blocks * v.f_frsize;
    uint64_t margin = total / 64 < STORE_DB_MARGIN ? total / 64 : STORE_DB_MARGIN;
    if (free_b >= ROOM_SPARE)
        __atomic_store_n(&mp->room_ns, now, __ATOMIC_RELAXED);
    if (free_b >= (deleting ? margin / 8 : margin))
        return 1;
    *e = xstrdup(no_room);
    return 0;
}

void store_db_wrote(struct store_mp *mp, const char *k, const char *e)
{
    if (e && strcmp(e, no_room))
        __atomic_store_n(&mp->db_failed, strstr(e, "No space left") || strstr(e, "ENOSPC")
                                             ? -ENOSPC : -EIO, __ATOMIC_RELEASE);
    if (k && k[0] == 'o')
        __atomic_add_fetch(&mp->wgen, 1, __ATOMIC_RELEASE);
}
