#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "objname.h"
#include "objmeta.h"
#include "http.h"

int main(void)
{
    struct objmeta m = {.size = 123456789012ULL, .cksum = 0xdeadbeefcafef00dULL, .version = 7,
                      .mtime_ns = 1700000000123456789ULL, .uid = 42, .flags = 0x80000001u};
    strcpy(m.backend_etag, "\"abc-3\"");
    char buf[OBJMETA_MAX + 8];
    size_t n = objmeta_encode(&m, buf);
    struct objmeta d;
    CHECK(objmeta_decode(buf, n, &d) == 0);
    CHECK(d.size == m.size && d.cksum == m.cksum && d.version == 7 &&
          d.mtime_ns == m.mtime_ns && d.uid == 42 && d.flags == m.flags &&
          !strcmp(d.backend_etag, "\"abc-3\""));
    /* every truncation is refused, never read past the end */
    for (size_t i = 0; i < n; i++)
        if (i != 45) /* 45 bytes is a whole record without the optional etag */
            CHECK(objmeta_decode(buf, i, &d) == -EINVAL);
    buf[0] = 9;
    CHECK(objmeta_decode(buf, n, &d) == -EINVAL);
    buf[0] = 1;
    /* unknown optional fields are skipped */
    char ext[OBJMETA_MAX + 16];
    memcpy(ext, buf, n);
    ext[n] = 77, ext[n + 1] = 2, ext[n + 2] = 0, ext[n + 3] = 'x', ext[n + 4] = 'y';
    CHECK(objmeta_decode(ext, n + 5, &d) == 0 && d.version == 7);

    /* the S3 fields: ETag, Content-Type, user metadata with NULs inside */
    strcpy(m.etag, "\"0123456789abcdef0123456789abcdef-2\"");
    strcpy(m.ctype, "text/plain; charset=utf-8");
    memcpy(m.umeta, "k1\0v1\0color\0blue\0", 18);
    m.umeta_len = 18;
    n = objmeta_encode(&m, buf);
    CHECK(n <= OBJMETA_MAX);
    CHECK(objmeta_decode(buf, n, &d) == 0 && !strcmp(d.etag, m.etag) &&
          !strcmp(d.ctype, m.ctype) && d.umeta_len == 18 && !memcmp(d.umeta, m.umeta, 18) &&
          !strcmp(d.backend_etag, "\"abc-3\""));
    /* the largest record fits OBJMETA_MAX */
    memset(m.etag, 'e', OBJMETA_ETAG_MAX), m.etag[OBJMETA_ETAG_MAX] = '\0';
    memset(m.backend_etag, 'b', OBJMETA_ETAG_MAX), m.backend_etag[OBJMETA_ETAG_MAX] = '\0';
    memset(m.ctype, 'c', OBJMETA_CTYPE_MAX), m.ctype[OBJMETA_CTYPE_MAX] = '\0';
    memset(m.umeta, 'u', OBJMETA_UMETA_MAX), m.umeta_len = OBJMETA_UMETA_MAX;
    n = objmeta_encode(&m, buf);
    CHECK(n <= OBJMETA_MAX && objmeta_decode(buf, n, &d) == 0 && d.umeta_len == OBJMETA_UMETA_MAX);
    for (size_t i = n - 5; i < n; i++)
        CHECK(objmeta_decode(buf, i, &d) == -EINVAL);

    /* a slice's record: the code, its index, its own length and checksum */
    m.ec.d = 16, m.ec.p = 8, m.ec.idx = 23, m.ec.len = 0x123456789aULL, m.ec.cksum = 99;
    memset(m.tags, 't', OBJMETA_TAGS_MAX), m.tags_len = OBJMETA_TAGS_MAX;
    n = objmeta_encode(&m, buf);
    CHECK(n <= OBJMETA_MAX && objmeta_decode(buf, n, &d) == 0);
    CHECK(d.ec.d == 16 && d.ec.p == 8 && d.ec.idx == 23 && d.ec.len == 0x123456789aULL &&
          d.ec.cksum == 99 && d.size == m.size);
    for (size_t i = n - OBJMETA_EC_LEN - 2; i < n; i++)
        CHECK(objmeta_decode(buf, i, &d) == -EINVAL);
    buf[n - OBJMETA_EC_LEN + 2] = 24;    /* an index past d + p */
    CHECK(objmeta_decode(buf, n, &d) == -EINVAL);
    buf[n - OBJMETA_EC_LEN + 2] = 0, buf[n - OBJMETA_EC_LEN] = 17; /* 17 data slices */
    CHECK(objmeta_decode(buf, n, &d) == -EINVAL);
    buf[n - OBJMETA_EC_LEN] = 16, buf[n - OBJMETA_EC_LEN + 1] = 9; /* 9 parity */
    CHECK(objmeta_decode(buf, n, &d) == -EINVAL);
    buf[n - OBJMETA_EC_LEN + 1] = 8;
    CHECK(objmeta_decode(buf, n, &d) == 0);
    buf[n - OBJMETA_EC_LEN + 2] = 0, buf[n - OBJMETA_EC_LEN] = 0; /* d 0 */
    CHECK(objmeta_decode(buf, n, &d) == -EINVAL);
    m.ec.d = 0;
    n = objmeta_encode(&m, buf);
    CHECK(objmeta_decode(buf, n, &d) == 0 && d.ec.d == 0);
    m.tags_len = 0;

    /* user metadata: names lower-cased, bounded by OBJMETA_UMETA_MAX */
    struct objmeta u = {0};
    CHECK(objmeta_umeta_add(&u, "Color", "Blue") == 0 && u.umeta_len == 11);
    CHECK(!memcmp(u.umeta, "color\0Blue\0", 11));
    char big_v[OBJMETA_UMETA_MAX];
    memset(big_v, 'v', sizeof(big_v) - 5);
    big_v[sizeof(big_v) - 5] = '\0';
    CHECK(objmeta_umeta_add(&u, "k", big_v) == -E2BIG && u.umeta_len == 11);
    /* looked up and dropped by name, the other pairs kept in order */
    CHECK(objmeta_umeta_add(&u, ":acl", "public-read") == 0 && objmeta_umeta_add(&u, "e", "") == 0);
    CHECK(!strcmp(objmeta_umeta_get(&u, ":acl"), "public-read") &&
          !strcmp(objmeta_umeta_get(&u, "e"), "") && !objmeta_umeta_get(&u, "colo"));
    objmeta_umeta_del(&u, ":acl");
    CHECK(!objmeta_umeta_get(&u, ":acl") && u.umeta_len == 14 &&
          !memcmp(u.umeta, "color\0Blue\0e\0\0", 14));
    objmeta_umeta_del(&u, "missing");
    CHECK(u.umeta_len == 14);

    /* object names */
    char err[128];
    CHECK(objname_valid("a/b/c.tar", 9, err, sizeof(err)) == 0);
    CHECK(objname_valid("", 0, err, sizeof(err)) == -1);
    CHECK(objname_valid("a/../b", 6, err, sizeof(err)) == -1);
    CHECK(objname_valid("..", 2, err, sizeof(err)) == -1);
    CHECK(objname_valid("a/.", 3, err, sizeof(err)) == -1);
    CHECK(objname_valid("a..b/.c", 7, err, sizeof(err)) == 0);
    CHECK(objname_valid("a\0b", 3, err, sizeof(err)) == -1);
    char big[1100];
    memset(big, 'n', sizeof(big));
    CHECK(objname_valid(big, 1024, err, sizeof(err)) == 0);
    CHECK(objname_valid(big, 1025, err, sizeof(err)) == -1);
    struct objname on;
    CHECK(objname_parse("bkt/x/y", 7, &on, err, sizeof(err)) == 0 &&
          !strcmp(on.bucket, "bkt") && on.name_len == 3);
    CHECK(objname_parse("bkt", 3, &on, err, sizeof(err)) == -1);
    CHECK(objname_parse("b k/x", 5, &on, err, sizeof(err)) == -1);

    /* percent coding */
    char out[32];
    CHECK(http_pct_decode("a%20b%2F", 8, out) == 4 && !memcmp(out, "a b/", 4));
    CHECK(http_pct_decode("bad%2", 5, out) == -1 && http_pct_decode("%zz", 3, out) == -1);
    char *e = http_pct_encode("a b/c", 5, 1);
    CHECK(!strcmp(e, "a%20b/c"));
    free(e);
    return check_done("test_ometa");
}
