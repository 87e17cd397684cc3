/*
 * ocache: each worker's cache of the records and open data files of the
 * objects it read last (ocache.c).
 */
#ifndef SHOAL_TARGET_OCACHE_H
#define SHOAL_TARGET_OCACHE_H

#include <stddef.h>
#include <stdint.h>

struct event;
struct event_base;
struct store;
struct store_mp;
struct objmeta;
struct stat;

/* Size the caches for threads threads, raising the soft limit of open
 * files to the hard one (at start-up, before the threads run). */
void ocache_init(int threads);
/* mkey's record into m, a new descriptor of its data file and the file's
 * stat of this moment into st, from this thread's cache: the fd, or -1
 * when the cache cannot vouch for them. */
int ocache_open(struct store *s, const char *mkey, size_t klen, struct objmeta *m,
                struct stat *st);
/* A small object's bytes kept by ocache_keep_bytes, or an inline
 * record's own, when they may answer a read of mkey now: 1, its record
 * into m and *mem its m->size bytes (until the next call into this
 * thread's cache, or m's next change); 0 when not. */
int ocache_bytes(struct store *s, const char *mkey, size_t klen, struct objmeta *m,
                 const char **mem);
/* Does this thread's cache vouch for mkey's record as the current one?
 * 1 with the record's flags (objmeta's) into *flags, without reading or
 * decoding it; 0 when it cannot say. */
int ocache_flags(struct store *s, const char *mkey, size_t klen, uint32_t *flags);
/* Keep bytes, the whole data of mkey's version m, checked against its
 * checksum, with this thread's entry of that version (if it has one and
 * they fit); st: the file's stat taken before they were read. */
void ocache_keep_bytes(struct store *s, const char *mkey, size_t klen, const struct objmeta *m,
                       const struct stat *st, const char *bytes);
/* Keep mkey's record m and its data file fd (not taken) as read from mp,
 * whose object writes stood at gen (store_wgen) before the record was
 * read; fd -1 for an inline record, whose bytes ocache_bytes answers. */
void ocache_put(struct store_mp *mp, uint64_t gen, const char *mkey, size_t klen,
                const struct objmeta *m, int fd);
/* Let go of every entry of this thread's cache that could not be served
 * again: its drive written since, or its file unlinked (a deleted or
 * overwritten object's). Returns how many went. */
int ocache_sweep(void);
/* A worker's sweeper: ocache_sweep every second from base's loop, so the
 * files of objects deleted or overwritten on any worker are let go even
 * when this one reads nothing more. Call on the worker's thread, as its
 * loop starts; ocache_stop, on the same thread as the loop ends, frees
 * the timer and this thread's cache. */
struct event *ocache_start(struct event_base *base);
void ocache_stop(struct event *sweeper);

#endif
