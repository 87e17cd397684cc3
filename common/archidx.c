/*
 * archidx: archive kinds, member indexes and sequential reads (see
 * archidx.h), over libarchive.
 *
 * A plain tar's member data offsets come from libarchive's header
 * positions: a member's data ends, padded to 512 bytes, where the next
 * header (or the end-of-archive marker) begins, whatever extension
 * headers (pax, GNU long names) came before it. A zip's stored member's
 * data follows its local header, whose two variable lengths are read
 * from the file. libarchive reads the archive through a pread callback
 * with seeking, so a plain tar's or a zip's index costs its headers, not
 * its data.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archidx.h"
#include "util.h"

#define RD_BUF (64u << 10)
#define NAMES_MAX (64u << 20)    /* every member name together */

int archidx_kind_of(const char *name, size_t len)
{
    static const struct {
        const char *ext;
        int kind;
    } exts[] = {
        {".tar", ARCHIDX_TAR},       {".tar.gz", ARCHIDX_TGZ}, {".tgz", ARCHIDX_TGZ},
        {".tar.lz4", ARCHIDX_TLZ4}, {".zip", ARCHIDX_ZIP},
    };
    for (size_t i = 0; i < ARRAY_LEN(exts); i++) {
        size_t el = strlen(exts[i].ext);
        if (len > el && !strncasecmp(name + len - el, exts[i].ext, el))
            return exts[i].kind;
    }
    return ARCHIDX_NONE;
}

const char *archidx_kind_name(int kind)
{
    switch (kind) {
    case ARCHIDX_TAR: return ".tar";
    case ARCHIDX_TGZ: return ".tar.gz";
    case ARCHIDX_TLZ4: return ".tar.lz4";
    case ARCHIDX_ZIP: return ".zip";
    default: return "none";
    }
}

int archidx_name_ok(const char *name, size_t len)
{
    if (!len || len > ARCHIDX_NAME_MAX || name[0] == '/' || memchr(name, 0, len))
        return 0;
    for (size_t i = 0; i < len;) {
        size_t n = 0;
        while (i + n < len && name[i + n] != '/')
            n++;
        if (n == 2 && name[i] == '.' && name[i + 1] == '.')
            return 0;
        i += n + 1;
    }
    return 1;
}

/* ---- reading through libarchive ---------------------------------------------------- */

struct archidx_rd {
    struct archive *a;
    int kind;
    archidx_pread_fn rd;
    void *arg;
    uint64_t size, pos;          /* the source's size; where the next read starts */
    uint64_t last_pos;           /* where buf's bytes came from */
    size_t last_len;
    uint64_t out_max;            /* decompressed bytes allowed */
    uint64_t out;                /* member bytes read or declared so far */
    int rd_err;                  /* the source's -errno, once it failed */
    char *buf;
};

static la_ssize_t rd_read(struct archive *a, void *arg, const void **out)
{
    struct archidx_rd *r = arg;
    (void)a;
    if (r->pos >= r->size)
        return 0;
    size_t n = r->size - r->pos < RD_BUF ? (size_t)(r->size - r->pos) : RD_BUF;
    ssize_t got = r->rd(r->arg, r->buf, n, r->pos);
    if (got <= 0) {
        r->rd_err = got < 0 ? (int)got : -EIO;
        archive_set_error(a, EIO, "the object cannot be read");
        return -1;
    }
    r->last_pos = r->pos;
    r->last_len = (size_t)got;
    r->pos += (uint64_t)got;
    *out = r->buf;
    return got;
}

static la_int64_t rd_seek(struct archive *a, void *arg, la_int64_t off, int whence)
{
    struct archidx_rd *r = arg;
    (void)a;
    int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)r->pos : (int64_t)r->size;
    int64_t to = base + off;
    if (to < 0)
        return ARCHIVE_FATAL;
    r->pos = (uint64_t)to > r->size ? r->size : (uint64_t)to;
    return (la_int64_t)r->pos;
}

static la_int64_t rd_skip(struct archive *a, void *arg, la_int64_t n)
{
    struct archidx_rd *r = arg;
    (void)a;
    uint64_t left = r->size - r->pos;
    uint64_t k = n < 0 ? 0 : (uint64_t)n > left ? left : (uint64_t)n;
    r->pos += k;
    return (la_int64_t)k;
}

static void set_err(char *err, size_t errlen, const char *what, const char *why)
{
    snprintf(err, errlen, "%s: %s", what, why && *why ? why : "malformed");
}

struct archidx_rd *archidx_rd_open(int kind, archidx_pread_fn rd, void *arg, uint64_t size,
                                   char *err, size_t errlen)
{
    struct archidx_rd *r = xcalloc(1, sizeof(*r));
    r->kind = kind;
    r->rd = rd;
    r->arg = arg;
    r->size = size;
    r->buf = xmalloc(RD_BUF);
    r->out_max = size * ARCHIDX_RATIO_MAX + (1u << 20);
    struct archive *a = r->a = archive_read_new();
    switch (kind) {
    case ARCHIDX_TAR: archive_read_support_format_tar(a); break;
    case ARCHIDX_TGZ:
        archive_read_support_format_tar(a);
        archive_read_support_filter_gzip(a);
        break;
    case ARCHIDX_TLZ4:
        archive_read_support_format_tar(a);
        archive_read_support_filter_lz4(a);
        break;
    case ARCHIDX_ZIP: archive_read_support_format_zip_seekable(a); break;
    default:
        snprintf(err, errlen, "not an archive kind Shoal reads");
        archidx_rd_close(r);
        return NULL;
    }
    archive_read_set_read_callback(a, rd_read);
    archive_read_set_seek_callback(a, rd_seek);
    archive_read_set_skip_callback(a, rd_skip);
    archive_read_set_callback_data(a, r);
    if (archive_read_open1(a) != ARCHIVE_OK) {
        set_err(err, errlen, r->rd_err ? "cannot read the archive" : "not a readable archive",
                archive_error_string(a));
        archidx_rd_close(r);
        return NULL;
    }
    /* a filter the kind does not name (a gzip file called .tar) is not its kind */
    int want = kind == ARCHIDX_TGZ || kind == ARCHIDX_TLZ4 ? 2 : 1;
    if (kind != ARCHIDX_ZIP && archive_filter_count(a) != want) {
        snprintf(err, errlen, "not a %s archive", archidx_kind_name(kind));
        archidx_rd_close(r);
        return NULL;
    }
    return r;
}

void archidx_rd_close(struct archidx_rd *r)
{
    if (!r)
        return;
    archive_read_free(r->a);
    free(r->buf);
    free(r);
}

static int rd_fail(struct archidx_rd *r, char *err, size_t errlen)
{
    set_err(err, errlen, r->rd_err ? "cannot read the archive" : "malformed archive",
            archive_error_string(r->a));
    return r->rd_err ? -EIO : -EINVAL;
}

static int over_ratio(struct archidx_rd *r, char *err, size_t errlen)
{
    uint64_t f = r->kind == ARCHIDX_ZIP ? 0 : (uint64_t)archive_filter_bytes(r->a, 0);
    if (r->kind == ARCHIDX_TAR || (f <= r->out_max && r->out <= r->out_max))
        return 0;
    snprintf(err, errlen, "the archive decompresses to more than %u times its size",
             ARCHIDX_RATIO_MAX);
    return 1;
}

/* The next regular member (1), the end (0), or an error. */
static int next_entry(struct archidx_rd *r, struct archive_entry **e, char *err, size_t errlen)
{
    for (;;) {
        int rc = archive_read_next_header(r->a, e);
        if (rc == ARCHIVE_EOF)
            return 0;
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
            return rd_fail(r, err, errlen);
        if (over_ratio(r, err, errlen))
            return -EINVAL;
        if (archive_entry_filetype(*e) != AE_IFREG)
            continue;
        const char *name = archive_entry_pathname(*e);
        if (!name) {
            snprintf(err, errlen, "malformed archive: a member without a name");
            return -EINVAL;
        }
        return 1;
    }
}

/* A member's name less its leading "./", checked: NULL with err. */
static const char *member_name(const char *name, size_t *len, char *err, size_t errlen)
{
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    *len = strlen(name);
    if (!archidx_name_ok(name, *len)) {
        snprintf(err, errlen, "member name %.*s%s is not accepted (empty, over %d bytes, "
                 "absolute or with a '..')", (int)(*len > 80 ? 80 : *len), name,
                 *len > 80 ? "..." : "", ARCHIDX_NAME_MAX);
        return NULL;
    }
    return name;
}

int archidx_rd_next(struct archidx_rd *r, const char **name, size_t *len, uint64_t *size,
                    char *err, size_t errlen)
{
    struct archive_entry *e;
    int rc = next_entry(r, &e, err, errlen);
    if (rc <= 0)
        return rc;
    if (!(*name = member_name(archive_entry_pathname(e), len, err, errlen)))
        return -EINVAL;
    *size = archive_entry_size_is_set(e) ? (uint64_t)archive_entry_size(e) : 0;
    return 1;
}

ssize_t archidx_rd_data(struct archidx_rd *r, void *buf, size_t n, char *err, size_t errlen)
{
    la_ssize_t got = archive_read_data(r->a, buf, n);
    if (got < 0)
        return rd_fail(r, err, errlen);
    r->out += (uint64_t)got;
    if (over_ratio(r, err, errlen))
        return -EINVAL;
    return got;
}

/* ---- the index ----------------------------------------------------------------------- */

struct build {
    struct archidx_member *m;
    size_t n, cap;
    uint32_t *seq;               /* file order, for "the later member wins" */
    struct gbuf names;
};

static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : al < bl ? -1 : al > bl;
}

/* By name, then file order (which off holds while sorting). */
static int by_name(const void *a, const void *b, void *arg)
{
    const struct archidx_member *x = a, *y = b;
    (void)arg;
    int c = name_cmp(x->name, x->name_len, y->name, y->name_len);
    return c ? c : x->off < y->off ? -1 : x->off > y->off;
}

/* A zip's member's data offset, or ARCHIDX_SEQ: libarchive hands a stored
 * member's first block as a pointer into the read buffer, whose place in
 * the file rd_read knows; the bytes there are compared to be sure. A
 * deflated member's block is libarchive's own buffer. */
static uint64_t zip_data_off(struct archidx_rd *r, uint64_t size)
{
    const void *blk;
    size_t n;
    la_int64_t at;
    if (!size)
        return 0;
    if (archive_read_data_block(r->a, &blk, &n, &at) != ARCHIVE_OK || at != 0 || !n)
        return ARCHIDX_SEQ;
    const char *p = blk;
    if (p < r->buf || p + n > r->buf + r->last_len)
        return ARCHIDX_SEQ;
    uint64_t off = r->last_pos + (uint64_t)(p - r->buf);
    char probe[64];
    size_t k = n < sizeof(probe) ? n : sizeof(probe);
    if (off + size > r->size || r->rd(r->arg, probe, k, off) != (ssize_t)k || memcmp(probe, p, k))
        return ARCHIDX_SEQ;
    return off;
}

static int add_member(struct build *b, const char *name, size_t len, uint64_t off, uint64_t size,
                      char *err, size_t errlen)
{
    if (b->n >= ARCHIDX_MEMBERS_MAX || b->names.n + len + 1 > NAMES_MAX) {
        snprintf(err, errlen, "the archive has more than %d members or %u MiB of names",
                 ARCHIDX_MEMBERS_MAX, NAMES_MAX >> 20);
        return -EINVAL;
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->m = xrealloc(b->m, b->cap * sizeof(*b->m));
    }
    b->m[b->n++] = (struct archidx_member){(const char *)(uintptr_t)b->names.n, (uint32_t)len,
                                           off, size};
    gbuf_add(&b->names, name, len);
    gbuf_add(&b->names, "", 1);
    return 0;
}

/* Walk r's members into b; a plain tar's data offsets as the next
 * header's position tells them. */
static int walk(struct archidx_rd *r, struct build *b, char *err, size_t errlen)
{
    struct archive_entry *e;
    int64_t pend = -1;           /* the last tar member's index, its offset owed */
    int64_t pend_hpos = 0;       /* and its header's position */
    for (;;) {
        int rc = next_entry(r, &e, err, errlen);
        int64_t hpos = archive_read_header_position(r->a);
        if (pend >= 0 && rc >= 0) {
            struct archidx_member *p = &b->m[pend];
            uint64_t padded = (p->size + 511) & ~(uint64_t)511;
            if (hpos < 0 || (uint64_t)hpos < padded || (uint64_t)hpos > r->size) {
                snprintf(err, errlen, "malformed archive: member sizes past the end");
                return -EINVAL;
            }
            p->off = (uint64_t)hpos - padded;
            /* data before the member's own header (a sparse member whose
             * map libarchive reads with its data): read it sequentially */
            if (p->off < (uint64_t)pend_hpos + 512)
                p->off = ARCHIDX_SEQ;
            pend = -1;
        }
        if (rc <= 0)
            return rc;
        size_t len;
        const char *name = member_name(archive_entry_pathname(e), &len, err, errlen);
        if (!name)
            return -EINVAL;
        if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0) {
            snprintf(err, errlen, "malformed archive: member %.80s has no size", name);
            return -EINVAL;
        }
        uint64_t size = (uint64_t)archive_entry_size(e), off = ARCHIDX_SEQ;
        r->out += size;          /* what the members say they hold: a bomb's claim */
        if (over_ratio(r, err, errlen))
            return -EINVAL;
        if (r->kind == ARCHIDX_ZIP)
            off = zip_data_off(r, size);
        if ((rc = add_member(b, name, len, off, size, err, errlen)))
            return rc;
        if (r->kind == ARCHIDX_TAR && !archive_entry_sparse_count(e)) {
            pend = (int64_t)b->n - 1;
            pend_hpos = hpos;
        }
        if (r->kind == ARCHIDX_TAR && size > r->size) {
            snprintf(err, errlen, "malformed archive: member %.80s is past the end", name);
            return -EINVAL;
        }
    }
}

int archidx_build(struct archidx *x, int kind, archidx_pread_fn rd, void *arg, uint64_t size,
                  char *err, size_t errlen)
{
    memset(x, 0, sizeof(*x));
    struct archidx_rd *r = archidx_rd_open(kind, rd, arg, size, err, errlen);
    if (!r)
        return -EINVAL;
    struct build b = {0};
    int rc = walk(r, &b, err, errlen);
    int rd_err = r->rd_err;
    archidx_rd_close(r);
    if (rc < 0) {
        free(b.m);
        gbuf_free(&b.names);
        return rd_err ? rd_err : rc;
    }
    /* sort by name, the file order breaking ties; keep each name's first,
     * the one a sequential read (which stops at the first match) gives */
    uint64_t *offs = xmalloc((b.n ? b.n : 1) * sizeof(*offs));
    for (size_t i = 0; i < b.n; i++) {
        offs[i] = b.m[i].off;
        b.m[i].off = i;
    }
    x->names_len = b.names.n;
    x->names = gbuf_take(&b.names);
    for (size_t i = 0; i < b.n; i++)
        b.m[i].name = x->names + (uintptr_t)b.m[i].name;
    qsort_r(b.m, b.n, sizeof(*b.m), by_name, NULL);
    size_t k = 0;
    for (size_t i = 0; i < b.n; i++) {
        if (i && b.m[i].name_len == b.m[i - 1].name_len &&
            !memcmp(b.m[i].name, b.m[i - 1].name, b.m[i].name_len))
            continue;            /* an earlier member of the same name came */
        b.m[k] = b.m[i];
        b.m[k].off = offs[b.m[i].off];
        k++;
    }
    free(offs);
    x->kind = kind;
    x->n = k;
    x->m = b.m;
    return 0;
}

void archidx_free(struct archidx *x)
{
    free(x->m);
    free(x->names);
    memset(x, 0, sizeof(*x));
}

const struct archidx_member *archidx_find(const struct archidx *x, const char *name, size_t len)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(name, len, x->m[mid].name, x->m[mid].name_len);
        if (!c)
            return &x->m[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* ---- the record: "SXI1", kind, count, then (off, size, name length, name)... ---- */

static void put64(struct gbuf *b, uint64_t v)
{
    unsigned char p[8];
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    gbuf_add(b, p, 8);
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

char *archidx_encode(const struct archidx *x, size_t *len)
{
    struct gbuf b = {0};
    gbuf_add(&b, "SXI1", 4);
    unsigned char k = (unsigned char)x->kind;
    gbuf_add(&b, &k, 1);
    put64(&b, x->n);
    for (size_t i = 0; i < x->n; i++) {
        put64(&b, x->m[i].off);
        put64(&b, x->m[i].size);
        put64(&b, x->m[i].name_len);
        gbuf_add(&b, x->m[i].name, x->m[i].name_len);
    }
    *len = b.n;
    return gbuf_take(&b);
}

int archidx_decode(struct archidx *x, const char *p, size_t len)
{
    memset(x, 0, sizeof(*x));
    const unsigned char *u = (const unsigned char *)p;
    if (len < 13 || memcmp(p, "SXI1", 4) || u[4] < ARCHIDX_TAR || u[4] > ARCHIDX_ZIP)
        return -EINVAL;
    uint64_t n = get64(u + 5);
    if (n > ARCHIDX_MEMBERS_MAX || n > (len - 13) / 24)
        return -EINVAL;
    struct archidx_member *m = xmalloc((n ? n : 1) * sizeof(*m));
    char *names = xmalloc(len);
    size_t at = 13, nl = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t l = at + 24 <= len ? get64(u + at + 16) : UINT64_MAX;
        if (l > ARCHIDX_NAME_MAX || at + 24 + l > len || !archidx_name_ok(p + at + 24, l))
            goto bad;
        m[i].off = get64(u + at);
        m[i].size = get64(u + at + 8);
        memcpy(names + nl, p + at + 24, l);
        names[nl + l] = 0;
        m[i].name = names + nl;
        m[i].name_len = (uint32_t)l;
        nl += l + 1;
        at += 24 + l;
        if (i && name_cmp(m[i - 1].name, m[i - 1].name_len, m[i].name, m[i].name_len) >= 0)
            goto bad;            /* not sorted, or a name twice */
    }
    if (at != len)
        goto bad;
    x->kind = u[4];
    x->n = n;
    x->m = m;
    x->names = names;
    x->names_len = nl;
    return 0;
bad:
    free(m);
    free(names);
    return -EINVAL;
}

/* ---- writing ------------------------------------------------------------------------- */

struct archidx_w {
    struct archive *a;
    archidx_out_fn out;
    void *arg;
    int closed;
};

static la_ssize_t w_write(struct archive *a, void *arg, const void *p, size_t n)
{
    struct archidx_w *w = arg;
    (void)a;
    w->out(w->arg, p, n);
    return (la_ssize_t)n;
}

struct archidx_w *archidx_w_open(int kind, archidx_out_fn out, void *arg)
{
    struct archidx_w *w = xcalloc(1, sizeof(*w));
    w->out = out;
    w->arg = arg;
    struct archive *a = w->a = archive_write_new();
    if (kind == ARCHIDX_ZIP) {
        archive_write_set_format_zip(a);
        archive_write_set_options(a, "zip:compression=store");
    } else {
        archive_write_set_format_pax_restricted(a);
    }
    if (kind == ARCHIDX_TGZ)
        archive_write_add_filter_gzip(a);
    archive_write_set_bytes_per_block(a, kind == ARCHIDX_TGZ ? 65536 : 0);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open(a, w, NULL, w_write, NULL) != ARCHIVE_OK) {
        archidx_w_free(w);
        return NULL;
    }
    return w;
}

static int w_fail(struct archidx_w *w, char *err, size_t errlen)
{
    snprintf(err, errlen, "cannot write the archive: %s",
             archive_error_string(w->a) ? archive_error_string(w->a) : "error");
    return -EIO;
}

int archidx_w_member(struct archidx_w *w, const char *name, uint64_t size, uint64_t mtime_s,
                     char *err, size_t errlen)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, (time_t)mtime_s, 0);
    int rc = archive_write_header(w->a, e);
    archive_entry_free(e);
    return rc == ARCHIVE_OK ? 0 : w_fail(w, err, errlen);
}

int archidx_w_data(struct archidx_w *w, const void *p, size_t n, char *err, size_t errlen)
{
    return archive_write_data(w->a, p, n) == (la_ssize_t)n ? 0 : w_fail(w, err, errlen);
}

int archidx_w_close(struct archidx_w *w, char *err, size_t errlen)
{
    w->closed = 1;
    return archive_write_close(w->a) == ARCHIVE_OK ? 0 : w_fail(w, err, errlen);
}

void archidx_w_free(struct archidx_w *w)
{
    if (!w)
        return;
    if (!w->closed)
        archive_write_fail(w->a); /* no end: a cut stream must not look whole */
    archive_write_free(w->a);
    free(w);
}

const char *archidx_content_type(int kind)
{
    return kind == ARCHIDX_ZIP ? "application/zip"
           : kind == ARCHIDX_TGZ ? "application/gzip"
                                 : "application/x-tar";
}
