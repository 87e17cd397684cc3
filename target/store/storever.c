/*
 * storever: the versions a versioned bucket keeps of a name (store.h,
 * "Versions of a versioned bucket"), as the commits keep them.
 *
 * A kept version is an ordinary object record whose name is the name,
 * OBJNAME_VERSION_SEP and the version's id: its S3 version id, or for the
 * "null" version 16 hex digits of its inverted store version. Ids are the
 * inverted store version in hex, so a name's kept versions sort newest
 * first, right after the name itself. A kept version sits on the name's
 * mountpath with the name's data file (data_name hashes the name), so
 * keeping one moves no byte: the commit that replaces the latest writes
 * the old record under the version's key in its own batch and leaves the
 * old file where it is.
 *
 * Thread: the I/O pool (under the mountpath's lock where said).
 */
#include "store.h"
#include "storeint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "objname.h"
#include "util.h"

const char *store_vid(const struct objmeta *m)
{
    const char *v = objmeta_umeta_get(m, OBJMETA_VID);
    return v ? v : "null";
}

int store_is_marker(const struct objmeta *m)
{
    return objmeta_umeta_get(m, OBJMETA_DELETE_MARKER) != NULL;
}

int store_vid_valid(const char *vid)
{
    size_t n = strlen(vid);
    if (!strcmp(vid, "null"))
        return 1;
    if (n != STORE_VID_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((vid[i] >= '0' && vid[i] <= '9') || (vid[i] >= 'a' && vid[i] <= 'f')))
            return 0;
    return 1;
}

char *store_version_key(const char *mkey, size_t klen, const struct objmeta *m, size_t *kl)
{
    char id[STORE_VID_LEN + 1];
    const char *vid = store_vid(m);
    if (!strcmp(vid, "null"))
        snprintf(id, sizeof(id), "%016llx", (unsigned long long)~m->version);
    else
        snprintf(id, sizeof(id), "%.*s", STORE_VID_LEN, vid);
    char *k = xmalloc(klen + 1 + STORE_VID_LEN + 1);
    memcpy(k, mkey, klen);
    k[klen] = OBJNAME_VERSION_SEP;
    memcpy(k + klen + 1, id, STORE_VID_LEN + 1);
    *kl = klen + 1 + STORE_VID_LEN;
    return k;
}

int store_vers_assign(struct objmeta *m, int vers)
{
    char id[STORE_VID_LEN + 1];
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)~m->version);
    objmeta_umeta_del(m, OBJMETA_VID);
    return objmeta_umeta_add(m, OBJMETA_VID, vers == STORE_VERS_SUSPENDED ? "null" : id);
}

/* Walk the versions kept of mkey on mp, newest first: cb(arg, key, kl, m)
 * until it returns non-zero (returned). */
static int kept_walk(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                     int (*cb)(void *arg, const char *k, size_t kl, const struct objmeta *m),
                     void *arg)
{
    char *prefix = xmalloc(klen + 1);
    memcpy(prefix, mkey, klen);
    prefix[klen] = OBJNAME_VERSION_SEP;
    struct objmeta *m = xmalloc(sizeof(*m));
    rocksdb_iterator_t *it = rocksdb_create_iterator(mp->db, s->ro);
    int rc = 0;
    for (rocksdb_iter_seek(it, prefix, klen + 1); !rc && rocksdb_iter_valid(it);
         rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl);
        if (kl <= klen + 1 || memcmp(k, prefix, klen + 1))
            break;
        const char *v = rocksdb_iter_value(it, &vl);
        if (!objmeta_decode(v, vl, m))
            rc = cb(arg, k, kl, m);
    }
    char *e = NULL;
    rocksdb_iter_get_error(it, &e);
    rocksdb_iter_destroy(it);
    free(m);
    free(prefix);
    return e ? store_db_errno(e) : rc;
}

struct find {
    const char *vid;             /* NULL: the newest */
    char *key;
    size_t kl;
    struct objmeta *m;
};

static int find_cb(void *arg, const char *k, size_t kl, const struct objmeta *m)
{
    struct find *f = arg;
    if (f->vid && strcmp(store_vid(m), f->vid))
        return 0;
    f->key = xstrndup(k, kl);
    f->kl = kl;
    *f->m = *m;
    return 1;
}

int store_version_find(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                       const char *vid, char **vkey, size_t *vkl, struct objmeta *m)
{
    if (store_get(s, mp, mkey, klen, m) == 0 && (!vid || !strcmp(store_vid(m), vid))) {
        *vkey = xstrndup(mkey, klen);
        *vkl = klen;
        return 0;
    }
    struct find f = {vid, NULL, 0, m};
    int rc = kept_walk(s, mp, mkey, klen, find_cb, &f);
    if (rc < 0)
        return rc;
    if (!f.key)
        return -ENOENT;
    *vkey = f.key;
    *vkl = f.kl;
    return 0;
}

/* Under mp->mu: the version kept of mkey with the id vid goes, in wb, to
 * be replaced by the new latest of that id: the null one (S3: a suspended
 * bucket has one null version), or one made the latest again (a kept
 * version's own id is its key, so that is one lookup). */
static void drop_kept_same(struct store *s, struct store_mp *mp, rocksdb_writebatch_t *wb,
                           const char *mkey, size_t klen, const struct objmeta *latest,
                           const char *vid, struct storever_drop *d)
{
    struct objmeta *m = xmalloc(sizeof(*m));
    char *k = NULL;
    size_t kl;
    int found;
    if (!strcmp(vid, "null")) {
        found = store_version_find(s, mp, mkey, klen, "null", &k, &kl, m) == 0 && kl != klen;
    } else {
        k = store_version_key(mkey, klen, latest, &kl);
        found = store_get(s, mp, k, kl, m) == 0;
    }
    if (found && (m->uid == latest->uid || objmeta_inline(m))) {
        /* its file is the new record's, or it has none: only the record
         * (and an inline one's bytes) goes */
        if (m->uid != latest->uid)
            d->size = m->size;
        if (objmeta_inline(m))
            store_inline_drop(wb, k, kl);
        rocksdb_writebatch_delete(wb, k, kl);
        store_tomb_put(wb, k, kl, m->version);
    } else if (found) {
        char path[PATH_MAX];
        store_data_path(mp, k, kl, m->uid, path, sizeof(path));
        d->g = store_gkey(path, &d->gl);
        snprintf(d->path, sizeof(d->path), "%s", path);
        d->size = m->size;
        rocksdb_writebatch_delete(wb, k, kl);
        rocksdb_writebatch_put(wb, d->g, d->gl, k, kl);
        store_tomb_put(wb, k, kl, m->version);
    }
    free(k);
    free(m);
}

/* One try of store_version_promote. */
static int promote_once(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                        struct objmeta *m)
{
    char *k = NULL, work[PATH_MAX], from[PATH_MAX];
    size_t kl;
    int rc = store_version_find(s, mp, mkey, klen, NULL, &k, &kl, m);
    if (rc)
        return rc;
    if (kl == klen) {
        free(k);
        return -EEXIST;          /* the name has a record again */
    }
    store_data_path(mp, mkey, klen, m->uid, from, sizeof(from));
    uint64_t uid;
    int inl = objmeta_inline(m);   /* its bytes are in the record: no file to link */
    int fd = -1;
    if (inl && (rc = store_inline_load(mp, k, kl, m))) {
        free(k);
        return rc;
    }
    if (inl)
        rand_bytes(&uid, sizeof(uid));
    else
        fd = store_work_open(mp, &uid, work, sizeof(work));
    if (!inl && fd >= 0) {
        close(fd);
        /* the kept file, linked as the new record's work file: the commit
         * renames it into place, and dropping the kept record unlinks
         * only the old name */
        if (unlink(work) || link(from, work) || (fd = open(work, O_RDONLY | O_CLOEXEC)) < 0) {
            fd = -errno;
            unlink(work);
        }
    }
    if (fd < 0 && !inl) {
        free(k);
        return fd;
    }
    struct store_x x = {.absent = mkey, .absent_len = klen, .promote = 1,
                        .kept = k, .kept_len = kl, .kept_uid = m->uid};
    m->uid = uid;
    if (!objmeta_umeta_get(m, OBJMETA_VID))  /* written before versioning: the null one */
        rc = objmeta_umeta_add(m, OBJMETA_VID, "null");
    if (rc && !inl) {
        close(fd);
        unlink(work);
    } else if (!rc) {
        rc = store_commit_x(s, mp, mkey, klen, inl ? NULL : work, fd, m, &x);
    }
    free(k);
    return rc;
}

int store_version_promote(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                          struct objmeta *m)
{
    int rc = -ESTALE;
    for (int tries = 0; tries < 4 && rc == -ESTALE; tries++)
        rc = promote_once(s, mp, mkey, klen, m);   /* -ESTALE: that one was deleted */
    return rc;
}

int store_vers_commit(struct store *s, struct store_mp *mp, rocksdb_writebatch_t *wb,
                      const char *mkey, size_t klen, const struct objmeta *old,
                      const struct objmeta *m, struct storever_drop *d)
{
    const char *vid = objmeta_umeta_get(m, OBJMETA_VID);
    if (!vid || mkey[0] != 'o' || objname_base_len(mkey, klen) != klen)
        return 0;                /* not a versioned bucket's latest */
    drop_kept_same(s, mp, wb, mkey, klen, m, vid, d);
    if (!old || !strcmp(store_vid(old), vid))
        return 0;                /* nothing held, or the same version rewritten */
    size_t kl;
    char *k = store_version_key(mkey, klen, old, &kl);
    struct objmeta *held = xmalloc(sizeof(*held));
    int kept_already = store_get(s, mp, k, kl, held) == 0;
    free(held);
    if (kept_already) {          /* a copy of the version came first (a rebalance): */
        free(k);                 /* it stays, and the old latest's file goes */
        return 0;
    }
    char val[OBJMETA_MAX];
    size_t vl = objmeta_encode(old, val);
    rocksdb_writebatch_put(wb, k, kl, val, vl);
    if (objmeta_inline(old) && old->inl_loaded)   /* its bytes move with it (store_get) */
        store_inline_put(wb, k, kl, old);
    free(k);
    return 1;
}

void store_vers_dropped(struct store *s, struct store_mp *mp, struct storever_drop *d)
{
    __atomic_sub_fetch(&mp->bytes_delta, (int64_t)d->size, __ATOMIC_RELAXED);
    d->size = 0;
    if (!d->g)
        return;
    if (unlink(d->path) && errno != ENOENT)
        log_warn("cannot remove %s: %s", d->path, strerror(errno));
    char *e = NULL;
    if (store_db_room(mp, &e, 1))
        rocksdb_delete(mp->db, s->wo, d->g, d->gl, &e);
    store_db_wrote(mp, NULL, e);
    if (e)
        store_db_errno(e);
    free(d->g);
    d->g = NULL;
}
