/*
 * storelist: a bucket's listing from the store's records, as compact pages
 * (store.h: store_list; common/listpage.h).
 */
#include "store.h"

#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listpage.h"
#include "objmeta.h"
#include "objname.h"
#include "storeint.h"
#include "util.h"

/* What a listing shows of an object (not the whole objmeta: entries are
 * sorted by value, and a record can be kilobytes of user metadata). */
struct lent {
    char *name;
    size_t nlen;
    uint64_t size, cksum, version, mtime_ns;
    char etag[LISTPAGE_ETAG_MAX + 1];
    char owner[LISTPAGE_OWNER_MAX + 1];   /* "" for the bucket's owner */
};

static int lent_cmp(const void *a, const void *b)
{
    const struct lent *x = a, *y = b;
    return listpage_name_cmp(x->name, x->nlen, y->name, y->nlen);
}

/* Sorted entries with each name once: a name on two mountpaths (a copy
 * not yet removed) keeps its newest version, so that pages go out
 * strictly in name order. Returns the new count. */
static size_t lent_unique(struct lent *ents, size_t n)
{
    size_t u = 0;
    for (size_t j = 0; j < n; j++) {
        if (u && !lent_cmp(&ents[u - 1], &ents[j])) {
            if (ents[j].version > ents[u - 1].version) {
                free(ents[u - 1].name);
                ents[u - 1] = ents[j];
            } else {
                free(ents[j].name);
            }
            continue;
        }
        ents[u++] = ents[j];
    }
    return u;
}

static int name_after(const char *nm, size_t nl, const char *bound, size_t bl)
{
    return listpage_name_cmp(nm, nl, bound, bl) > 0;
}

/* What a listing shows of the record m named nm (nl bytes) into e (its
 * name aside): 0, or -1 when it is not shown. Without versions, a name's
 * kept versions are hidden but for the newest when the name has no
 * record (its latest was deleted), which is then shown as the name, and
 * delete markers are hidden; last (*last_len bytes) is the name seen
 * before on this mountpath. With versions, every record is shown as it
 * is stored, its ETag field "<version id> <D|O> <ETag>" (store.h). */
static int list_shows(const char *nm, size_t nl, const struct objmeta *m, int versions,
                      const char *after, char *last, size_t *last_len, struct lent *e)
{
    e->size = m->size;
    e->cksum = m->cksum;
    e->version = m->version;
    e->mtime_ns = m->mtime_ns;
    const char *o = objmeta_umeta_get(m, OBJMETA_OWNER);
    snprintf(e->owner, sizeof(e->owner), "%s", o && strlen(o) <= LISTPAGE_OWNER_MAX ? o : "");
    char etag[OBJMETA_ETAG_MAX + 1];
    objmeta_etag(m, etag, sizeof(etag));
    if (versions) {
        snprintf(e->etag, sizeof(e->etag), "%s %c %s", store_vid(m),
                 store_is_marker(m) ? 'D' : 'O', etag);
        e->nlen = nl;
        return 0;
    }
    size_t bl = objname_base_len(nm, nl), al = strlen(after);
    int seen = *last_len == bl && !memcmp(last, nm, bl);
    memcpy(last, nm, bl);
    *last_len = bl;
    if (bl < nl && (seen || (al && listpage_name_cmp(nm, bl, after, al) <= 0)))
        return -1;               /* an older version, or the name's newest shown before */
    if (store_is_marker(m))
        return -1;
    snprintf(e->etag, sizeof(e->etag), "%s", etag);
    e->nlen = bl;
    return 0;
}

int store_list(struct store *s, const char *provider, const char *bucket, const char *prefix,
               const char *after, const char *from, const char *until, int limit, int versions,
               struct gbuf *out)
{
    char last[OBJNAME_STORED_MAX + 1];
    size_t base_len, plen = strlen(prefix), alen = strlen(after), ul = strlen(until);
    char *base = store_mkey(provider, bucket, "", 0, &base_len);
    /* start at max(prefix, after) */
    const char *start = prefix;
    size_t slen = plen;
    if (alen && (memcmp(after, prefix, alen < plen ? alen : plen) > 0 ||
                 (memcmp(after, prefix, alen < plen ? alen : plen) == 0 && alen >= plen))) {
        start = after;
        slen = alen;
    }
    size_t fl = strlen(from);
    if (fl && name_after(from, fl, start, slen)) {
        start = from;
        slen = fl;
    }
    char *seek = xmalloc(base_len + slen + 1);
    memcpy(seek, base, base_len);
    memcpy(seek + base_len, start, slen);

    struct lent *ents = NULL;
    size_t n = 0, cap = 0;
    int total_more = 0;
    for (int i = 0; i < __atomic_load_n(&s->n, __ATOMIC_ACQUIRE); i++) {
        if (__atomic_load_n(&s->mp[i].gone, __ATOMIC_RELAXED))
            continue;
        rocksdb_iterator_t *it = rocksdb_create_iterator(s->mp[i].db, s->ro);
        int taken = 0;
        size_t last_len = 0;
        for (rocksdb_iter_seek(it, seek, base_len + slen); rocksdb_iter_valid(it);
             rocksdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = rocksdb_iter_key(it, &kl);
            if (kl < base_len + plen || memcmp(k, base, base_len) ||
                memcmp(k + base_len, prefix, plen))
                break;
            const char *nm = k + base_len;
            size_t nl = kl - base_len;
            if (alen && nl == alen && !memcmp(nm, after, alen))
                continue;
            if (ul && name_after(nm, nl, until, ul))
                break;
            const char *v = rocksdb_iter_value(it, &vl);
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                ents = xrealloc(ents, cap * sizeof(*ents));
            }
            struct objmeta m;
            if (objmeta_decode(v, vl, &m) ||
                list_shows(nm, nl, &m, versions, after, last, &last_len, &ents[n]))
                continue;
            if (taken == limit) {
                total_more = 1;
                break;
            }
            ents[n].name = xstrndup(nm, ents[n].nlen);
            n++;
            taken++;
        }
        char *e = NULL;
        rocksdb_iter_get_error(it, &e);
        rocksdb_iter_destroy(it);
        if (e) {
            for (size_t j = 0; j < n; j++)
                free(ents[j].name);
            free(ents);
            free(seek);
            free(base);
            return store_db_errno(e);
        }
    }
    if (n)
        qsort(ents, n, sizeof(*ents), lent_cmp);
    n = lent_unique(ents, n);
    if (n > (size_t)limit)
        total_more = 1;
    listpage_begin(out, total_more);
    for (size_t j = 0; j < n; j++) {
        if ((int)j < limit) {
            struct listpage_ent e = {ents[j].name, ents[j].nlen, ents[j].etag,
                                  strlen(ents[j].etag), ents[j].owner, strlen(ents[j].owner),
                                  ents[j].size, ents[j].cksum, ents[j].version,
                                  ents[j].mtime_ns};
            listpage_add(out, &e);
        }
        free(ents[j].name);
    }
    free(ents);
    free(seek);
    free(base);
    return 0;
}
