/*
 * mirror: where a mirrored bucket's copies live, and the PUT's spread of
 * a new version to them (see mirror.h).
 */
#include "mirror.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "ecode.h"
#include "ecstream.h"
#include "localcopy.h"
#include "log.h"
#include "place.h"
#include "reb.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

struct spread {
    struct target *t;
    mirror_done_fn done;
    void *arg;
    int pending, failed;
    char *name;                  /* for the log */
};

static void spread_sent(void *arg, int rc, enum xfer_what what, uint64_t bytes, int busy)
{
    struct spread *s = arg;
    (void)what;
    (void)bytes;
    (void)busy;
    if (rc && rc != -ENOENT) {   /* -ENOENT: a newer version replaced it here meanwhile */
        s->failed++;
        log_warn("a copy of %s was not taken (%s): owed, the next walk brings it", s->name,
                 strerror(-rc));
    }
    if (--s->pending)
        return;
    if (s->failed)
        reb_stray(s->t);
    s->done(s->arg, s->failed);
    free(s->name);
    free(s);
}

static void nothing(void *arg, int failed)
{
    (void)arg;
    (void)failed;
}

static void local_synced(void *arg, int failed)
{
    spread_sent(arg, failed ? -EIO : 0, XFER_NONE, 0, 0);
}

void mirror_spread(struct target *t, const struct xfer_loop *lp, const char *mkey, size_t klen,
                   uint64_t size, int urgent, mirror_done_fn done, void *arg)
{
    mirror_spread_coded(t, lp, mkey, klen, size, urgent, NULL, done, arg);
}

void mirror_spread_coded(struct target *t, const struct xfer_loop *lp, const char *mkey,
                         size_t klen, uint64_t size, int urgent, struct ecstream_out *coded,
                         mirror_done_fn done, void *arg)
{
    struct bmd_ec ec;
    int sliced = size != PLACE_ANY_SIZE && place_ec(mkey, klen, &ec) && size >= ec.limit;
    if (sliced && urgent) {      /* a client's write is sliced */
        localcopy_sync(t, lp, mkey, klen, 0, nothing,
                       NULL); /* an older small version's copies go */
        ecode_spread(t, lp, mkey, klen, coded, done, arg);
        return;
    }
    if (coded)
        ecstream_out_close(coded);   /* unused: not sliced at this size, or asked first */
    if (sliced) {                /* background work first asks what is there */
        localcopy_sync(t, lp, mkey, klen, 0, nothing, NULL);
        ecode_ensure(t, lp, mkey, klen, done, arg);
        return;
    }
    int copies = place_copies(mkey, klen, size);
    const struct cmap_node *h[CMAP_COPIES_MAX];
    struct cmap *m = copies > 1 ? cmap_current() : NULL;
    int n = place_holders(m, mkey, klen, copies, h);
    struct spread *s = xcalloc(1, sizeof(*s));
    s->t = t;
    s->done = done;
    s->arg = arg;
    s->name = xfer_key_show(mkey, klen);
    s->pending = 1;              /* until every send started */
    for (int i = 0; i < n; i++) {
        if (!strcmp(h[i]->id, t->node.id))
            continue;
        s->pending++;
        xfer_send(t, lp, h[i]->url, mkey, klen, 0, urgent, spread_sent, s);
    }
    if (copies > 1 && n > 0 && !strcmp(h[0]->id, t->node.id)) {   /* the owner's drives */
        s->pending++;
        localcopy_sync(t, lp, mkey, klen,
                       size == PLACE_ANY_SIZE ? LOCALCOPY_DELETED
                                              : place_local_copies(t, m, mkey, klen, size),
                       local_synced, s);
    }
    cmap_unref(m);
    spread_sent(s, 0, XFER_NONE, 0, 0);
}
