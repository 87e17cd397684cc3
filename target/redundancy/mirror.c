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
#include "lcopy.h"
#include "log.h"
#include "reb.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

int mirror_bucket_copies(const struct bmd_bucket *bk)
{
    struct bmd_ec ec;
    return bmd_ec(bk, &ec) ? ec.p + 1 : bmd_copies(bk);
}

static int copies_of(const struct bmd_bucket *bk, uint64_t size)
{
    struct bmd_ec ec;
    if (!bmd_ec(bk, &ec))
        return bmd_copies(bk);
    if (size == MIRROR_ANY_SIZE)
        return 1 + ec.d + ec.p;
    return size < ec.limit ? ec.p + 1 : 1;
}

int mirror_copies(const char *mkey, size_t klen, uint64_t size)
{
    struct bmd *b;
    const struct bmd_bucket *bk = xfer_key_bucket(mkey, klen, &b);
    int copies = bk ? copies_of(bk, size) : 1;
    bmd_unref(b);
    return copies;
}

int mirror_spreads(const char *mkey, size_t klen)
{
    struct bmd *b;               /* one look at the BMD on every write */
    const struct bmd_bucket *bk = xfer_key_bucket(mkey, klen, &b);
    struct bmd_ec ec;
    int spreads = bk && (bmd_copies(bk) > 1 || bmd_ec(bk, &ec));
    bmd_unref(b);
    return spreads;
}

int mirror_holders(const struct cmap *m, const char *mkey, size_t klen, int copies,
                   const struct cmap_node **out)
{
    size_t pl;
    char *pkey = m ? xfer_place_key(mkey, klen, &pl) : NULL;
    if (!pkey)
        return 0;
    int n = cmap_holders(m, pkey, pl, out, copies);
    free(pkey);
    return n;
}

int mirror_rank(const struct cmap *m, const char *mkey, size_t klen, int copies, const char *id)
{
    const struct cmap_node *h[CMAP_COPIES_MAX];
    int n = mirror_holders(m, mkey, klen, copies, h);
    for (int i = 0; i < n; i++)
        if (!strcmp(h[i]->id, id))
            return i;
    return -1;
}

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
    int sliced = size != MIRROR_ANY_SIZE && ecode_of(mkey, klen, &ec) && size >= ec.limit;
    if (sliced && urgent) {      /* a client's write is sliced */
        lcopy_sync(t, lp, mkey, klen, 0, nothing, NULL);   /* an older small version's copies go */
        ecode_spread(t, lp, mkey, klen, coded, done, arg);
        return;
    }
    if (coded)
        ecstream_out_close(coded);   /* unused: not sliced at this size, or asked first */
    if (sliced) {                /* background work first asks what is there */
        lcopy_sync(t, lp, mkey, klen, 0, nothing, NULL);
        ecode_ensure(t, lp, mkey, klen, done, arg);
        return;
    }
    int copies = mirror_copies(mkey, klen, size);
    const struct cmap_node *h[CMAP_COPIES_MAX];
    struct cmap *m = copies > 1 ? cmap_current() : NULL;
    int n = mirror_holders(m, mkey, klen, copies, h);
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
        lcopy_sync(t, lp, mkey, klen,
                   size == MIRROR_ANY_SIZE ? LCOPY_DELETED : lcopy_want(t, m, mkey, klen, size),
                   local_synced, s);
    }
    cmap_unref(m);
    spread_sent(s, 0, XFER_NONE, 0, 0);
}
