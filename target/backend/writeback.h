/*
 * writeback: the write-back queue (writeback.c). In a bucket whose write_policy is
 * write-back, a PUT is acknowledged once committed on this target, and a
 * record "w" + the store key ("P <seq>", or "D <seq>" for a DELETE) is
 * written in the same RocksDB batch as the commit (store_commit_x), so
 * the queue survives kill -9. An uploader on one worker's loop walks the
 * records, wbq_workers at a time, one operation per object: it sends the
 * object's current version to the backend (or deletes it there), then
 * drops the record only if no newer operation replaced it meanwhile (the
 * seq), so the backend ends with the newest version. Failures stay queued
 * and are tried again with a growing pause (at most a minute).
 *
 * A flush job (kind "flush") ends once every record of its bucket that
 * existed when it started is gone.
 *
 * Thread: records are made on the I/O pool (with the commit); the
 * uploader's state is its loop's.
 */
#ifndef SHOAL_TARGET_WRITEBACK_H
#define SHOAL_TARGET_WRITEBACK_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

struct http_req;
struct http_worker;
struct objmeta;
struct store;
struct store_mp;
struct store_x;
struct target;

/* A record for mkey: its key (made, free it) and value into x, with
 * buf (at least WRITEBACK_VAL_MAX bytes) holding the value. del: a DELETE. */
#define WRITEBACK_VAL_MAX 48
void writeback_record(const struct target *t, struct store_x *x, const char *mkey, size_t klen,
                      int del, char *buf);

/* store_commit with the object's record: acknowledged once this returns
 * 0; the I/O pool. cond (NULL: none): a client's If-None-Match / If-Match
 * (store_x's if_none, if_match). */
int writeback_commit(struct target *t, struct store_mp *mp, const char *mkey, size_t klen,
                     const char *work, int fd, struct objmeta *m, const struct store_x *cond);

/* Is an upload of mkey still owed (its record exists)? The I/O pool. */
int writeback_owed(struct store *s, const char *mkey, size_t klen);

/* The uploader runs on w's loop; records left by an earlier run resume. */
void writeback_start(struct target *t, struct http_worker *w);
/* New records: look soon (any thread). */
void writeback_kick(const struct target *t);

/* The kind "flush" (registered by main.c): every record of its bucket
 * written before it started is uploaded; done as they go. */
extern const struct job_kind writeback_flush_kind;

/* The main thread, at a SIGTERM with drain set: the uploader sends
 * everything queued (no pauses) until nothing is or timeout_s passed; the
 * server still runs meanwhile. */
void writeback_drain(struct target *t, int timeout_s);

/* GET /v1/internal/wbq?provider=P&bucket=B: what the bucket's objects on
 * this target still owe its backend: {"objects", "bytes", "oldest_ns"};
 * with &deletes&after=A&until=U: {"deleted": [names]}, those in (A, U]
 * (U "" for no bound) deleted here and not yet in the backend. */
void writeback_report(struct http_req *r, const char *rest, size_t rlen);

#endif
