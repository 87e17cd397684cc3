/*
 * storeint: what the store's files share (store.c: objects and records;
 * storemp.c: the mountpaths and where names go; storelist.c: listings;
 * storeinline.c: inline versions' bytes).
 */
#ifndef SHOAL_TARGET_STOREINT_H
#define SHOAL_TARGET_STOREINT_H

#include <limits.h>
#include <rocksdb/c.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct store_mp;
struct store_gsync;
struct objmeta;

/* RocksDB's error text (freed) as -errno, logged. */
int store_db_errno(char *e);
/* Before a write to mp's database (deleting: one that frees room): 1 to
 * make it, or 0 with *e set (as RocksDB's errptr) when the drive is too
 * full to take it (storemp.c). */
int store_db_room(struct store_mp *mp, char **e, int deleting);
/* After a write of k (NULL: no object record) to mp's database, e its
 * error or NULL: a failed write stops the database (db_failed). */
void store_db_wrote(struct store_mp *mp, const char *k, const char *e);
/* The data file of mkey's version uid on mp. */
void store_data_path(const struct store_mp *mp, const char *mkey, size_t klen, uint64_t uid,
                     char *out, size_t outlen);
/* The intent key ("g" + path) of a data file; malloc'd, *klen bytes. */
char *store_gkey(const char *path, size_t *klen);
/* A tombstone of mkey's version, put in wb. */
void store_tomb_put(rocksdb_writebatch_t *wb, const char *mkey, size_t klen, uint64_t version);

/* storeinline.c. v (vl bytes, NULL: none), as stored for inline record
 * m: 0 when they are of its size, else -EIO, logged as damage. */
int store_inline_check(const struct store_mp *mp, const struct objmeta *m, const char *v,
                       size_t vl);
/* k's inline version m's bytes (m->inl, or read when not loaded) as a
 * memory file of their own: its fd, or -errno. */
int store_inline_open(const struct store_mp *mp, const char *k, size_t kl,
                      const struct objmeta *m);

/* storever.c. A kept version a commit replaced (one with the new
 * latest's id: the null one, or one made the latest again), to remove
 * once the batch is written. */
struct storever_drop {
    char *g;                     /* its intent key; NULL: none */
    size_t gl;
    char path[PATH_MAX];
    uint64_t size;
};
/* With mp->mu held, before a commit of m as mkey's latest over old (NULL:
 * none) writes wb: a versioned bucket's old latest is kept as a version
 * (returns 1: its data file stays), and a version kept before with m's id
 * goes (d, for store_vers_dropped; its file stays when it is m's own). 0
 * otherwise. */
int store_vers_commit(struct store *s, struct store_mp *mp, rocksdb_writebatch_t *wb,
                      const char *mkey, size_t klen, const struct objmeta *old,
                      const struct objmeta *m, struct storever_drop *d);
/* After the batch, the lock released: d's file and intent go. */
void store_vers_dropped(struct store *s, struct store_mp *mp, struct storever_drop *d);
/* Give m (its version set) a version id: STORE_VERS_ENABLED makes one,
 * SUSPENDED the null one. 0 or -E2BIG. */
int store_vers_assign(struct objmeta *m, int vers);

/* storesync.c: group commit. A ticket for a write just made; the wait
 * until a sync (sync(mp): 0 or -errno) begun after it is done, run by
 * this thread unless another's covers it. 0 or -errno. */
uint64_t store_gsync_ticket(struct store_gsync *g);
int store_gsync_wait(struct store_gsync *g, uint64_t ticket, struct store_mp *mp,
                     int (*sync)(struct store_mp *mp));
void store_gsync_init(struct store_gsync *g);
void store_gsync_destroy(struct store_gsync *g);
/* The sync of mp's write-ahead log. */
int store_sync_wal(struct store_mp *mp);

/* Settle the intents a crash left on mp (see the commit protocol). */
void store_mp_settle(struct store *s, struct store_mp *mp);

#endif
