#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "nativelist.h"

/* A native listing page as a proxy answers it: a held object (mtime),
 * one listed from a backend (last_modified), another cluster's fields
 * this reader does not use. */
static const char *page =
    "{\"objects\":[{\"name\":\"a/1 & 2\",\"size\":12,\"checksum\":\"00000000deadbeef\","
    "\"version\":3,\"mtime\":1764547200123000000,\"etag\":\"\\\"abc\\\"\",\"cached\":true},"
    "{\"name\":\"a/\\u1234\",\"size\":0,\"last_modified\":\"2026-01-01T00:00:00.000Z\","
    "\"etag\":\"\\\"d\\\"\",\"cached\":false,\"dirty\":true}],\"next\":\"a/\\u1234\"}";

static void good(void)
{
    struct s3list l;
    char err[256];
    CHECK(nativelist_parse(page, strlen(page), &l, err, sizeof(err)) == 0);
    CHECK(l.n == 2 && !strcmp(l.objs[0].key, "a/1 & 2") && l.objs[0].size == 12 &&
          !strcmp(l.objs[0].etag, "\"abc\"") &&
          !strcmp(l.objs[0].last_modified, "2025-12-01T00:00:00.123Z"));
    CHECK(l.n == 2 && !strcmp(l.objs[1].key, "a/\xe1\x88\xb4") && l.objs[1].size == 0 &&
          !strcmp(l.objs[1].last_modified, "2026-01-01T00:00:00.000Z"));
    CHECK(l.truncated && l.next_token && !strcmp(l.next_token, "a/\xe1\x88\xb4"));
    s3list_free(&l);
    const char *last = "{\"objects\":[],\"next\":\"\"}";
    CHECK(nativelist_parse(last, strlen(last), &l, err, sizeof(err)) == 0);
    CHECK(l.n == 0 && !l.truncated && !l.next_token);
    s3list_free(&l);
}

static void bad(void)
{
    struct s3list l;
    char err[256];
    const char *bad[] = {
        "",
        "{\"objects\":[{\"name\":\"x\",\"size\":1}",                 /* truncated */
        "{\"error\":\"access denied\",\"status\":403}",              /* not a page */
        "{\"objects\":[{\"size\":1}],\"next\":\"\"}",
        "{\"objects\":[{\"name\":\"\",\"size\":1}],\"next\":\"\"}",
        "{\"objects\":[{\"name\":\"x\",\"size\":-1}],\"next\":\"\"}",
        "{\"objects\":[{\"name\":\"x\",\"size\":\"1\"}],\"next\":\"\"}",
        "{\"objects\":[{\"name\":\"x\\u0000y\",\"size\":1}],\"next\":\"\"}",
        "{\"objects\":[{\"name\":\"x\",\"size\":1}],\"next\":7}",
        "{\"objects\":[],\"next\":\"\",\"complete\":false,\"absent_targets\":[\"t1\"]}",
        "{\"objects\":{},\"next\":\"\"}",
        "[1,2]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        CHECK(nativelist_parse(bad[i], strlen(bad[i]), &l, err, sizeof(err)) == -1 && err[0]);
        CHECK(l.n == 0 && l.objs == NULL && !l.next_token);
    }
    char out[64];
    const char *e = "{\"error\":\"bucket 'x' not found\",\"status\":404}";
    nativelist_err(e, strlen(e), out, sizeof(out));
    CHECK(!strcmp(out, "bucket 'x' not found"));
    nativelist_err(e, 10, out, sizeof(out));               /* cut short: nothing */
    CHECK(out[0] == '\0');
    nativelist_err("<Error/>", 8, out, sizeof(out));
    CHECK(out[0] == '\0');
}

int main(void)
{
    good();
    bad();
    return check_done("test_nativelist");
}
