/* The write-back queue's order (writeback.h), on a real store: each write of an
 * object leaves one record ("P" or "D" and a sequence number that only
 * grows, across objects and calls); a newer write replaces the record,
 * so an upload that read the older one settles nothing (the object stays
 * owed) and only the upload of the latest clears it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "writeback.h"

static struct target t;          /* large: not on the stack */

/* Write n bytes as mkey's new version, with its write-back record. */
static int write_back(const char *mkey, size_t kl, size_t n)
{
    struct store_mp *mp = store_place(&t.store, mkey, kl);
    char work[4096], *body = xcalloc(1, n);
    struct objmeta *m = xcalloc(1, sizeof(*m));
    int fd = store_work_open(mp, &m->uid, work, sizeof(work));
    int rc = fd < 0 || write(fd, body, n) != (ssize_t)n ? -EIO : 0;
    m->size = n;
    if (!rc)
        rc = writeback_commit(&t, mp, mkey, kl, work, fd, m, NULL);
    free(m);
    free(body);
    return rc;
}

/* mkey's record as it is now (a new string), or NULL. */
static char *record_of(const char *mkey, size_t kl)
{
    char *w = store_side_key('w', mkey, kl), *v = NULL, *out = NULL;
    size_t vl;
    if (store_kv_get(&t.store, store_pick(&t.store, mkey, kl), w, kl, &v, &vl) == 0)
        out = xstrndup(v, vl);
    free(v);
    free(w);
    return out;
}

/* What an upload does once the backend took the version it read. */
static int settle(const char *mkey, size_t kl, const char *read)
{
    char *w = store_side_key('w', mkey, kl);
    int rc = store_kv_del_if(&t.store, store_pick(&t.store, mkey, kl), w, kl, read, strlen(read));
    free(w);
    return rc;
}

static unsigned long long seq_of(const char *rec)
{
    return rec && strlen(rec) > 2 ? strtoull(rec + 2, NULL, 10) : 0;
}

int main(void)
{
    char dir[] = "/tmp/shoal-wbq-XXXXXX";
    CHECK(fixture_store_open(&t.store, dir) == 0);
    size_t ka, kb;
    char *a = store_mkey("shoal", "wb", "a", 1, &ka), *b = store_mkey("shoal", "wb", "b", 1, &kb);

    CHECK(!writeback_owed(&t.store, a, ka));
    CHECK(write_back(a, ka, 100) == 0);
    char *first = record_of(a, ka);
    CHECK(first && first[0] == 'P' && seq_of(first) > 0 && writeback_owed(&t.store, a, ka));
    CHECK(write_back(b, kb, 10) == 0);
    char *other = record_of(b, kb);
    CHECK(seq_of(other) > seq_of(first));          /* across objects too */

    /* a newer write of a: an upload of the first version settles nothing */
    CHECK(write_back(a, ka, 200) == 0);
    char *second = record_of(a, ka);
    CHECK(second && seq_of(second) > seq_of(other));
    CHECK(settle(a, ka, first) == -ESTALE && writeback_owed(&t.store, a, ka));
    CHECK(settle(a, ka, second) == 0 && !writeback_owed(&t.store, a, ka));
    CHECK(settle(b, kb, other) == 0 && !writeback_owed(&t.store, b, kb));

    /* a DELETE's record, and numbers that only grow over many calls */
    struct store_x x;
    char buf[WRITEBACK_VAL_MAX];
    writeback_record(&t, &x, a, ka, 1, buf);
    CHECK(buf[0] == 'D' && seq_of(buf) > seq_of(second) && x.key_len == ka && x.key[0] == 'w');
    unsigned long long last = seq_of(buf);
    int grows = 1;
    for (int i = 0; i < 10000; i++) {
        free((char *)x.key);
        writeback_record(&t, &x, b, kb, i & 1, buf);
        grows &= seq_of(buf) > last;
        last = seq_of(buf);
    }
    CHECK(grows);
    free((char *)x.key);
    free(first);
    free(other);
    free(second);
    free(a);
    free(b);
    CHECK(fixture_store_close(&t.store, dir) == 0);
    return check_done("test_wbq");
}
