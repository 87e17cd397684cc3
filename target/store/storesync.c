/*
 * storesync: group commit. A commit makes its file durable (its own
 * fdatasync and its directory's fsync, which run in parallel across the
 * I/O threads), then its record (store.h: the commit protocol); a sync of
 * RocksDB's write-ahead log costs about as much for one commit as for
 * many. So commits whose records are written together share one: each
 * takes a ticket after its write, and waits until a sync begun after that
 * write has ended; the first to find none running runs it for every
 * ticket taken so far. A commit still returns only once its own writes
 * are durable.
 *
 * Thread: the I/O pool.
 */
#include "store.h"
#include "storeint.h"

#include <errno.h>
#include <unistd.h>

void store_gsync_init(struct store_gsync *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->written = g->synced = 0;
    g->n_failed = g->failed_rc = 0;
    g->syncing = 0;
}

void store_gsync_destroy(struct store_gsync *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

/* The tickets of failed syncs: a few ranges, the last one widened when
 * they run out (then a ticket that was durable may be failed too, never
 * the other way round). */
static void note_failed(struct store_gsync *g, uint64_t from, uint64_t upto)
{
    if (g->n_failed < STORE_GSYNC_FAILS) {
        g->failed[g->n_failed][0] = from;
        g->failed[g->n_failed][1] = upto;
        g->n_failed++;
        return;
    }
    uint64_t *last = g->failed[STORE_GSYNC_FAILS - 1];
    if (from < last[0])
        last[0] = from;
    if (upto > last[1])
        last[1] = upto;
}

static int in_failed(const struct store_gsync *g, uint64_t ticket)
{
    for (int i = 0; i < g->n_failed; i++)
        if (ticket >= g->failed[i][0] && ticket <= g->failed[i][1])
            return 1;
    return 0;
}

uint64_t store_gsync_ticket(struct store_gsync *g)
{
    return __atomic_add_fetch(&g->written, 1, __ATOMIC_ACQ_REL);
}

int store_gsync_wait(struct store_gsync *g, uint64_t ticket, struct store_mp *mp,
                     int (*sync)(struct store_mp *mp))
{
    int rc = 0;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        if (in_failed(g, ticket)) {
            rc = g->failed_rc;   /* a sync that should have covered it failed: its
                                  * bytes may be gone whatever a later sync says */
            break;
        }
        if (rc || g->synced >= ticket)
            break;
        if (g->syncing) {        /* one is under way: the next may be ours */
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        /* every ticket taken by now was taken after its write */
        uint64_t upto = __atomic_load_n(&g->written, __ATOMIC_ACQUIRE);
        g->syncing = 1;
        pthread_mutex_unlock(&g->mu);
        rc = sync(mp);
        pthread_mutex_lock(&g->mu);
        g->syncing = 0;
        if (rc) {                /* every ticket it was for fails */
            note_failed(g, g->synced + 1, upto);
            g->failed_rc = rc;
        } else if (upto > g->synced) {
            g->synced = upto;
        }
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int store_sync_wal(struct store_mp *mp)
{
    int failed = __atomic_load_n(&mp->db_failed, __ATOMIC_ACQUIRE);
    if (failed)                  /* never a sync after a failed write: see store.h */
        return failed;
    char *e = NULL;
    rocksdb_flush_wal(mp->db, 1, &e);
    return e ? store_db_errno(e) : 0;
}
