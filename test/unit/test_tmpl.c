/* Unit tests for common/tmpl.c: brace-range name templates. */
#include <string.h>

#include "check.h"
#include "tmpl.h"

/* The i-th name of template s equals want. */
static int name_is(const char *s, uint64_t i, const char *want)
{
    struct tmpl t;
    char err[256], out[256];
    if (tmpl_parse(&t, s, err, sizeof(err)))
        return 0;
    int n = tmpl_name(&t, i, out, sizeof(out));
    tmpl_free(&t);
    return n == (int)strlen(want) && !strcmp(out, want);
}

static uint64_t count_of(const char *s)
{
    struct tmpl t;
    char err[256];
    if (tmpl_parse(&t, s, err, sizeof(err)))
        return 0;
    uint64_t c = t.count;
    tmpl_free(&t);
    return c;
}

static int rejected(const char *s)
{
    struct tmpl t;
    char err[256] = "";
    return tmpl_parse(&t, s, err, sizeof(err)) == -1 && !strncmp(err, "template: ", 10);
}

static void test_ranges(void)
{
    CHECK(count_of("shard-{0000..9999}.tar") == 10000);
    CHECK(name_is("shard-{0000..9999}.tar", 0, "shard-0000.tar"));
    CHECK(name_is("shard-{0000..9999}.tar", 42, "shard-0042.tar"));
    CHECK(name_is("shard-{0000..9999}.tar", 9999, "shard-9999.tar"));
    CHECK(name_is("{1..10}", 9, "10"));
    CHECK(name_is("{1..10}", 0, "1"));           /* no padding without a leading zero */
    CHECK(name_is("{1..010}", 0, "001"));         /* either bound pads to the wider */
    CHECK(count_of("{0..100..10}") == 11);
    CHECK(name_is("{0..100..10}", 10, "100"));
    CHECK(count_of("{0..99..10}") == 10);
    CHECK(name_is("{0..99..10}", 9, "90"));
    CHECK(count_of("{9..0}") == 10);
    CHECK(name_is("{9..0}", 0, "9"));
    CHECK(name_is("{9..0}", 9, "0"));
    CHECK(name_is("{10..0..5}", 2, "0"));
    CHECK(count_of("{5..5}") == 1);
    CHECK(name_is("{5..5}", 0, "5"));
}

static void test_nesting(void)
{
    /* the last range varies fastest */
    CHECK(count_of("d{0..2}/f{00..99}.bin") == 300);
    CHECK(name_is("d{0..2}/f{00..99}.bin", 0, "d0/f00.bin"));
    CHECK(name_is("d{0..2}/f{00..99}.bin", 1, "d0/f01.bin"));
    CHECK(name_is("d{0..2}/f{00..99}.bin", 100, "d1/f00.bin"));
    CHECK(name_is("d{0..2}/f{00..99}.bin", 299, "d2/f99.bin"));
    CHECK(name_is("{0..1}{0..1}{0..1}", 5, "101"));
    CHECK(count_of("plain-name") == 1);
    CHECK(name_is("plain-name", 0, "plain-name"));
    CHECK(count_of("") == 1);

    struct tmpl t;
    char err[256], out[8];
    CHECK(tmpl_parse(&t, "pre/{0..9}x", err, sizeof(err)) == 0);
    CHECK(!strcmp(tmpl_prefix(&t), "pre/"));
    CHECK(tmpl_name(&t, 10, out, sizeof(out)) == -1);   /* past the end */
    CHECK(tmpl_name(&t, 3, out, 6) == -1);              /* "pre/3x" needs 7 bytes */
    CHECK(tmpl_name(&t, 3, out, 7) == 6 && !strcmp(out, "pre/3x"));
    tmpl_free(&t);
}

static void test_bad(void)
{
    CHECK(rejected("a{1..}"));
    CHECK(rejected("a{..3}"));
    CHECK(rejected("a{1..3"));
    CHECK(rejected("a}"));
    CHECK(rejected("a{x..y}"));
    CHECK(rejected("a{1,2,3}"));
    CHECK(rejected("a{-1..3}"));
    CHECK(rejected("a{1..3..0}"));
    CHECK(rejected("a{1..3..}"));
    CHECK(rejected("{1..2 }"));
    CHECK(rejected("{0000000000000000001..2}"));   /* 19 digits */
    CHECK(rejected("{0..9}{0..9}{0..9}{0..9}{0..9}{0..9}{0..9}{0..9}{0..9}"));   /* 9 ranges */
    CHECK(rejected("{0..999999}{0..9999}"));       /* 10^10 names */
    CHECK(count_of("{0..99999}{0..9999}") == 1000000000ULL);
    CHECK(name_is("{0..99999}{0..9999}", 999999999ULL, "999999999"));
}

/* Does template s match name? */
static int matches(const char *s, const char *name)
{
    struct tmpl t;
    char err[256];
    if (tmpl_parse(&t, s, err, sizeof(err)))
        return -1;
    int m = tmpl_match(&t, name, strlen(name));
    tmpl_free(&t);
    return m;
}

static void test_match(void)
{
    CHECK(matches("shard-{0000..9999}.tar", "shard-0042.tar") == 1);
    CHECK(matches("shard-{0000..9999}.tar", "shard-42.tar") == 0);       /* not padded */
    CHECK(matches("shard-{0000..9999}.tar", "shard-00042.tar") == 0);
    CHECK(matches("shard-{0000..9999}.tar", "shard-0042.tar.x") == 0);
    CHECK(matches("f{0..100..10}", "f30") == 1);
    CHECK(matches("f{0..100..10}", "f35") == 0);                          /* off the step */
    CHECK(matches("f{0..100..10}", "f110") == 0);                         /* past the end */
    CHECK(matches("f{0..100..10}", "f030") == 0);                         /* a leading zero */
    CHECK(matches("f{9..0}", "f0") == 1 && matches("f{9..0}", "f10") == 0);
    CHECK(matches("d{0..9}/f{00..99}", "d3/f07") == 1);
    CHECK(matches("d{0..9}/f{00..99}", "d3/f7") == 0);
    /* adjacent ranges: every split of the digits is tried */
    CHECK(matches("{1..12}{1..12}", "112") == 1);                         /* 1,12 or 11,2 */
    CHECK(matches("{1..12}{1..12}", "1313") == 0);
    CHECK(matches("a{0..5}", "a") == 0 && matches("a{0..5}", "") == 0);
    CHECK(matches("plain", "plain") == 1 && matches("plain", "plai") == 0);
    /* every name a template makes matches it, and only those */
    const char *tmpls[] = {"x{0..20..3}y{07..11}", "{9..1..2}-{0..2}", "n{000..120..7}"};
    for (size_t k = 0; k < sizeof(tmpls) / sizeof(tmpls[0]); k++) {
        struct tmpl t;
        char err[256], out[64];
        CHECK(tmpl_parse(&t, tmpls[k], err, sizeof(err)) == 0);
        for (uint64_t i = 0; i < t.count; i++) {
            int n = tmpl_name(&t, i, out, sizeof(out));
            CHECK(n > 0 && tmpl_match(&t, out, (size_t)n) == 1);
        }
        tmpl_free(&t);
    }
    /* a long run of digits against many adjacent ranges stays quick */
    char digits[1001];
    memset(digits, '1', 1000);
    digits[1000] = '\0';
    CHECK(matches("{1..11}{1..11}{1..11}{1..11}{1..11}{1..11}{1..11}{1..11}", digits) == 0);
}

int main(void)
{
    test_match();
    test_ranges();
    test_nesting();
    test_bad();
    return check_done("test_tmpl");
}
