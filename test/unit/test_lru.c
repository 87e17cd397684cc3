/* What eviction may take (lru.h's census, the same judgement as the
 * eviction job's), on a real store: in a bucket with a backend, an
 * object read long ago may go; one read within lru_dont_evict_s, one a
 * prefetch job's pin holds, and one not yet written back may not; nor
 * does anything of a bucket without a backend, or of one whose property
 * "lru" is false. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atime.h"
#include "bmd.h"
#include "check.h"
#include "fixture.h"
#include "localcopy.h"
#include "lru.h"
#include "pin.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "writeback.h"

static struct target t;          /* large: not on the stack */
static const struct target_hooks hooks = {    /* main.c's, for what eviction asks */
    .owed = writeback_owed,
    .drop_local_copies = localcopy_drop,
};

static int set_mtime(struct objmeta *m, void *arg)
{
    m->mtime_ns = *(uint64_t *)arg;
    return 0;
}

/* Commit n bytes as the object's new version; mtime_s sets its time. */
static int put(const char *bucket, const char *name, size_t n, uint64_t mtime_s, int owed)
{
    size_t kl;
    char *mkey = store_mkey("shoal", bucket, name, strlen(name), &kl);
    struct store_mp *mp = store_place(&t.store, mkey, kl);
    char work[4096], *body = xcalloc(1, n);
    struct objmeta *m = xcalloc(1, sizeof(*m));
    int fd = store_work_open(mp, &m->uid, work, sizeof(work));
    int rc = fd < 0 || write(fd, body, n) != (ssize_t)n;
    m->size = n;
    if (!rc && owed)
        rc = writeback_commit(&t, mp, mkey, kl, work, fd, m, NULL);
    else if (!rc)
        rc = store_commit(&t.store, mp, mkey, kl, work, fd, m);
    /* the record's time stands for a read that long ago */
    uint64_t ns = mtime_s * 1000000000ull;
    if (!rc)
        rc = store_meta_update(&t.store, mkey, kl, set_mtime, &ns);
    free(m);
    free(body);
    free(mkey);
    return rc;
}

static struct lru_census census(void)
{
    struct lru_census c;
    lru_census(&t, 0, &c);
    return c;
}

int main(void)
{
    char dir[] = "/tmp/shoal-lru-XXXXXX";
    CHECK(fixture_store_open(&t.store, dir) == 0);
    t.hooks = &hooks;
    t.conf.lru_dont_evict_s = 3600;
    struct bmd *b = bmd_new(2);
    json_t *cached = json_pack("{s:s}", "backend", "s3://remote");
    json_t *kept = json_pack("{s:s, s:b}", "backend", "s3://remote", "lru", 0);
    CHECK(bmd_add(b, "shoal", "cached", cached, 1) == 0);
    CHECK(bmd_add(b, "shoal", "kept", kept, 2) == 0);
    json_decref(cached);
    json_decref(kept);
    CHECK(bmd_add(b, "shoal", "local", NULL, 3) == 0);
    CHECK(bmd_install(b, 1) == 1);
    uint64_t now = (uint64_t)time(NULL), old = now - 86400;

    CHECK(put("cached", "old", 1000, old, 0) == 0);
    struct lru_census c = census();
    CHECK(c.objects == 1 && c.evictable == 1000 && c.pinned == 0 && c.dirty == 0);

    CHECK(put("cached", "recent", 2000, now, 0) == 0);     /* read within the hour */
    CHECK(put("cached", "owed", 4000, old, 1) == 0);       /* not written back yet */
    CHECK(put("kept", "x", 8000, old, 0) == 0);            /* lru: false */
    CHECK(put("local", "y", 16000, old, 0) == 0);          /* Shoal's only copy */
    c = census();
    CHECK(c.objects == 5 && c.evictable == 1000 && c.dirty == 4000 && c.pinned == 0);

    /* a recent read of the old one, counted in memory: it stays */
    size_t kl;
    char *mkey = store_mkey("shoal", "cached", "old", 3, &kl);
    atime_touch(mkey, kl);
    free(mkey);
    c = census();
    CHECK(c.evictable == 0);

    /* a pin holds what a prefetch job named */
    CHECK(put("cached", "pinned", 500, old, 0) == 0);
    json_t *spec = json_pack("{s:s, s:s, s:b, s:[s]}", "provider", "shoal", "bucket", "cached",
                             "pin", 1, "names", "pinned");
    char *rec = pin_record(spec, wall_ns());
    CHECK(rec != NULL);
    pin_add("job1", rec);
    c = census();
    CHECK(c.pinned == 500 && c.evictable == 0);
    CHECK(pin_drop("job1") == 0);
    c = census();
    CHECK(c.pinned == 0 && c.evictable == 500);
    free(rec);
    json_decref(spec);
    CHECK(fixture_store_close(&t.store, dir) == 0);
    return check_done("test_lru");
}
