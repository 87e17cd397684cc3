/*
 * iopool: a fixed pool of threads for calls that may block (fsync, RocksDB
 * writes and scans, unlink of large files). A job's work() runs on a pool
 * thread; its done() then runs on the loop that submitted it, through that
 * loop's loopq. Every submitted job runs both exactly once.
 */
#ifndef SHOAL_IOPOOL_H
#define SHOAL_IOPOOL_H

struct loopq;
struct iopool;

struct iopool *iopool_new(int nthreads);
/* Finishes queued work, then joins the threads. */
void iopool_free(struct iopool *p);
/* done may be NULL, then q may be NULL too. */
void iopool_submit(struct iopool *p, struct loopq *q, void (*work)(void *),
                   void (*done)(void *), void *arg);
/* The same ahead of everything queued: work a client waits on, behind a
 * flood of background work (a rebalance). */
void iopool_submit_first(struct iopool *p, struct loopq *q, void (*work)(void *),
                         void (*done)(void *), void *arg);

#endif
