/*
 * store: a target's mountpaths. Each mountpath is a directory on one drive
 * holding
 *   data/XX/<hash>.<uid>     object data, named by the xxh3-128 of the
 *                            object's metadata key and by a per-version uid,
 *                            so no object name ever becomes a path; 256
 *                            directories made at start-up, so a commit
 *                            makes none (a mountpath whose files predate
 *                            this layout keeps data/XX/YY/: its file
 *                            "layout" says which);
 *   meta/                    RocksDB: object metadata (objmeta) by key
 *                            "o" provider \0 bucket \0 name, which sorts by
 *                            bucket then name; plus "g" <path> intents,
 *                            and "t" + the same: tombstones (a deleted
 *                            name's version, kept tombstone_ttl_s);
 *   work/<uid>               files being written;
 *   mpath.id                 the mountpath's persistent id (for HRW).
 *
 * Crash safety. A PUT writes work/<uid>, then (store_commit): fsync, an
 * intent "g<new path>" in RocksDB, rename into data/ and fsync of its
 * directory, one atomic RocksDB batch {new metadata, drop the new intent,
 * intent for the old file}, durable once a sync of the write-ahead log
 * covers it (group commit: concurrent commits of a mountpath share one
 * sync, and each returns only after it), then unlink of the old file and
 * its intent. At start-up (store_open) every
 * work file is removed and every intent whose file is not the one its
 * metadata names is unlinked. A crash at any point so leaves the old
 * object or the new one, and no file that nothing refers to.
 *
 * Versions (common/hlc.h): every commit, delete and metadata change gives
 * the name a version above any it had here, object or tombstone, so that
 * wherever two copies of a name meet, the newer one wins.
 *
 * Versions of a versioned bucket (storever.c). A commit whose record
 * carries a version id (OBJMETA_VID) keeps the record it replaces, when that
 * is another version, as an ordinary object named the name,
 * OBJNAME_VERSION_SEP and the version's id, in the same batch and with the
 * same data file; a new null version replaces a null one kept before.
 * Every commit does so, the client's and the copies' alike, so mirrors,
 * rebalance and resilver keep the same versions. A commit also replaces a
 * kept version with the new record's own id (a null version, or one made
 * the latest again). The latest version is the name's record; when it is
 * deleted, the newest kept is made the name's record again
 * (store_version_promote); until then, and where that failed, the newest
 * kept is read as the latest. A delete marker is a record of no bytes
 * with OBJMETA_DELETE_MARKER.
 *
 * Threads: store_get is safe from any thread; commit, delete, list and
 * purge block and run on the I/O pool.
 */
#ifndef SHOAL_STORE_H
#define SHOAL_STORE_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stddef.h>
#include <stdint.h>

#include "objmeta.h"

struct gbuf;
#define STORE_MP_MAX 64          /* mountpaths a target may ever open in one run */
#define STORE_MP_ERRORS 3        /* I/O errors after which a mountpath is disabled */

/* One kind of sync shared by the commits that wait for it together:
 * writes take tickets; a wait returns once a sync begun after its write
 * is done (storesync.c). */
#define STORE_GSYNC_FAILS 8      /* failed syncs remembered one by one */
struct store_gsync {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t written;            /* atomic: tickets taken */
    uint64_t synced;             /* under mu: tickets up to this are durable */
    int syncing;                 /* under mu: a thread is syncing */
    uint64_t failed[STORE_GSYNC_FAILS][2];  /* under mu: tickets [from, upto] of
                                             * failed syncs, n_failed of them */
    int n_failed;
    int failed_rc;               /* ... and the last one's error, theirs too */
};

struct store_mp {
    char *dir;
    char *id;
    uint64_t hash;               /* hrw_hash(id) */
    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf;   /* db's only family, for pinned reads */
    int data_fd;                 /* data/, for openat without the long path */
    int nested;                  /* data files in data/XX/YY/, not data/XX/ (storemp.c) */
    pthread_mutex_t mu;          /* serialises commits and deletes */
    int64_t bytes_delta;         /* object bytes committed less those removed since the
                                  * space sampler last looked (atomic; target/space/space.c) */
    int enabled;                 /* atomic: new objects may be placed here */
    int failed;                  /* atomic: disabled after STORE_MP_ERRORS I/O errors */
    int gone;                    /* atomic: removed and emptied: read no more */
    int io_errors;               /* atomic */
    int db_failed;               /* atomic: a write to db failed (-ENOSPC, -EIO): it takes no
                                  * more and its log is never synced again (store.c) */
    uint64_t room_ns;            /* atomic: when the drive last had room to spare (store.c) */
    uint64_t wgen;               /* atomic: bumped after every write of an object's record
                                  * (target/store/ocache.h) */
    /* group commit (storesync.c): commits' records, written unsynced,
     * made durable by one sync of the write-ahead log for all waiting */
    struct store_gsync wal;
    struct store *s;             /* its store */
};

/* The mountpaths new objects go to (HRW over them): an immutable set,
 * replaced whole when one is added or disabled; old sets are kept until
 * store_close (readers never lock). */
struct store_set {
    int n;
    int idx[STORE_MP_MAX];       /* into store.mp */
    uint64_t hashes[STORE_MP_MAX];
    struct store_set *older;
};

struct store {
    int n;                       /* atomic: mountpaths opened (mp[0..n)), never fewer */
    struct store_mp *mp;         /* STORE_MP_MAX of them, so pointers stay put */
    struct store_set *set;       /* atomic */
    int moving;                  /* atomic: objects may sit off their mountpath (a resilver) */
    int gen;                     /* atomic: bumped by every change of the placed set */
    pthread_mutex_t set_mu;      /* serialises changes of the set */
    /* a mountpath was disabled for its errors (any thread; may be NULL) */
    void (*on_failed)(void *arg, struct store_mp *mp);
    void *on_failed_arg;
    int fsync;
    /* bytes: a version up to this size is kept in its record, with no
     * data file (OBJMETA_F_INLINE); 0: none is (set after store_open) */
    uint32_t inline_max;
    rocksdb_options_t *opts;
    rocksdb_cache_t *cache;
    rocksdb_block_based_table_options_t *topts;
    rocksdb_writeoptions_t *wo_sync;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
};

/* Open the mountpaths dirs[0..n) (placed), then off[0..noff) (read, not
 * placed: removed but not yet emptied). 0, or -1 with err. */
int store_open(struct store *s, char **dirs, int n, char **off, int noff, int do_fsync,
               char *err, size_t errlen);
void store_close(struct store *s);
/* Open one more mountpath at run time, placed from now on (storemp.c):
 * its index, or -1 with err (also for a directory already open). */
int store_mp_add(struct store *s, const char *dir, char *err, size_t errlen);
/* Place new objects on mountpath i or not (never the last one placed):
 * 0, or -EBUSY. Objects off their mountpath are found (store_pick) until
 * a resilver moved them. */
int store_mp_enable(struct store *s, int i, int on);
/* Close mountpath i for good if it holds no object or tombstone (checked
 * under its lock, so no commit lands on it after): 1 if it did, else 0.
 * A commit that chose it before gets -ESTALE. */
int store_mp_retire(struct store *s, int i);
/* Does the store hold no object at all (tombstones aside)? */
int store_empty(struct store *s);
/* Index of the open mountpath dir (not gone), or -1. */
int store_mp_index(struct store *s, const char *dir);
/* An I/O error (-EIO, -EROFS) on mp: after STORE_MP_ERRORS of them the
 * mountpath is disabled and on_failed runs. Other errors are ignored.
 * The store notes its own (work files, commits); callers note theirs
 * (writes of a body, reads of a data file). */
void store_note_error(struct store_mp *mp, int rc);

/* mp's object write generation (store_mp.wgen). */
uint64_t store_wgen(struct store_mp *mp);

/* Metadata key of an object; a malloc'd buffer of *klen bytes. */
char *store_mkey(const char *provider, const char *bucket, const char *name, size_t name_len,
                 size_t *klen);
/* Where a new version of mkey goes: HRW over the placed mountpaths. */
struct store_mp *store_place(struct store *s, const char *mkey, size_t klen);
/* Where mkey is (its record or tombstone): store_place's mountpath,
 * unless a resilver is under way and the name sits on another (then the
 * one holding its newest version); reads and deletes go here, new
 * versions to store_place. */
struct store_mp *store_pick(struct store *s, const char *mkey, size_t klen);
/* Open the data of mkey's committed version m for reading: the fd or
 * -errno; an inline version's bytes (m->inl) come as a memory file of
 * their own. What the reader brings into memory is not checked by a
 * GET's plan, so the file counts as unchecked while it may be read
 * (vmap_reading). A GET, which checks what it sends, opens with
 * store_data_open_served. */
int store_data_open(const struct store_mp *mp, const char *mkey, size_t klen,
                    const struct objmeta *m);
int store_data_open_served(const struct store_mp *mp, const char *mkey, size_t klen,
                           const struct objmeta *m);

/* The key of the bytes of k's inline version ("i" + k; a malloc'd buffer
 * of *dl bytes), written and deleted with k's record in one batch. */
char *store_inline_key(const char *k, size_t kl, size_t *dl);
/* Into wb: inline version m's bytes under k's key for them (m->inl
 * loaded), or that key's delete. */
void store_inline_put(rocksdb_writebatch_t *wb, const char *k, size_t kl,
                      const struct objmeta *m);
void store_inline_drop(rocksdb_writebatch_t *wb, const char *k, size_t kl);
/* Read the bytes of k's inline version m into m->inl, unless loaded (a
 * record from a scan has none; store_get reads them): 0 or -errno. */
int store_inline_load(const struct store_mp *mp, const char *k, size_t kl, struct objmeta *m);

/* Open a new work file; returns the fd or -errno, and its uid and path. */
int store_work_open(struct store_mp *mp, uint64_t *uid, char *path, size_t pathlen);
/* A work file in memory, for a body known to be of at most inline_max
 * bytes, which its commit keeps in the record: the fd or -errno, its uid,
 * and "" as its path. */
int store_work_open_mem(uint64_t *uid, char *path, size_t pathlen);
/* 0, -ENOENT or -EIO. */
int store_get(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
              struct objmeta *m);
/* store_get, with an inline version's bytes not copied into m->inl but
 * left where RocksDB read them: *bytes (m->size of them), held until
 * store_bytes_free(*hold); both NULL when they are not there or are in
 * m->inl already (m->inl_loaded). */
int store_get_bytes(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                    struct objmeta *m, const char **bytes, void **hold);
void store_bytes_free(void *hold);
/*
 * Make a work file the object's new version. m carries size, cksum, uid;
 * version and mtime are filled in (kept, with keep_version: see store_x).
 * A version of up to inline_max bytes is read into the record (its bytes
 * durable with it, in the write-ahead log) and the work file goes; a
 * larger one's file is renamed into data/. fd -1 and work_path NULL: m
 * is inline already. Closes fd. On error the work file is gone and the
 * previous version is intact. 0 or -errno.
 */
int store_commit(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                 const char *work_path, int fd, struct objmeta *m);

/* What a commit or delete also does, under the same lock and in the same
 * write batch: key is put (val) with it, unless absent exists (then
 * -EEXIST and nothing changes). Either may be NULL.
 * keep_version: the object (commit) or deletion (delete: a tombstone) of
 * another node with its version, applied only if newer than what is here
 * (else -EALREADY); a commit keeps m's mtime. tomb: a delete leaves a
 * tombstone, also when there was no object (then -ENOENT all the same). */
struct store_x {
    const char *key, *val;
    size_t key_len, val_len;
    const char *absent, *absent2;   /* both must be absent */
    size_t absent_len, absent2_len;
    uint64_t keep_version;
    int tomb;
    const char *drop;            /* a delete: this key goes too (the object's "w") */
    size_t drop_len;
    /* a client's conditional write, checked against the version held, in
     * the commit's critical section, as S3 checks it: if_none (If-None-Match:
     * *) fails when one is held, if_none_match (ETags) when the held one's is
     * among them, if_match (ETags, quoted, or "*") when it is not: -ECANCELED;
     * if_match when none is held: -ENODATA */
    int if_none;
    const char *if_none_match;
    const char *if_match;
    /* a versioned bucket's new latest version (STORE_VERS_*): it gets a
     * version id (OBJMETA_VID), made from its version, or the null one */
    int vers;
    /* a kept version made the latest again (store_version_promote): it
     * keeps its id and mtime, and gets a new store version; the commit
     * goes ahead only while the key kept is still there with the uid
     * kept_uid (else -ESTALE: deleted or replaced meanwhile) */
    int promote;
    const char *kept;
    size_t kept_len;
    uint64_t kept_uid;
};
#define STORE_VERS_ENABLED 1
#define STORE_VERS_SUSPENDED 2
#define STORE_VID_LEN 16         /* hex digits of a version id ("null" aside) */

/* The version id of a record ("null" when it has none); is it a delete
 * marker; is vid well formed (16 lower-case hex digits, or "null")? */
const char *store_vid(const struct objmeta *m);
int store_is_marker(const struct objmeta *m);
/* Whether x carries a client's condition, and how x's conditions judge a
 * version whose ETag is held_etag (NULL: none is held): 0, -ECANCELED or
 * -ENODATA, as the commit judges them. */
int store_x_conditional(const struct store_x *x);
int store_x_precondition(const struct store_x *x, const char *held_etag);
int store_vid_valid(const char *vid);
/* The record of mkey's version vid (NULL: the latest, which is mkey's
 * record, else the newest kept) on mp: its key (malloc'd, *vkl bytes:
 * mkey itself for the name's record) and record. 0, -ENOENT or -errno. Blocks: the I/O pool. */
int store_version_find(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                       const char *vid, char **vkey, size_t *vkl, struct objmeta *m);
/* The key a version of mkey (its record m) is kept under: mkey,
 * OBJNAME_VERSION_SEP, its id; malloc'd, *kl bytes. */
char *store_version_key(const char *mkey, size_t klen, const struct objmeta *m, size_t *kl);
/* After the latest version of mkey (its record) was deleted on mp: the
 * newest version kept becomes the latest again (S3: deleting the current
 * version makes the next newest current), its record moved to mkey with
 * its id and mtime (m: that record), its data file linked to the new
 * record's. 0; -ENOENT when none is kept; -EEXIST when the name was
 * written again meanwhile (nothing done); -errno. A version deleted
 * while this runs is never made the latest: the next newest is tried.
 * Blocks: the I/O pool. */
int store_version_promote(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                          struct objmeta *m);
int store_commit_x(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                   const char *work_path, int fd, struct objmeta *m, const struct store_x *x);
/* 0 or -ENOENT / -errno; -EEXIST while the object waits to be written
 * back (a "w" record: writeback.h), which only store_delete_x may replace. */
int store_delete(struct store *s, struct store_mp *mp, const char *mkey, size_t klen);
/* A client's delete: store_delete that leaves a tombstone. */
int store_delete_tomb(struct store *s, struct store_mp *mp, const char *mkey, size_t klen);
/* The version of the name's tombstone: 0 or -ENOENT. */
int store_tomb_get(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                   uint64_t *version);
/* The newest version mp holds of mkey, as an object or a tombstone; 0:
 * none. What a copy from elsewhere must beat. */
uint64_t store_version(struct store *s, struct store_mp *mp, const char *mkey, size_t klen);
/* The version record m counts as held: its own, but one less for a copy
 * marked damaged (OBJMETA_F_DAMAGED), so that a good copy of the same
 * version, from a copy holder or another drive, replaces it, while
 * nothing older does; and a damaged copy never counts as a copy held. */
uint64_t store_held_version(const struct objmeta *m);
/* Mark the copy of mkey damaged (OBJMETA_F_DAMAGED: never served, never
 * handed on, kept for an operator), its version unchanged, only while it
 * is still the one with data file uid (0: any): 0, -ESTALE, -ENOENT or
 * -errno. Blocks: the I/O pool. */
int store_mark_damaged(struct store *s, const char *mkey, size_t klen, uint64_t uid);
/* Drop the tombstones of deletes before before_ms; how many. */
long store_tomb_sweep(struct store *s, uint64_t before_ms);
/* mkey with its first byte ('o') made kind: the key of a record beside the
 * object's ('a' last read, 'w' write-back). A new string of klen bytes. */
char *store_side_key(char kind, const char *mkey, size_t klen);
/* The same only while the object is still the version with data file
 * uid (else -ESTALE); uid 0: whatever version. */
int store_delete_if(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                    uint64_t uid);
/* Both, with x (store_commit_x). */
int store_delete_x(struct store *s, struct store_mp *mp, const char *mkey, size_t klen,
                   uint64_t uid, const struct store_x *x);
/*
 * Up to limit objects of a bucket in name order, with the given prefix and
 * names after `after` (exclusive; may be ""), from `from` and up to `until`
 * (both inclusive; "" for no bound), written to out as a compact listing
 * page (common/listpage.h) whose head says whether more follow; versions:
 * every version kept, as stored (list_shows in store.c). 0 or -EIO.
 */
int store_list(struct store *s, const char *provider, const char *bucket, const char *prefix,
               const char *after, const char *from, const char *until, int limit, int versions,
               struct gbuf *out);
/* Remove every object of a bucket; returns how many. */
long store_purge(struct store *s, const char *provider, const char *bucket);

/*
 * Small records beside the objects' metadata (multipart uploads and their
 * parts), under keys that do not start with 'o' or 'g'. get returns a
 * malloc'd value; put is synced when fsync is on; scan calls cb for every
 * key with the prefix, in order, until cb returns non-zero (returned).
 * 0 or -errno (-ENOENT: no such key).
 */
int store_kv_get(struct store *s, struct store_mp *mp, const char *k, size_t kl, char **v,
                 size_t *vl);
int store_kv_put(struct store *s, struct store_mp *mp, const char *k, size_t kl, const char *v,
                 size_t vl);
/*
 * Change an object's metadata record in place: read it, let change() edit
 * it (0, or -errno to leave it as it was), move its version on and write
 * it back, all under the mountpath's lock that store_commit and
 * store_delete hold, so that a PUT or DELETE of the object is wholly
 * before or after the change. 0, -ENOENT, change()'s error or -errno.
 * Blocks: the I/O pool.
 */
int store_meta_update(struct store *s, const char *mkey, size_t klen,
                      int (*change)(struct objmeta *m, void *arg), void *arg);
int store_kv_del(struct store *s, struct store_mp *mp, const char *k, size_t kl);
/* Delete k only while its value is still expect (el bytes), under the
 * lock commits and deletes hold: 0, -ENOENT, -ESTALE (changed) or -errno. */
int store_kv_del_if(struct store *s, struct store_mp *mp, const char *k, size_t kl,
                    const char *expect, size_t el);
/* store_kv_put that does not wait for the write-ahead log to reach the drive. */
int store_kv_put_nosync(struct store *s, struct store_mp *mp, const char *k, size_t kl,
                        const char *v, size_t vl);
int store_kv_scan(struct store *s, struct store_mp *mp, const char *prefix, size_t pl,
                  int (*cb)(void *arg, const char *k, size_t kl, const char *v, size_t vl),
                  void *arg);
/* The same from after the key after (al bytes, exclusive; NULL: from the start). */
int store_kv_scan_after(struct store *s, struct store_mp *mp, const char *prefix, size_t pl,
                        const char *after, size_t al,
                        int (*cb)(void *arg, const char *k, size_t kl, const char *v, size_t vl),
                        void *arg);

#endif
