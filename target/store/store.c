/*
 * store: see store.h for the layout and the commit protocol.
 */
#include "store.h"
#include "storeint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hdrparse.h"
#include "hlc.h"
#include "log.h"
#include "objname.h"
#include "util.h"
#include "vmap.h"
#include "xxh.h"

/* RocksDB reports errors as text; ENOSPC must reach the client as 507. */
int store_db_errno(char *e)
{
    int rc = strstr(e, "No space left") || strstr(e, "ENOSPC") ? -ENOSPC : -EIO;
    log_error("rocksdb: %s", e);
    free(e);
    return rc;
}

char *store_gkey(const char *path, size_t *klen)
{
    size_t n = strlen(path);
    char *k = xmalloc(n + 1);
    k[0] = 'g';
    memcpy(k + 1, path, n);
    *klen = n + 1;
    return k;
}

/* Settle every intent left by a crash (see the commit protocol). */
void store_mp_settle(struct store *s, struct store_mp *mp)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator(mp->db, s->ro);
    long removed = 0, kept = 0;
    for (rocksdb_iter_seek(it, "g", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (kl < 1 || k[0] != 'g')
            break;
        const char *v = rocksdb_iter_value(it, &vl);
        char *path = xstrndup(k + 1, kl - 1);
        struct objmeta m;
        int referenced = 0;
        if (store_get(s, mp, v, vl, &m) == 0 && !objmeta_inline(&m)) {
            char cur[PATH_MAX];
            store_data_path(mp, v, vl, m.uid, cur, sizeof(cur));
            referenced = strcmp(cur, path) == 0;
        }
        if (!referenced && unlink(path) == 0)
            removed++;
        kept += referenced;
        char *e = NULL;
        if (store_db_room(mp, &e, 1))
            rocksdb_delete(mp->db, s->wo, k, kl, &e);
        free(e);
        free(path);
    }
    rocksdb_iter_destroy(it);
    if (removed || kept)
        log_info("mountpath %s: settled intents: %ld files removed, %ld kept", mp->dir,
                 removed, kept);
}

char *store_mkey(const char *provider, const char *bucket, const char *name, size_t name_len,
                 size_t *klen)
{
    size_t pl = strlen(provider), bl = strlen(bucket);
    size_t n = 1 + pl + 1 + bl + 1 + name_len;
    char *k = xmalloc(n + 1);
    k[0] = 'o';
    memcpy(k + 1, provider, pl + 1);
    memcpy(k + 2 + pl, bucket, bl + 1);
    memcpy(k + 3 + pl + bl, name, name_len);
    k[n] = '\0';
    *klen = n;
    return k;
}

/* The data file's name below data/: XX/<xxh3-128>.<uid> (XX/YY/... on a
 * mountpath of the nested layout, store.h), the hash of the name a
 * version is of, so that keeping a version (vers.h) leaves its file where
 * it is. */
static void data_name(const struct store_mp *mp, const char *mkey, size_t klen, uint64_t uid,
                      char *out, size_t outlen)
{
    XXH128_hash_t h = XXH3_128bits(mkey, objname_base_len(mkey, klen));
    unsigned hi = (unsigned)(h.high64 >> 56), lo = (unsigned)((h.high64 >> 48) & 0xff);
    if (mp->nested)
        snprintf(out, outlen, "%02x/%02x/%016llx%016llx.%016llx", hi, lo,
                 (unsigned long long)h.high64, (unsigned long long)h.low64,
                 (unsigned long long)uid);
    else
        snprintf(out, outlen, "%02x/%016llx%016llx.%016llx", hi, (unsigned long long)h.high64,
                 (unsigned long long)h.low64, (unsigned long long)uid);
}

/* The path of a committed data file. */
void store_data_path(const struct store_mp *mp, const char *mkey, size_t klen, uint64_t uid,
                     char *out, size_t outlen)
{
    char name[80];
    data_name(mp, mkey, klen, uid, name, sizeof(name));
    snprintf(out, outlen, "%s/data/%s", mp->dir, name);
}

int store_data_open_served(const struct store_mp *mp, const char *mkey, size_t klen,
                           const struct objmeta *m)
{
    if (objmeta_inline(m))
        return store_inline_open(mp, mkey, klen, m);
    char name[80];
    data_name(mp, mkey, klen, m->uid, name, sizeof(name));
    int fd = openat(mp->data_fd, name, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int store_data_open(const struct store_mp *mp, const char *mkey, size_t klen,
                    const struct objmeta *m)
{
    int fd = store_data_open_served(mp, mkey, klen, m);
    struct stat st;
    /* what it reads is not a read's checked pages (vmap.h) */
    if (fd >= 0 && !objmeta_inline(m)) {
        int known = fstat(fd, &st) == 0;
        vmap_reading(known ? &st : NULL, m->uid,
                     known ? (uint64_t)st.st_size : UINT64_MAX / 2);
    }
    return fd;
}

int store_work_open(struct store_mp *mp, uint64_t *uid, char *path, size_t pathlen)
{
    for (int tries = 0; tries < 4; tries++) {
        rand_bytes(uid, sizeof(*uid));
        snprintf(path, pathlen, "%s/work/%016llx", mp->dir, (unsigned long long)*uid);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST) {
            int rc = -errno;
            store_note_error(mp, rc);
            return rc;
        }
    }
    return -EEXIST;
}

int store_work_open_mem(uint64_t *uid, char *path, size_t pathlen)
{
    rand_bytes(uid, sizeof(*uid));
    if (pathlen)
        path[0] = '\0';
    int fd = memfd_create("shoal-work", MFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* The record and an inline version's bytes are read in one MultiGet, from
 * one view of the database, so a commit between them cannot pair one
 * version's record with another's bytes. Bytes missing or not of the
 * record's size leave the record found, with inl_loaded 0: its readers
 * meet that as damage (store_data_open: -EIO), and a delete or a new
 * version still replaces it. The values stay where RocksDB read them
 * (pinned slices): hold, when asked for, keeps the inline bytes there for the
 * caller instead of copying them into m->inl. */
static int get_record(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                      struct objmeta *m, const char **bytes, void **hold)
{
    size_t dl;
    char *dk = store_inline_key(mkey, klen, &dl);
    const char *keys[2] = {mkey, dk};
    size_t kls[2] = {klen, dl}, vls[2] = {0, 0};
    rocksdb_pinnableslice_t *ps[2] = {NULL, NULL};
    char *errs[2] = {NULL, NULL};
    rocksdb_batched_multi_get_cf(mp->db, s->ro, mp->cf, 2, keys, kls, ps, errs, 0);
    free(dk);
    const char *vals[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++)
        if (ps[i])
            vals[i] = rocksdb_pinnableslice_value(ps[i], &vls[i]);
    int rc = errs[0] ? store_db_errno(errs[0]) : !vals[0] ? -ENOENT : 0;
    if (!rc && objmeta_decode(vals[0], vls[0], m)) {
        log_error("mountpath %s: corrupt metadata record", mp->dir);
        rc = -EIO;
    }
    if (!rc && objmeta_inline(m) && !m->inl_loaded &&
        store_inline_check(mp, m, vals[1], vls[1]) == 0) {
        if (hold) {
            *bytes = vals[1];
            *hold = ps[1];
            ps[1] = NULL;
        } else {
            memcpy(m->inl, vals[1], vls[1]);
            m->inl_loaded = 1;
        }
    }
    free(errs[1]);
    for (int i = 0; i < 2; i++)
        if (ps[i])
            rocksdb_pinnableslice_destroy(ps[i]);
    return rc;
}

int store_get(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
              struct objmeta *m)
{
    return get_record(s, mp, mkey, klen, m, NULL, NULL);
}

int store_get_bytes(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                    struct objmeta *m, const char **bytes, void **hold)
{
    *bytes = NULL;
    *hold = NULL;
    return get_record(s, mp, mkey, klen, m, bytes, hold);
}

void store_bytes_free(void *hold)
{
    if (hold)
        rocksdb_pinnableslice_destroy(hold);
}

uint64_t store_wgen(struct store_mp *mp)
{
    return __atomic_load_n(&mp->wgen, __ATOMIC_ACQUIRE);
}

/* An object's record changed on mp (a key starting 'o'): what ocache
 * holds of the drive is stale. */
/* The work file at work_path renamed to rel in mp's data/. The
 * directories above it are made only when missing (a mountpath of the
 * flat layout makes its 256 at start-up), and each one made here is
 * synced into its parent, so that a commit's syscalls do not grow with
 * the depth of the path. 0 or -errno. */
static int rename_into(struct store_mp *mp, const char *work_path, const char *rel)
{
    if (renameat(AT_FDCWD, work_path, mp->data_fd, rel) == 0)
        return 0;
    if (errno != ENOENT)
        return -errno;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", rel);
    for (char *slash = strchr(dir, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdirat(mp->data_fd, dir, 0755) == 0) {
            int rc = mp->s->fsync ? fsync_dir_at(mp->data_fd, dir) : 0;
            if (rc)
                return rc;
        } else if (errno != EEXIST) {
            return -errno;
        }
        *slash = '/';
    }
    return renameat(AT_FDCWD, work_path, mp->data_fd, rel) ? -errno : 0;
}

static int db_put(struct store *s, struct store_mp *mp, rocksdb_writeoptions_t *wo,
                  const char *k, size_t kl, const char *v, size_t vl)
{
    char *e = NULL;
    if (store_db_room(mp, &e, 0))
        rocksdb_put(mp->db, wo, k, kl, v, vl, &e);
    store_db_wrote(mp, k, e);
    (void)s;
    return e ? store_db_errno(e) : 0;
}

static void db_del(struct store_mp *mp, rocksdb_writeoptions_t *wo, const char *k, size_t kl)
{
    char *e = NULL;
    if (store_db_room(mp, &e, 1))
        rocksdb_delete(mp->db, wo, k, kl, &e);
    store_db_wrote(mp, k, e);
    if (e)
        store_db_errno(e);
}

/* ---- tombstones: "t" + the object key -> version u64, deleted at (ms) u64 ---- */

#define TOMB_LEN 16

static void tomb_encode(uint64_t version, uint64_t at_ms, char *out)
{
    for (int i = 0; i < 8; i++) {
        out[i] = (char)(version >> (8 * i));
        out[8 + i] = (char)(at_ms >> (8 * i));
    }
}

static uint64_t le64(const char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | (uint8_t)p[i];
    return v;
}

void store_tomb_put(rocksdb_writebatch_t *wb, const char *mkey, size_t klen, uint64_t version)
{
    char tv[TOMB_LEN], *tk = store_side_key('t', mkey, klen);
    tomb_encode(version, wall_ns() / 1000000u, tv);
    rocksdb_writebatch_put(wb, tk, klen, tv, TOMB_LEN);
    free(tk);
}

int store_tomb_get(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                   uint64_t *version)
{
    char *tk = store_side_key('t', mkey, klen), *v = NULL;
    size_t vl = 0;
    int rc = store_kv_get(s, mp, tk, klen, &v, &vl);
    free(tk);
    if (!rc && vl != TOMB_LEN)
        rc = -EIO;
    if (!rc)
        *version = le64(v);
    free(v);
    return rc;
}

/* The newest version a name has here, as an object or a tombstone (0:
 * none); *old gets the object's record when there is one (returns 1). A
 * copy marked damaged counts as held (store_held_version). */
static int held_version(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                        struct objmeta *old, uint64_t *newest, int *tombed)
{
    uint64_t tv = 0;
    int have = store_get(s, mp, mkey, klen, old) == 0;
    *tombed = store_tomb_get(s, mp, mkey, klen, &tv) == 0;
    uint64_t ov = have ? store_held_version(old) : 0;
    *newest = ov > tv ? ov : tv;
    return have;
}

int store_commit(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                 const char *work_path, int fd, struct objmeta *m)
{
    return store_commit_x(s, mp, mkey, klen, work_path, fd, m, NULL);
}

/* With mp->mu held: may x go ahead (its keys that must be absent are,
 * the version it makes the latest again is still kept)? 0, -EEXIST or
 * -ESTALE. */
static int x_allowed(struct store *s, struct store_mp *mp, const struct store_x *x)
{
    if (x && x->kept) {
        struct objmeta *k = xmalloc(sizeof(*k));
        int there = store_get(s, mp, x->kept, x->kept_len, k) == 0 && k->uid == x->kept_uid;
        free(k);
        if (!there)
            return -ESTALE;
    }
    const char *keys[2] = {x ? x->absent : NULL, x ? x->absent2 : NULL};
    size_t lens[2] = {x ? x->absent_len : 0, x ? x->absent2_len : 0};
    for (int i = 0; i < 2; i++) {
        char *v = NULL;
        size_t vl;
        if (keys[i] && store_kv_get(s, mp, keys[i], lens[i], &v, &vl) == 0) {
            free(v);
            return -EEXIST;
        }
    }
    return 0;
}

/* x's conditions (If-None-Match, If-Match) against the version held
 * (NULL: none), for the new version m: 0, -ECANCELED or -ENODATA. */
int store_x_conditional(const struct store_x *x)
{
    return x && (x->if_none || x->if_none_match || x->if_match);
}

int store_x_precondition(const struct store_x *x, const char *held_etag)
{
    if (!store_x_conditional(x))
        return 0;
    if (!held_etag)
        return x->if_match ? -ENODATA : 0;
    if (x->if_none || (x->if_none_match && hdr_etag_listed(x->if_none_match, held_etag)))
        return -ECANCELED;
    return !x->if_match || hdr_etag_listed(x->if_match, held_etag) ? 0 : -ECANCELED;
}

static int x_precondition(const struct store_x *x, const struct objmeta *held)
{
    char etag[OBJMETA_ETAG_MAX + 1];
    if (held)
        objmeta_etag(held, etag, sizeof(etag));
    return store_x_precondition(x, held ? etag : NULL);
}

/* The new version's number (and a versioned bucket's id) in m, above
 * newest, what the name has here: 0, -EALREADY (a copy from another node
 * no newer than that) or -E2BIG (no room left for the version's id). */
static int commit_version(const struct store_x *x, struct objmeta *m, uint64_t newest)
{
    if (x && x->promote) {       /* the same version again: its id and mtime stay */
        m->version = hlc_next(newest);
        return 0;
    }
    if (x && x->keep_version) {  /* a copy from another node: only if newer */
        if (newest >= x->keep_version)
            return -EALREADY;
        hlc_observe(x->keep_version);
        m->version = x->keep_version;
        return 0;
    }
    m->version = hlc_next(newest);
    m->mtime_ns = wall_ns();
    return x && x->vers ? store_vers_assign(m, x->vers) : 0;
}

/* A commit's first step, outside the mountpath's lock so that the syncs
 * of concurrent commits overlap: the work file (fd, closed here) at path
 * in data/, its intent g recorded, and both the file and its name durable
 * before any record names it. 0, or -errno with the file and its intent
 * gone. */
static int place_file(struct store *s, struct store_mp *mp, const char *work_path, int fd,
                      const char *mkey, size_t klen, const char *path, const char *g, size_t gl)
{
    int rc = s->fsync && fdatasync(fd) ? -errno : 0;
    if (close(fd) && !rc)
        rc = -errno;
    if (rc)
        goto fail;
    pthread_mutex_lock(&mp->mu);
    if (__atomic_load_n(&mp->gone, __ATOMIC_ACQUIRE))
        rc = -ESTALE;            /* the mountpath was emptied and closed meanwhile */
    else if ((rc = __atomic_load_n(&mp->db_failed, __ATOMIC_ACQUIRE)))
        ;                        /* its database takes no write until it recovers */
    else
        rc = db_put(s, mp, s->wo, g, gl, mkey, klen);
    pthread_mutex_unlock(&mp->mu);
    if (rc)
        goto fail;
    const char *rel = path + strlen(mp->dir) + strlen("/data/");   /* below data_fd */
    if ((rc = rename_into(mp, work_path, rel)))
        goto fail_intent;
    if (s->fsync && (rc = fsync_dir_at(mp->data_fd, rel)))
        goto fail_file;
    return 0;

fail_file:
    unlink(path);
fail_intent:
    pthread_mutex_lock(&mp->mu);
    if (!__atomic_load_n(&mp->gone, __ATOMIC_ACQUIRE))
        db_del(mp, s->wo, g, gl);
    pthread_mutex_unlock(&mp->mu);
fail:
    unlink(work_path);
    return rc;
}

/* The last step, once the record is durable: the old version's file goes
 * (unless kept as a version), and the null version a commit replaced. */
static void commit_done(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                        const struct objmeta *m, const struct objmeta *old,
                        struct storever_drop *vd)
{
    store_vers_dropped(s, mp, vd);
    __atomic_add_fetch(&mp->bytes_delta, (int64_t)m->size - (old ? (int64_t)old->size : 0),
                       __ATOMIC_RELAXED);
    if (!old || objmeta_inline(old))
        return;                  /* no file: its bytes went with its record */
    char old_path[PATH_MAX];
    size_t ogl;
    store_data_path(mp, mkey, klen, old->uid, old_path, sizeof(old_path));
    char *og = store_gkey(old_path, &ogl);
    if (unlink(old_path) && errno != ENOENT)
        log_warn("cannot remove %s: %s", old_path, strerror(errno));
    db_del(mp, s->wo, og, ogl);
    free(og);
}

/* Is version m kept in its record? Then its bytes are read from fd
 * into m->inl, and fd and the work file go: 1, or -errno (the work file
 * gone all the same). 0: it is to be placed as a file (and m's flag is
 * cleared: a copy's record may come with it set). fd -1: m holds its
 * bytes already. A work file in memory (path "") is always kept so. */
static int take_inline(struct store *s, const char *work_path, int fd, struct objmeta *m)
{
    if (fd < 0)
        return objmeta_inline(m) && m->inl_loaded && m->size <= OBJMETA_INLINE_MAX ? 1
                                                                                 : -EINVAL;
    int mem = !work_path || !work_path[0];
    if (!mem && (!s->inline_max || m->size > s->inline_max ||
                 m->size > OBJMETA_INLINE_MAX)) {
        m->flags &= ~OBJMETA_F_INLINE;
        return 0;
    }
    struct stat st;
    int rc = m->size > OBJMETA_INLINE_MAX ? -EFBIG
             : fstat(fd, &st)             ? -errno
             : (uint64_t)st.st_size != m->size ? -EINVAL
                                               : pread_full(fd, m->inl, (size_t)m->size, 0);
    close(fd);
    if (!mem)
        unlink(work_path);
    if (rc)
        return rc;
    m->flags |= OBJMETA_F_INLINE;
    m->inl_loaded = 1;
    return 1;
}

int store_commit_x(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                   const char *work_path, int fd, struct objmeta *m, const struct store_x *x)
{
    char path[PATH_MAX], old_path[PATH_MAX];
    size_t gl = 0, ogl;
    char *g = NULL;              /* the placed file's intent; NULL: inline */
    int rc = take_inline(s, work_path, fd, m);
    if (rc == 0) {
        store_data_path(mp, mkey, klen, m->uid, path, sizeof(path));
        g = store_gkey(path, &gl);
        rc = place_file(s, mp, work_path, fd, mkey, klen, path, g, gl);
    }
    if (rc < 0) {
        if (g)                   /* the drive's; not a memory file's or a caller's size */
            store_note_error(mp, rc);
        free(g);
        return rc;
    }
    pthread_mutex_lock(&mp->mu);
    if (__atomic_load_n(&mp->gone, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&mp->mu);
        if (g)
            unlink(path);        /* its intent went with the mountpath */
        free(g);
        return -ESTALE;
    }
    struct objmeta old;
    uint64_t newest;
    int tombed, have_old = held_version(s, mp, mkey, klen, &old, &newest, &tombed);
    if ((rc = x_allowed(s, mp, x)) ||
        (rc = x_precondition(x, have_old && !store_is_marker(&old) ? &old : NULL)) ||
        (rc = commit_version(x, m, newest)))
        goto fail;
    char val[OBJMETA_MAX];
    size_t vl = objmeta_encode(m, val);
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_writebatch_put(wb, mkey, klen, val, vl);
    if (g)
        rocksdb_writebatch_delete(wb, g, gl);
    else                         /* the bytes, under a key of their own (objmeta.h) */
        store_inline_put(wb, mkey, klen, m);
    char *tk = tombed ? store_side_key('t', mkey, klen) : NULL;
    if (tk)                      /* a write after a delete */
        rocksdb_writebatch_delete(wb, tk, klen);
    free(tk);
    if (x && x->key)             /* the caller's record, in the same batch */
        rocksdb_writebatch_put(wb, x->key, x->key_len, x->val, x->val_len);
    if (have_old && objmeta_inline(&old) && g)
        store_inline_drop(wb, mkey, klen);   /* the old bytes: a file's version now */
    struct storever_drop vd = {0};
    if (store_vers_commit(s, mp, wb, mkey, klen, have_old ? &old : NULL, m, &vd))
        have_old = 0;            /* kept as a version: its file (or bytes) stays */
    if (have_old && !objmeta_inline(&old)) {
        store_data_path(mp, mkey, klen, old.uid, old_path, sizeof(old_path));
        char *og = store_gkey(old_path, &ogl);
        rocksdb_writebatch_put(wb, og, ogl, mkey, klen);
        free(og);
    }
    /* written unsynced under the lock; durable once a sync of the
     * write-ahead log, shared with the commits around it, covers it */
    char *e = NULL;
    if (store_db_room(mp, &e, 0))
        rocksdb_write(mp->db, s->wo, wb, &e);
    store_db_wrote(mp, mkey, e);
    rocksdb_writebatch_destroy(wb);
    if (e) {
        free(vd.g);
        rc = store_db_errno(e);
        goto fail;
    }
    uint64_t ticket = store_gsync_ticket(&mp->wal);
    pthread_mutex_unlock(&mp->mu);
    if (s->fsync && (rc = store_gsync_wait(&mp->wal, ticket, mp, store_sync_wal))) {
        /* not durable, so not acknowledged; the old version's file stays
         * for its intent to settle at the next start */
        store_note_error(mp, rc);
        free(vd.g);
        free(g);
        return rc;
    }
    commit_done(s, mp, mkey, klen, m, have_old ? &old : NULL, &vd);
    free(g);
    return 0;

fail:
    pthread_mutex_unlock(&mp->mu);
    store_note_error(mp, rc);
    if (g) {
        unlink(path);
        db_del(mp, s->wo, g, gl);
    }
    free(g);
    return rc;
}

char *store_side_key(char kind, const char *mkey, size_t klen)
{
    char *k = xmalloc(klen);
    memcpy(k, mkey, klen);
    k[0] = kind;
    return k;
}

/* A copy not yet written back (a "w" record) is never dropped but by a
 * DELETE that queues its own record (store_delete_x). */
static int delete_clean(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                        uint64_t uid, int tomb)
{
    char *w = store_side_key('w', mkey, klen);
    struct store_x x = {.absent = w, .absent_len = klen, .tomb = tomb};
    int rc = store_delete_x(s, mp, mkey, klen, uid, &x);
    free(w);
    return rc;
}

int store_delete(struct store *s, struct store_mp *mp, const char *mkey, size_t klen)
{
    return delete_clean(s, mp, mkey, klen, 0, 0);
}

int store_delete_tomb(struct store *s, struct store_mp *mp, const char *mkey, size_t klen)
{
    return delete_clean(s, mp, mkey, klen, 0, 1);
}

int store_delete_if(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                    uint64_t uid)
{
    return delete_clean(s, mp, mkey, klen, uid, 0);
}

/* wb written unsynced under mp's lock, which this releases, and durable
 * once a sync of the write-ahead log shared with the commits around it
 * covers it, as a commit's record is: a delete neither syncs under the
 * lock nor alone. 0, or -errno (the write, or its sync, failed). */
static int write_unlock_sync(struct store *s, struct store_mp *mp, const char *mkey,
                             rocksdb_writebatch_t *wb)
{
    char *e = NULL;
    if (store_db_room(mp, &e, 1))
        rocksdb_write(mp->db, s->wo, wb, &e);
    store_db_wrote(mp, mkey, e);
    rocksdb_writebatch_destroy(wb);
    if (e) {
        pthread_mutex_unlock(&mp->mu);
        return store_db_errno(e);
    }
    uint64_t ticket = store_gsync_ticket(&mp->wal);
    pthread_mutex_unlock(&mp->mu);
    int rc = s->fsync ? store_gsync_wait(&mp->wal, ticket, mp, store_sync_wal) : 0;
    if (rc)
        store_note_error(mp, rc);
    return rc;
}

int store_delete_x(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                   uint64_t uid, const struct store_x *x)
{
    pthread_mutex_lock(&mp->mu);
    struct objmeta m;
    uint64_t newest;
    int tombed, have = held_version(s, mp, mkey, klen, &m, &newest, &tombed);
    int rc = have ? 0 : -ENOENT;
    if (have && uid && m.uid != uid)
        rc = -ESTALE;            /* written again since the caller looked */
    if (x && x->keep_version && newest >= x->keep_version)
        rc = -EALREADY;          /* a delete from another node, older than what is here */
    if (!rc || (rc == -ENOENT && x && (x->tomb || x->keep_version)))
        rc = x_allowed(s, mp, x) ? -EEXIST : rc;
    if (rc && !(rc == -ENOENT && x && (x->tomb || x->keep_version))) {
        pthread_mutex_unlock(&mp->mu);
        return rc;
    }
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    if (x && (x->tomb || x->keep_version)) {   /* a delete leaves its version behind */
        char tv[TOMB_LEN], *tk = store_side_key('t', mkey, klen);
        uint64_t v = x->keep_version ? x->keep_version : hlc_next(newest);
        if (x->keep_version)
            hlc_observe(v);
        tomb_encode(v, wall_ns() / 1000000u, tv);
        rocksdb_writebatch_put(wb, tk, klen, tv, TOMB_LEN);
        free(tk);
    }
    if (!have) {                 /* only the tombstone: nothing was here */
        rc = write_unlock_sync(s, mp, mkey, wb);
        return rc ? rc : -ENOENT;
    }
    char path[PATH_MAX];
    size_t gl = 0;
    char *g = NULL;              /* the file's intent; NULL: an inline record's, none */
    if (!objmeta_inline(&m)) {
        store_data_path(mp, mkey, klen, m.uid, path, sizeof(path));
        g = store_gkey(path, &gl);
        rocksdb_writebatch_put(wb, g, gl, mkey, klen);
    } else {                     /* its bytes go with it */
        store_inline_drop(wb, mkey, klen);
    }
    rocksdb_writebatch_delete(wb, mkey, klen);
    if (x && x->drop)
        rocksdb_writebatch_delete(wb, x->drop, x->drop_len);
    char *a = store_side_key('a', mkey, klen);   /* its last read (atime.h), if kept */
    rocksdb_writebatch_delete(wb, a, klen);
    a[0] = 'x';                  /* its archive index (arch.h), if built */
    rocksdb_writebatch_delete(wb, a, klen);
    free(a);
    if (x && x->key)
        rocksdb_writebatch_put(wb, x->key, x->key_len, x->val, x->val_len);
    if ((rc = write_unlock_sync(s, mp, mkey, wb))) {
        free(g);                 /* the file stays for its intent to settle at the next start */
        return rc;
    }
    __atomic_sub_fetch(&mp->bytes_delta, (int64_t)m.size, __ATOMIC_RELAXED);
    if (g && unlink(path) && errno != ENOENT)
        log_warn("cannot remove %s: %s", path, strerror(errno));
    if (g)
        db_del(mp, s->wo, g, gl);
    free(g);
    return 0;
}

/* Every record under base (objects, or slices) on every mountpath, deleted
 * through the normal path; how many. */
static long purge_records(struct store *s, const char *base, size_t base_len)
{
    long removed = 0;
    for (int i = 0; i < __atomic_load_n(&s->n, __ATOMIC_ACQUIRE); i++) {
        if (__atomic_load_n(&s->mp[i].gone, __ATOMIC_RELAXED))
            continue;
        struct store_mp *mp = &s->mp[i];
        for (;;) {
            /* batches of keys, then delete each through the normal path */
            char *keys[256];
            size_t lens[256];
            int k = 0;
            rocksdb_iterator_t *it = rocksdb_create_iterator(mp->db, s->ro);
            for (rocksdb_iter_seek(it, base, base_len); rocksdb_iter_valid(it) && k < 256;
                 rocksdb_iter_next(it)) {
                size_t kl;
                const char *key = rocksdb_iter_key(it, &kl);
                if (kl < base_len || memcmp(key, base, base_len))
                    break;
                keys[k] = xmalloc(kl);
                memcpy(keys[k], key, kl);
                lens[k++] = kl;
            }
            rocksdb_iter_destroy(it);
            int done = 0;
            for (int j = 0; j < k; j++) {
                /* the bucket is gone: a copy owed to its backend goes too */
                if (store_delete_x(s, mp, keys[j], lens[j], 0, NULL) == 0)
                    done++;
                char *w = store_side_key('w', keys[j], lens[j]);
                store_kv_del(s, mp, w, lens[j]);
                free(w);
                free(keys[j]);
            }
            removed += done;
            if (k < 256 || done == 0)
                break;
        }
    }
    return removed;
}

long store_purge(struct store *s, const char *provider, const char *bucket)
{
    size_t base_len;
    char *base = store_mkey(provider, bucket, "", 0, &base_len);
    long removed = purge_records(s, base, base_len);
    char *cbase = xmalloc(base_len + 1);   /* its copies on other drives: 'c' + the key */
    cbase[0] = 'c';
    memcpy(cbase + 1, base, base_len);
    purge_records(s, cbase, base_len + 1);
    free(cbase);
    base[0] = 's';               /* and its slices (slice.h) */
    purge_records(s, base, base_len);
    /* and the bucket's write-back records left (deletes of objects gone) */
    base[0] = 'w';
    for (int i = 0; i < __atomic_load_n(&s->n, __ATOMIC_ACQUIRE); i++) {
        if (__atomic_load_n(&s->mp[i].gone, __ATOMIC_RELAXED))
            continue;
        rocksdb_iterator_t *it = rocksdb_create_iterator(s->mp[i].db, s->ro);
        for (rocksdb_iter_seek(it, base, base_len); rocksdb_iter_valid(it);
             rocksdb_iter_next(it)) {
            size_t kl;
            const char *key = rocksdb_iter_key(it, &kl);
            if (kl < base_len || memcmp(key, base, base_len))
                break;
            store_kv_del(s, &s->mp[i], key, kl);
        }
        rocksdb_iter_destroy(it);
    }
    free(base);
    return removed;
}

/* ---- small records -------------------------------------------------------- */

int store_kv_get(struct store *s, struct store_mp *mp, const char *k, size_t kl, char **v,
                 size_t *vl)
{
    char *e = NULL;
    *v = rocksdb_get(mp->db, s->ro, k, kl, vl, &e);
    if (e)
        return store_db_errno(e);
    return *v ? 0 : -ENOENT;
}

int store_meta_update(struct store *s, const char *mkey, size_t klen,
                      int (*change)(struct objmeta *m, void *arg), void *arg)
{
    struct store_mp *mp = store_pick(s, mkey, klen);
    struct objmeta *m = xmalloc(sizeof(*m));
    char *buf = xmalloc(OBJMETA_MAX);
    pthread_mutex_lock(&mp->mu);
    int rc = store_get(s, mp, mkey, klen, m);
    if (!rc)
        rc = change(m, arg);
    if (!rc) {
        m->version = hlc_next(m->version);
        rc = store_kv_put(s, mp, mkey, klen, buf, objmeta_encode(m, buf));
    }
    pthread_mutex_unlock(&mp->mu);
    free(buf);
    free(m);
    return rc;
}

int store_kv_put(struct store *s, struct store_mp *mp, const char *k, size_t kl, const char *v,
                 size_t vl)
{
    char *e = NULL;
    if (store_db_room(mp, &e, 0))
        rocksdb_put(mp->db, s->wo_sync, k, kl, v, vl, &e);
    store_db_wrote(mp, k, e);
    return e ? store_db_errno(e) : 0;
}

int store_kv_del_if(struct store *s, struct store_mp *mp, const char *k, size_t kl,
                    const char *expect, size_t el)
{
    pthread_mutex_lock(&mp->mu);
    char *v = NULL;
    size_t vl = 0;
    int rc = store_kv_get(s, mp, k, kl, &v, &vl);
    if (!rc && (vl != el || memcmp(v, expect, el)))
        rc = -ESTALE;
    free(v);
    if (rc) {
        pthread_mutex_unlock(&mp->mu);
        return rc;
    }
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    rocksdb_writebatch_delete(wb, k, kl);
    return write_unlock_sync(s, mp, k, wb);
}

int store_kv_put_nosync(struct store *s, struct store_mp *mp, const char *k, size_t kl,
                        const char *v, size_t vl)
{
    char *e = NULL;
    if (store_db_room(mp, &e, 0))
        rocksdb_put(mp->db, s->wo, k, kl, v, vl, &e);
    store_db_wrote(mp, k, e);
    return e ? store_db_errno(e) : 0;
}

int store_kv_del(struct store *s, struct store_mp *mp, const char *k, size_t kl)
{
    char *e = NULL;
    if (store_db_room(mp, &e, 1))
        rocksdb_delete(mp->db, s->wo, k, kl, &e);
    store_db_wrote(mp, k, e);
    return e ? store_db_errno(e) : 0;
}

int store_kv_scan(struct store *s, struct store_mp *mp, const char *prefix, size_t pl,
                  int (*cb)(void *arg, const char *k, size_t kl, const char *v, size_t vl),
                  void *arg)
{
    return store_kv_scan_after(s, mp, prefix, pl, NULL, 0, cb, arg);
}

int store_kv_scan_after(struct store *s, struct store_mp *mp, const char *prefix, size_t pl,
                        const char *after, size_t al,
                        int (*cb)(void *arg, const char *k, size_t kl, const char *v, size_t vl),
                        void *arg)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator(mp->db, s->ro);
    int rc = 0;
    if (after)
        rocksdb_iter_seek(it, after, al);
    else
        rocksdb_iter_seek(it, prefix, pl);
    for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (after && kl == al && !memcmp(k, after, al))
            continue;
        if (kl < pl || memcmp(k, prefix, pl))
            break;
        const char *v = rocksdb_iter_value(it, &vl);
        if ((rc = cb(arg, k, kl, v, vl)))
            break;
    }
    rocksdb_iter_destroy(it);
    return rc;
}

long store_tomb_sweep(struct store *s, uint64_t before_ms)
{
    long removed = 0;
    for (int i = 0; i < __atomic_load_n(&s->n, __ATOMIC_ACQUIRE); i++) {
        if (__atomic_load_n(&s->mp[i].gone, __ATOMIC_RELAXED))
            continue;
        struct store_mp *mp = &s->mp[i];
        rocksdb_iterator_t *it = rocksdb_create_iterator(mp->db, s->ro);
        for (rocksdb_iter_seek(it, "t", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = rocksdb_iter_key(it, &kl);
            if (kl < 1 || k[0] != 't')
                break;
            const char *v = rocksdb_iter_value(it, &vl);
            if (vl == TOMB_LEN && le64(v + 8) >= before_ms)
                continue;
            /* only while it is still the same tombstone */
            if (store_kv_del_if(s, mp, k, kl, v, vl) == 0)
                removed++;
        }
        rocksdb_iter_destroy(it);
    }
    return removed;
}
