/* Unit tests for common/listpage.c (compact listing pages) and the JSON
 * string writer the native listing renders names with (common/util.c). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "listpage.h"
#include "util.h"

static struct listpage_ent ent(const char *name, const char *etag, const char *owner,
                               uint64_t size)
{
    struct listpage_ent e = {name, strlen(name), etag, strlen(etag), owner, strlen(owner), size,
                          0x0123456789abcdefULL, 7, 1700000000123456789ULL};
    return e;
}

static int parses(const char *p, size_t n)
{
    struct listpage pg;
    char err[128];
    int rc = listpage_parse(p, n, &pg, err, sizeof(err));
    if (rc == 0)
        listpage_free(&pg);
    return rc == 0;
}

static void test_round_trip(void)
{
    struct gbuf b = {0};
    listpage_begin(&b, 0);
    /* in byte order, as a target writes them */
    const char *names[] = {"a", "nl\nand\ttab", "q\"\\", "with space", "\xc3\xbc\xe6\x97\xa5"};
    for (int i = 0; i < 5; i++) {
        struct listpage_ent e = ent(names[i], i % 2 ? "\"md5\"" : "", i == 2 ? "alice" : "",
                                    (uint64_t)i * 1000);
        listpage_add(&b, &e);
    }
    listpage_set_more(&b, 1);
    struct listpage pg;
    char err[128];
    CHECK(listpage_parse(b.p, b.n, &pg, err, sizeof(err)) == 0);
    CHECK(pg.n == 5 && pg.more == 1);
    for (size_t i = 0; i < pg.n && i < 5; i++) {
        CHECK(pg.v[i].nlen == strlen(names[i]) && !memcmp(pg.v[i].name, names[i], pg.v[i].nlen));
        CHECK(pg.v[i].size == i * 1000 && pg.v[i].version == 7);
        CHECK(pg.v[i].cksum == 0x0123456789abcdefULL && pg.v[i].mtime_ns == 1700000000123456789ULL);
        CHECK(pg.v[i].elen == (i % 2 ? 5u : 0u));
        CHECK(i == 2 ? pg.v[i].olen == 5 && !memcmp(pg.v[i].owner, "alice", 5)
                     : pg.v[i].olen == 0);
    }
    listpage_free(&pg);
    listpage_set_more(&b, 0);
    CHECK(listpage_parse(b.p, b.n, &pg, err, sizeof(err)) == 0 && pg.more == 0);
    listpage_free(&pg);
    /* a cut page parses only where it ends after the head or an entry:
     * the head and the first four entries, each a shorter page */
    int accepted = 0;
    for (size_t n = 0; n < b.n; n++)
        if (parses(b.p, n)) {
            accepted++;
            CHECK(b.p[n - 1] == '\n');
        }
    CHECK(accepted == 5);
    gbuf_free(&b);
}

static void test_refused(void)
{
    const char *bad[] = {
        "",
        "SL3 0\n",
        "SL1 2\n",
        "SL2 0\n1 0123456789abcdef 1 1 0 1\na\n",       /* no owner length */
        "SL2 0\n1 0123456789abcdef 1 1 0 1 2\nab\n",    /* owner cut short */
        "SL2 0\n1 0123456789abcdef 1 1 0 1 128\n",      /* owner over the limit */
        "SL1 0\n1 0123456789abcdef 1 1 0 1 0\na\n",     /* an owner in the old format */
        "SL1 0",
        "SL1 0\nx",
        "SL1 0\n1 0123456789abcdef 1 1 0 1\nab\n",        /* name longer than said */
        "SL1 0\n1 0123456789abcdef 1 1 0 2\na\n",         /* shorter */
        "SL1 0\n1 0123456789ABCDEF 1 1 0 1\na\n",         /* upper-case hex */
        "SL1 0\n1 0123456789abcde 1 1 0 1\na\n",          /* 15 hex digits */
        "SL1 0\n-1 0123456789abcdef 1 1 0 1\na\n",        /* sign */
        "SL1 0\n1 0123456789abcdef 1 1 0 0\n\n",          /* empty name */
        "SL1 0\n1 0123456789abcdef 1 1 0 1025\n",         /* name over the limit */
        "SL1 0\n1 0123456789abcdef 1 1 129 1\n",          /* etag over the limit */
        "SL1 0\n99999999999999999999 0123456789abcdef 1 1 0 1\na\n", /* overflow */
        "SL1 0\n1  0123456789abcdef 1 1 0 1\na\n",        /* empty field */
        "SL1 0\n1 0123456789abcdef 1 1 0 1\na",           /* no newline */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(!parses(bad[i], strlen(bad[i])));
    const char order[] = "SL1 0\n1 0123456789abcdef 1 1 0 1\nb\n1 0123456789abcdef 1 1 0 1\na\n";
    CHECK(!parses(order, sizeof(order) - 1));          /* names out of order */
    const char twice[] = "SL1 0\n1 0123456789abcdef 1 1 0 1\na\n1 0123456789abcdef 1 1 0 1\na\n";
    CHECK(!parses(twice, sizeof(twice) - 1));          /* a name twice */
    const char nul[] = "SL1 0\n1 0123456789abcdef 1 1 0 3\na\0b\n";
    CHECK(!parses(nul, sizeof(nul) - 1));
    const char ok[] = "SL1 1\n1 0123456789abcdef 1 1 0 3\na b\n";
    CHECK(parses(ok, sizeof(ok) - 1));
    const char ok2[] = "SL2 0\n1 0123456789abcdef 1 1 0 1 3\nabob\n";
    CHECK(parses(ok2, sizeof(ok2) - 1));
    const char onul[] = "SL2 0\n1 0123456789abcdef 1 1 0 1 3\nab\0b\n";
    CHECK(!parses(onul, sizeof(onul) - 1));            /* NUL in an owner */
}

static void test_name_cmp(void)
{
    CHECK(listpage_name_cmp("a", 1, "b", 1) < 0);
    CHECK(listpage_name_cmp("ab", 2, "a", 1) > 0);
    CHECK(listpage_name_cmp("a", 1, "a", 1) == 0);
    CHECK(listpage_name_cmp("\xc3", 1, "z", 1) > 0); /* bytes compare unsigned */
}

static void test_json_str(void)
{
    struct gbuf b = {0};
    const char in[] = "q\"b\\c\x01\n\x1f\x7f\xc3\xbc/";
    gbuf_json_str(&b, in, sizeof(in) - 1);
    CHECK(!strcmp(b.p, "\"q\\\"b\\\\c\\u0001\\u000a\\u001f\x7f\xc3\xbc/\""));
    gbuf_free(&b);
    gbuf_json_str(&b, "", 0);
    CHECK(!strcmp(b.p, "\"\""));
    gbuf_free(&b);
}

int main(void)
{
    test_round_trip();
    test_refused();
    test_name_cmp();
    test_json_str();
    return check_done("test_lpage");
}
