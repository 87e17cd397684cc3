/* Unit tests for common/archidx.c: archive kinds, member indexes (their
 * data offsets must point at the members' bytes), the record's encoding,
 * sequential reads, and the malformed and hostile archives refused. The
 * archives are written here with libarchive, in memory. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "archidx.h"
#include "check.h"
#include "util.h"

struct mem {
    char *p;
    size_t n;
};

static ssize_t mem_pread(void *arg, void *buf, size_t n, uint64_t off)
{
    struct mem *m = arg;
    if (off >= m->n)
        return 0;
    size_t k = m->n - off < n ? m->n - off : n;
    memcpy(buf, m->p + off, k);
    return (ssize_t)k;
}

static la_ssize_t w_write(struct archive *a, void *arg, const void *p, size_t n)
{
    (void)a;
    gbuf_add(arg, p, n);
    return (la_ssize_t)n;
}

struct file {
    const char *name;
    size_t size;
};

/* Member i's bytes: a pattern of its own. */
static void fill(char *p, size_t n, int i)
{
    for (size_t k = 0; k < n; k++)
        p[k] = (char)(k * 7 + (size_t)i * 31 + k / 251);
}

/* An archive of files, in format fmt ("ustar", "pax", "gnutar", "zip",
 * "zipstore") through filter ("", "gzip", "lz4"). */
static struct mem make(const char *fmt, const char *filter, const struct file *f, int n)
{
    struct gbuf b = {0};
    struct archive *a = archive_write_new();
    if (!strcmp(fmt, "zip") || !strcmp(fmt, "zipstore")) {
        archive_write_set_format_zip(a);
        if (!strcmp(fmt, "zipstore"))
            archive_write_set_options(a, "zip:compression=store");
    } else {
        archive_write_set_format_by_name(a, fmt);
    }
    if (!strcmp(filter, "gzip"))
        archive_write_add_filter_gzip(a);
    else if (!strcmp(filter, "lz4"))
        archive_write_add_filter_lz4(a);
    archive_write_set_bytes_in_last_block(a, 1);
    archive_write_open(a, &b, NULL, w_write, NULL);
    for (int i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, f[i].name);
        archive_entry_set_size(e, (la_int64_t)f[i].size);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_write_header(a, e);
        char *d = xmalloc(f[i].size + 1);
        fill(d, f[i].size, i);
        archive_write_data(a, d, f[i].size);
        free(d);
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    struct mem m = {b.p, b.n};
    return m;
}

static const struct file files[] = {
    {"a.jpg", 1000},
    {"./a.cls", 3},
    {"dir/sub/b.jpg", 0},
    {"dir/sub/b.cls", 512},
    {"long/LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL"
     "LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL.bin",
     70000},
};
#define NFILES ((int)ARRAY_LEN(files))

static const char *stripped(const char *n)
{
    return !strncmp(n, "./", 2) ? n + 2 : n;
}

/* Every member is found, with its size, and (direct) its bytes at off. */
static void check_index(const char *fmt, const char *filter, int kind, int direct)
{
    struct mem m = make(fmt, filter, files, NFILES);
    struct archidx x;
    char err[256] = "";
    CHECK(archidx_build(&x, kind, mem_pread, &m, m.n, err, sizeof(err)) == 0);
    if (err[0])
        fprintf(stderr, "%s/%s: %s\n", fmt, filter, err);
    CHECK(x.n == (size_t)NFILES);
    if (x.n != (size_t)NFILES)
        fprintf(stderr, "%s/%s: %zu members\n", fmt, filter, x.n);
    for (int i = 0; i < NFILES; i++) {
        const char *nm = stripped(files[i].name);
        const struct archidx_member *e = archidx_find(&x, nm, strlen(nm));
        CHECK(e && e->size == files[i].size);
        if (!e)
            continue;
        /* small members of a deflating zip may be stored: direct too */
        CHECK(direct ? e->off != ARCHIDX_SEQ : e->off == ARCHIDX_SEQ || files[i].size < 1000);
        if (e->off != ARCHIDX_SEQ) {
            char *want = xmalloc(files[i].size + 1);
            fill(want, files[i].size, i);
            CHECK(e->off + e->size <= m.n && !memcmp(m.p + e->off, want, e->size));
            free(want);
        }
    }
    CHECK(!archidx_find(&x, "nope", 4));
    CHECK(!archidx_find(&x, "a.jp", 4));
    /* the record */
    size_t el;
    char *enc = archidx_encode(&x, &el);
    struct archidx y;
    CHECK(archidx_decode(&y, enc, el) == 0 && y.n == x.n && y.kind == kind);
    for (size_t i = 0; i < y.n && i < x.n; i++)
        CHECK(y.m[i].off == x.m[i].off && y.m[i].size == x.m[i].size &&
              y.m[i].name_len == x.m[i].name_len && !strcmp(y.m[i].name, x.m[i].name));
    archidx_free(&y);
    CHECK(archidx_decode(&y, enc, el - 1) == -EINVAL);
    enc[0] = 'X';
    CHECK(archidx_decode(&y, enc, el) == -EINVAL);
    free(enc);
    archidx_free(&x);
    free(m.p);
}

/* Sequential reading gives every member's bytes in order. */
static void check_seq(const char *fmt, const char *filter, int kind)
{
    struct mem m = make(fmt, filter, files, NFILES);
    char err[256] = "";
    struct archidx_rd *r = archidx_rd_open(kind, mem_pread, &m, m.n, err, sizeof(err));
    CHECK(r != NULL);
    if (!r) {
        free(m.p);
        return;
    }
    int i = 0;
    const char *name;
    size_t len;
    uint64_t size;
    char *buf = xmalloc(100000), *want = xmalloc(100000);
    while (archidx_rd_next(r, &name, &len, &size, err, sizeof(err)) == 1 && i < NFILES) {
        CHECK(len == strlen(stripped(files[i].name)) && !memcmp(name, stripped(files[i].name), len));
        size_t got = 0;
        ssize_t k;
        while ((k = archidx_rd_data(r, buf + got, 100000 - got, err, sizeof(err))) > 0)
            got += (size_t)k;
        fill(want, files[i].size, i);
        CHECK(k == 0 && got == files[i].size && !memcmp(buf, want, got));
        i++;
    }
    CHECK(i == NFILES);
    free(buf);
    free(want);
    archidx_rd_close(r);
    free(m.p);
}

static int refused(const struct mem *m, int kind, const char *want)
{
    struct archidx x;
    char err[256] = "";
    int rc = archidx_build(&x, kind, mem_pread, (void *)m, m->n, err, sizeof(err));
    if (rc != -EINVAL || !strstr(err, want))
        fprintf(stderr, "refused? rc %d err '%s' (want '%s')\n", rc, err, want);
    return rc == -EINVAL && strstr(err, want) != NULL && x.n == 0;
}

static void test_bad(void)
{
    struct mem m = make("ustar", "", files, NFILES);
    /* truncated in a member's data, and in a header */
    struct mem t = {m.p, 1600};
    CHECK(refused(&t, ARCHIDX_TAR, "malformed"));
    t.n = 1024 + 100;
    CHECK(refused(&t, ARCHIDX_TAR, ""));
    /* a size past the end: the first header's size field made huge */
    struct mem big = {xmalloc(m.n), m.n};
    memcpy(big.p, m.p, m.n);
    memcpy(big.p + 124, "77777777777", 11);
    unsigned sum = 0;
    memset(big.p + 148, ' ', 8);
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)big.p[i];
    snprintf(big.p + 148, 8, "%06o", sum);
    CHECK(refused(&big, ARCHIDX_TAR, ""));
    free(big.p);
    /* not its extension's kind: a tar called .zip, a gzip called .tar */
    CHECK(refused(&m, ARCHIDX_ZIP, ""));
    struct mem g = make("ustar", "gzip", files, NFILES);
    CHECK(refused(&g, ARCHIDX_TAR, "not a readable archive"));
    free(g.p);
    /* garbage */
    struct mem junk = {xstrdup("this is not an archive at all, just some words"), 46};
    CHECK(refused(&junk, ARCHIDX_TAR, ""));
    CHECK(refused(&junk, ARCHIDX_TGZ, ""));
    CHECK(refused(&junk, ARCHIDX_ZIP, ""));
    free(junk.p);
    free(m.p);
    /* names: "..", absolute, 64 KiB */
    struct file dot[] = {{"ok", 1}, {"a/../../etc/passwd", 4}};
    struct mem d = make("pax", "", dot, 2);
    CHECK(refused(&d, ARCHIDX_TAR, "not accepted"));
    free(d.p);
    struct file abs[] = {{"/etc/passwd", 4}};
    d = make("pax", "", abs, 1);
    CHECK(refused(&d, ARCHIDX_TAR, "not accepted"));
    free(d.p);
    char *longname = xmalloc(65537);
    memset(longname, 'n', 65536);
    longname[65536] = 0;
    struct file lng[] = {{longname, 10}};
    d = make("pax", "", lng, 1);
    CHECK(refused(&d, ARCHIDX_TAR, "not accepted"));
    free(d.p);
    /* 10,000 levels of directories in one name */
    for (int i = 0; i < 10000; i++)
        memcpy(longname + 2 * i, "a/", 2);
    longname[20000] = 'f';
    longname[20001] = 0;
    lng[0].name = longname;
    d = make("pax", "", lng, 1);
    CHECK(refused(&d, ARCHIDX_TAR, "not accepted"));
    free(d.p);
    free(longname);
    /* a bomb: 64 MiB of zeros in a .tar.gz of some 64 KiB */
    struct file zero[] = {{"zeros", 64u << 20}};
    struct gbuf b = {0};
    struct archive *a = archive_write_new();
    archive_write_set_format_pax(a);
    archive_write_add_filter_gzip(a);
    archive_write_open(a, &b, NULL, w_write, NULL);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, zero[0].name);
    archive_entry_set_size(e, (la_int64_t)zero[0].size);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_write_header(a, e);
    char *z = xcalloc(1, 1u << 20);
    for (int i = 0; i < 64; i++)
        archive_write_data(a, z, 1u << 20);
    free(z);
    archive_entry_free(e);
    archive_write_close(a);
    archive_write_free(a);
    struct mem bomb = {b.p, b.n};
    CHECK(refused(&bomb, ARCHIDX_TGZ, "decompresses to more than"));
    free(bomb.p);
}

static void test_kinds(void)
{
    CHECK(archidx_kind_of("x.tar", 5) == ARCHIDX_TAR);
    CHECK(archidx_kind_of("x.TAR", 5) == ARCHIDX_TAR);
    CHECK(archidx_kind_of("x.tar.gz", 8) == ARCHIDX_TGZ);
    CHECK(archidx_kind_of("x.tgz", 5) == ARCHIDX_TGZ);
    CHECK(archidx_kind_of("x.tar.lz4", 9) == ARCHIDX_TLZ4);
    CHECK(archidx_kind_of("x.zip", 5) == ARCHIDX_ZIP);
    CHECK(archidx_kind_of("x.tar.bz2", 9) == ARCHIDX_NONE);
    CHECK(archidx_kind_of(".tar", 4) == ARCHIDX_NONE);
    CHECK(archidx_kind_of("tar", 3) == ARCHIDX_NONE);
    CHECK(archidx_name_ok("a/b", 3));
    CHECK(!archidx_name_ok("a/../b", 6));
    CHECK(!archidx_name_ok("..", 2));
    CHECK(archidx_name_ok("a..b/..c", 8));
    CHECK(!archidx_name_ok("a\0b", 3));
}

/* The same name twice: the first member is the one found, as a
 * sequential read finds it. */
static void test_dup(void)
{
    struct file dup[] = {{"x", 10}, {"y", 20}, {"x", 30}};
    struct mem m = make("ustar", "", dup, 3);
    struct archidx x;
    char err[256];
    CHECK(archidx_build(&x, ARCHIDX_TAR, mem_pread, &m, m.n, err, sizeof(err)) == 0);
    const struct archidx_member *e = archidx_find(&x, "x", 1);
    CHECK(x.n == 2 && e && e->size == 10);
    archidx_free(&x);
    free(m.p);
}

int main(void)
{
    test_kinds();
    check_index("pax", "", ARCHIDX_TAR, 1);
    check_index("gnutar", "", ARCHIDX_TAR, 1);
    check_index("zipstore", "", ARCHIDX_ZIP, 1);
    check_index("zip", "", ARCHIDX_ZIP, 0);
    check_index("pax", "gzip", ARCHIDX_TGZ, 0);
    check_index("pax", "lz4", ARCHIDX_TLZ4, 0);
    check_seq("pax", "", ARCHIDX_TAR);
    check_seq("gnutar", "gzip", ARCHIDX_TGZ);
    check_seq("pax", "lz4", ARCHIDX_TLZ4);
    check_seq("zip", "", ARCHIDX_ZIP);
    test_dup();
    test_bad();
    return check_done("test_archidx");
}
