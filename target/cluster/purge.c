/*
 * purge: when a bucket leaves the bucket metadata (the primary destroyed
 * it), every target drops its objects. The BMD hook only queues the work:
 * removing a bucket's files and records (store_purge) runs on the I/O
 * pool, and checks the BMD again first, so a bucket created anew under
 * the same name in the meantime keeps what it has.
 *
 * Threads: the hook runs on whichever thread installed the new BMD; the
 * purge on the I/O pool.
 */
#include <stdlib.h>

#include "bmd.h"
#include "iopool.h"
#include "log.h"
#include "purge.h"
#include "reb.h"
#include "target.h"
#include "util.h"

struct purge {
    struct target *t;
    char *provider, *bucket;
};

static void purge_work(void *arg)
{
    struct purge *p = arg;
    struct bmd *b = bmd_current();
    int back = b && bmd_find(b, p->provider, p->bucket);
    bmd_unref(b);
    if (!back) {
        long n = store_purge(&p->t->store, p->provider, p->bucket);
        log_info("bucket %s/%s destroyed: %ld objects removed", p->provider, p->bucket, n);
    }
    free(p->provider);
    free(p->bucket);
    free(p);
}

/* Do a bucket's copies or slices go elsewhere under new's properties? */
static int redundancy_changed(const struct bmd_bucket *old, const struct bmd_bucket *new)
{
    return !json_equal(json_object_get(old->props, "mirror"),
                       json_object_get(new->props, "mirror")) ||
           !json_equal(json_object_get(old->props, "ec"), json_object_get(new->props, "ec"));
}

void purge_on_bmd(struct node *n, struct bmd *old_bmd, struct bmd *new_bmd)
{
    struct target *t = n->owner;
    if (!old_bmd || !t->io)
        return;
    int walk = 0;
    for (int i = 0; i < new_bmd->n; i++) {
        const struct bmd_bucket *was = bmd_find(old_bmd, new_bmd->b[i].provider,
                                                new_bmd->b[i].name);
        walk |= was && redundancy_changed(was, &new_bmd->b[i]);
    }
    if (walk)                    /* existing objects get their copies or slices (reb.h) */
        reb_stray(t);
    for (int i = 0; i < old_bmd->n; i++) {
        const struct bmd_bucket *bk = &old_bmd->b[i];
        if (bmd_find(new_bmd, bk->provider, bk->name))
            continue;
        struct purge *p = xcalloc(1, sizeof(*p));
        p->t = t;
        p->provider = xstrdup(bk->provider);
        p->bucket = xstrdup(bk->name);
        iopool_submit(t->io, NULL, purge_work, NULL, p);
    }
}
