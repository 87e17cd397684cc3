/*
 * storeinline: the bytes of an inline version (objmeta.h), under a key of
 * their own beside its record ("i" + the record's key), written and
 * deleted in the record's batches and read back as a memory file.
 */
#include "store.h"
#include "storeint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

char *store_inline_key(const char *k, size_t kl, size_t *dl)
{
    char *d = xmalloc(kl + 1);
    d[0] = 'i';
    memcpy(d + 1, k, kl);
    *dl = kl + 1;
    return d;
}

void store_inline_put(rocksdb_writebatch_t *wb, const char *k, size_t kl,
                      const struct objmeta *m)
{
    size_t dl;
    char *dk = store_inline_key(k, kl, &dl);
    rocksdb_writebatch_put(wb, dk, dl, m->inl, (size_t)m->size);
    free(dk);
}

void store_inline_drop(rocksdb_writebatch_t *wb, const char *k, size_t kl)
{
    size_t dl;
    char *dk = store_inline_key(k, kl, &dl);
    rocksdb_writebatch_delete(wb, dk, dl);
    free(dk);
}

int store_inline_check(const struct store_mp *mp, const struct objmeta *m, const char *v,
                       size_t vl)
{
    if (v && vl == m->size)
        return 0;
    log_error("mountpath %s: an inline record's bytes are missing or short", mp->dir);
    return -EIO;
}

/* The bytes of k's inline version m, as stored: a malloc'd buffer of
 * m->size bytes, or NULL with *rc -errno (-EIO: missing, or not of the
 * record's size). */
static char *inline_get(const struct store_mp *mp, const char *k, size_t kl,
                        const struct objmeta *m, int *rc)
{
    size_t dl, vl = 0;
    char *dk = store_inline_key(k, kl, &dl), *e = NULL;
    char *v = rocksdb_get(mp->db, mp->s->ro, dk, dl, &vl, &e);
    free(dk);
    *rc = e ? store_db_errno(e) : store_inline_check(mp, m, v, vl);
    if (*rc) {
        free(v);
        return NULL;
    }
    return v ? v : xmalloc(1);
}

int store_inline_load(const struct store_mp *mp, const char *k, size_t kl, struct objmeta *m)
{
    if (!objmeta_inline(m) || m->inl_loaded)
        return 0;
    int rc;
    char *v = inline_get(mp, k, kl, m, &rc);
    if (!v)
        return rc;
    memcpy(m->inl, v, (size_t)m->size);
    m->inl_loaded = 1;
    free(v);
    return 0;
}

int store_inline_open(const struct store_mp *mp, const char *k, size_t kl,
                      const struct objmeta *m)
{
    int rc = 0;
    char *v = m->inl_loaded ? NULL : inline_get(mp, k, kl, m, &rc);
    if (rc)
        return rc;
    int fd = memfd_create("shoal-inline", MFD_CLOEXEC);
    if (fd < 0)
        rc = -errno;
    else if ((rc = pwrite_full(fd, v ? v : m->inl, (size_t)m->size, 0)))
        close(fd);
    free(v);
    return rc ? rc : fd;
}
