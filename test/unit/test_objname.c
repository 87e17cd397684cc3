/* objname: names are checked before anything is stored: UTF-8 (RFC 3629),
 * length, NUL, dot segments; error messages can show any input. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "objname.h"
#include "util.h"

static int valid(const char *s, size_t n)
{
    char err[256];
    return objname_valid(s, n, err, sizeof(err)) == 0;
}

#define V(lit) valid(lit, sizeof(lit) - 1)

int main(void)
{
    CHECK(V("a"));
    CHECK(V("dir/file.txt"));
    CHECK(V("caf\xc3\xa9"));                      /* é */
    CHECK(V("\xe2\x82\xac"));                     /* € */
    CHECK(V("\xf0\x9f\x90\x9f"));                 /* 🐟 */
    CHECK(V("\xef\xbf\xbf"));                     /* U+FFFF is a code point */
    CHECK(!V("x\xffy"));                          /* the reported name */
    CHECK(!V("\x80"));                            /* a lone continuation byte */
    CHECK(!V("\xc3"));                            /* cut short */
    CHECK(!V("\xc0\xaf"));                        /* overlong '/' */
    CHECK(!V("\xe0\x80\xaf"));                    /* overlong, three bytes */
    CHECK(!V("\xed\xa0\x80"));                    /* a surrogate */
    CHECK(!V("\xf4\x90\x80\x80"));                /* past U+10FFFF */
    CHECK(!V("\xf8\x88\x80\x80\x80"));            /* five bytes */
    CHECK(!V("a\0b"));
    CHECK(!V(""));
    CHECK(!V("a/../b"));
    CHECK(!V("./a"));

    char err[256];
    CHECK(objname_valid("x\xffy", 3, err, sizeof(err)) == -1 && strstr(err, "UTF-8") &&
          strstr(err, "0xFF"));

    struct objname on;
    CHECK(objname_parse("bkt/x\xffy", 8, &on, err, sizeof(err)) == -1);
    CHECK(objname_parse("b\xffkt/x", 7, &on, err, sizeof(err)) == -1);
    CHECK(utf8_valid_prefix(err, strlen(err)) == strlen(err)); /* printable */
    CHECK(strstr(err, "\\xFF") != NULL);
    CHECK(objname_parse("bkt/d/e", 7, &on, err, sizeof(err)) == 0 &&
          !strcmp(on.bucket, "bkt") && on.name_len == 3);

    /* the byte that names kept versions: internal requests only */
    CHECK(objname_valid("a\x01" "0123456789abcdef", 18, err, sizeof(err)) == -1 &&
          strstr(err, "0x01"));
    CHECK(objname_parse("bkt/a\x01v", 7, &on, err, sizeof(err)) == -1);
    CHECK(objname_parse_internal("bkt/a\x01v", 7, &on, err, sizeof(err)) == 0 &&
          on.name_len == 3);
    CHECK(objname_parse_internal("bkt/a/../b", 10, &on, err, sizeof(err)) == -1);
    CHECK(objname_base_len("a/b\x01" "ffff", 8) == 3);
    CHECK(objname_base_len("a/b", 3) == 3);
    CHECK(objname_base_len("\x01", 1) == 0);

    char *p = utf8_printable("ok \xc3\xa9 \xff\xfe end");
    CHECK(!strcmp(p, "ok \xc3\xa9 \\xFF\\xFE end"));
    free(p);
    CHECK(utf8_valid_prefix("ab\xc3", 3) == 2);
    return check_done("test_objname");
}
