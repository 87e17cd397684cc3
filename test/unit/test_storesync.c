/* storesync: a group sync covers every ticket taken before it began; a
 * failed sync fails every ticket it should have covered, even when a
 * later sync succeeds; waiters on several threads share syncs. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "store.h"
#include "storeint.h"

static int syncs, fail_next;

static int fake_sync(struct store_mp *mp)
{
    (void)mp;
    __atomic_add_fetch(&syncs, 1, __ATOMIC_RELAXED);
    if (fail_next) {
        fail_next = 0;
        return -EIO;
    }
    return 0;
}

static struct store_gsync g;

static void *waiter(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++)
        if (store_gsync_wait(&g, store_gsync_ticket(&g), NULL, fake_sync))
            return (void *)1;
    return NULL;
}

int main(void)
{
    store_gsync_init(&g);
    uint64_t t1 = store_gsync_ticket(&g), t2 = store_gsync_ticket(&g);
    CHECK(store_gsync_wait(&g, t2, NULL, fake_sync) == 0 && syncs == 1);
    CHECK(store_gsync_wait(&g, t1, NULL, fake_sync) == 0 && syncs == 1);   /* covered */

    uint64_t t3 = store_gsync_ticket(&g), t4 = store_gsync_ticket(&g);
    fail_next = 1;
    CHECK(store_gsync_wait(&g, t3, NULL, fake_sync) == -EIO);
    CHECK(store_gsync_wait(&g, t4, NULL, fake_sync) == -EIO);   /* its bytes were in it */
    CHECK(syncs == 2);
    uint64_t t5 = store_gsync_ticket(&g);
    CHECK(store_gsync_wait(&g, t5, NULL, fake_sync) == 0 && syncs == 3);
    /* a ticket synced before a failure is still durable after it */
    uint64_t t6 = store_gsync_ticket(&g);
    fail_next = 1;
    CHECK(store_gsync_wait(&g, t6, NULL, fake_sync) == -EIO);
    CHECK(store_gsync_wait(&g, t5, NULL, fake_sync) == 0);
    CHECK(store_gsync_wait(&g, t6, NULL, fake_sync) == -EIO);
    CHECK(store_gsync_wait(&g, store_gsync_ticket(&g), NULL, fake_sync) == 0);

    /* four threads, 800 waits: fewer syncs than waits, none failed */
    syncs = 0;
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, waiter, NULL);
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        bad += rv != NULL;
    }
    CHECK(bad == 0 && syncs >= 1 && syncs <= 800);
    store_gsync_destroy(&g);
    return check_done("test_storesync");
}
