/* Unit tests for common/shardplan.c: samples laid out in shards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archidx.h"
#include "check.h"
#include "shardplan.h"

static size_t key_of(const char *s)
{
    return shardplan_key(s, strlen(s));
}

static void test_key(void)
{
    CHECK(key_of("train/00017.jpg") == strlen("train/00017"));
    CHECK(key_of("train/00017.seg.png") == strlen("train/00017"));
    CHECK(key_of("a.d/b.jpg") == strlen("a.d/b"));   /* a dot in a folder is not the key's end */
    CHECK(key_of("noext") == 5);
    CHECK(key_of("dir/") == 4);
    CHECK(key_of(".hidden") == 0);
    CHECK(key_of("x/.cls") == 2);
}

static struct shardplan_item item(const char *name, uint64_t size)
{
    return (struct shardplan_item){name, strlen(name), size};
}

/* The name of the plan's k-th laid-out item. */
static const char *at(const struct shardplan *p, const struct shardplan_item *v, size_t k)
{
    return v[p->order[k]].name;
}

static void test_group(void)
{
    /* "a.e", "a.d/b.jpg", "a.z": by bytes the sample "a" is split; by key it is not */
    struct shardplan_item v[] = {item("a.z", 10), item("a.d/b.jpg", 10), item("a.e", 10),
                                 item("c.jpg", 10), item("b.cls", 10), item("b.jpg", 10)};
    struct shardplan p;
    CHECK(shardplan_make(&p, v, 6, ARCHIDX_TAR, 1 << 20, 1000, 0, 0) == 0);
    CHECK(p.n == 6 && p.nshards == 1 && p.samples == 4 && p.ndups == 0);
    const char *want[] = {"a.e", "a.z", "a.d/b.jpg", "b.cls", "b.jpg", "c.jpg"};
    for (size_t k = 0; k < 6; k++)
        CHECK(!strcmp(at(&p, v, k), want[k]));
    CHECK(p.cut[0] == 0 && p.cut[1] == 6);
    shardplan_free(&p);
}

static void test_cut(void)
{
    /* 10 samples of two files of 1000 bytes: 2 x 1536 bytes of tar each */
    char names[20][32];
    struct shardplan_item v[20];
    for (int i = 0; i < 20; i++) {
        snprintf(names[i], sizeof(names[i]), "s/%04d.%s", i / 2, i % 2 ? "cls" : "jpg");
        v[i] = item(names[i], 1000);
    }
    struct shardplan p;
    CHECK(shardplan_make(&p, v, 20, ARCHIDX_TAR, 3 * 3072 - 1, 1000, 0, 0) == 0);
    /* a shard takes samples until it reaches the size: 3 samples, 3, 3, then 1 */
    CHECK(p.nshards == 4 && p.samples == 10);
    CHECK(p.cut[1] == 6 && p.cut[2] == 12 && p.cut[3] == 18 && p.cut[4] == 20);
    for (size_t s = 0; s < p.nshards; s++)   /* never a sample split between shards */
        CHECK(p.cut[s] % 2 == 0);
    shardplan_free(&p);
    /* a sample larger than the size is a shard of its own */
    struct shardplan_item big[] = {item("a.jpg", 5000), item("a.txt", 5000), item("b.jpg", 1)};
    CHECK(shardplan_make(&p, big, 3, ARCHIDX_TAR, 1000, 1000, 0, 0) == 0);
    CHECK(p.nshards == 2 && p.cut[1] == 2 && p.cut[2] == 3);
    shardplan_free(&p);
    CHECK(shardplan_make(&p, big, 0, ARCHIDX_TAR, 1000, 1000, 0, 0) == 0);
    CHECK(p.nshards == 0 && p.n == 0);
    shardplan_free(&p);
    /* a shard holds max_members files at most, samples whole */
    CHECK(shardplan_make(&p, v, 20, ARCHIDX_TAR, 1 << 30, 5, 0, 0) == 0);
    CHECK(p.nshards == 5 && p.cut[1] == 4 && p.cut[5] == 20);
    shardplan_free(&p);
    CHECK(shardplan_make(&p, v, 20, ARCHIDX_TAR, 1 << 30, 1, 0, 0) == 0);
    CHECK(p.nshards == 10 && p.cut[1] == 2);   /* a sample larger than the cap: its own */
    shardplan_free(&p);
}

static void test_shuffle(void)
{
    enum { N = 200 };
    static char names[N][32];
    struct shardplan_item v[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "%05d.%s", i / 2, i % 2 ? "b" : "a");
        v[i] = item(names[i], 100);
    }
    struct shardplan a, b, c;
    CHECK(shardplan_make(&a, v, N, ARCHIDX_TAR, 1 << 30, 1000, 1, 42) == 0);
    CHECK(shardplan_make(&b, v, N, ARCHIDX_TAR, 1 << 30, 1000, 1, 42) == 0);
    CHECK(shardplan_make(&c, v, N, ARCHIDX_TAR, 1 << 30, 1000, 1, 43) == 0);
    CHECK(a.n == N && !memcmp(a.order, b.order, N * sizeof(*a.order)));   /* same seed */
    CHECK(memcmp(a.order, c.order, N * sizeof(*a.order)) != 0);           /* another */
    int moved = 0, seen[N] = {0};
    for (int k = 0; k < N; k += 2) {
        /* a sample's files stay together and in name order */
        CHECK(a.order[k] % 2 == 0 && a.order[k + 1] == a.order[k] + 1);
        moved += a.order[k] != (uint32_t)k;
    }
    for (int k = 0; k < N; k++)
        seen[a.order[k]]++;
    int once = 1;
    for (int k = 0; k < N; k++)
        once &= seen[k] == 1;
    CHECK(once);
    CHECK(moved > N / 4);
    shardplan_free(&a);
    shardplan_free(&b);
    shardplan_free(&c);
}

static void test_dups(void)
{
    struct shardplan_item v[] = {item("x.jpg", 1), item("y.jpg", 2), item("x.jpg", 3)};
    struct shardplan p;
    CHECK(shardplan_make(&p, v, 3, ARCHIDX_ZIP, 100, 1000, 0, 0) == 0);
    CHECK(p.n == 2 && p.ndups == 1 && p.dups[0] == 2);
    CHECK(p.order[0] == 0 && p.order[1] == 1);   /* the first x.jpg stays */
    shardplan_free(&p);
}

static void test_bytes(void)
{
    CHECK(shardplan_member_bytes(ARCHIDX_TAR, 10, 0) == 512);
    CHECK(shardplan_member_bytes(ARCHIDX_TAR, 10, 1) == 1024);
    CHECK(shardplan_member_bytes(ARCHIDX_TAR, 10, 512) == 1024);
    CHECK(shardplan_member_bytes(ARCHIDX_TAR, 200, 512) > 1024);
    CHECK(shardplan_member_bytes(ARCHIDX_ZIP, 10, 100) > 100);
}

int main(void)
{
    test_key();
    test_group();
    test_cut();
    test_shuffle();
    test_dups();
    test_bytes();
    return check_done("test_shardplan");
}
