/*
 * batch: `shoal batch`, many objects (or members of shards) in one
 * archive, over the proxy's GetBatch API (POST /v1/batch, which a proxy
 * answers with a 307 to the target that assembles the batch; conn follows
 * it with the same method and body, which the redirect's signature covers).
 *
 * The list is read and checked whole before anything is sent: one entry a
 * line, a JSON object as the API takes it or BUCKET/NAME[<TAB>ARCHPATH].
 * Each entry goes through the cluster's own parser of requests
 * (common/batchreq.h), so what the client lets through is what the
 * cluster takes, and a refusal names its line rather than an index.
 *
 * The answer is an archive that streams (chunked) and may break off: once
 * its first bytes went out the status is sent, so an entry that fails
 * later (without --continue-on-error) cuts the connection, and the body
 * never gets its last chunk. Nothing complete-looking is left behind such
 * a break: -o FILE is written as FILE.partial and renamed only once the
 * body ended as it should; -x DIR keeps the archive whole in an unlinked
 * file in DIR first (on the destination's filesystem, which needs the
 * space anyway, not a /tmp that may be memory) and extracts it only once
 * it all came. A zip wants that too: its directory is at its end, read by
 * seeking. On stdout, what came is what the reader got; stderr and the
 * exit status say it is incomplete.
 *
 * Extraction is libarchive's, refusing what would write outside DIR:
 * names with "..", absolute names, writes through symbolic links.
 *
 * Thread: the main thread.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batchreq.h"
#include "cmds.h"
#include "conn.h"
#include "out.h"
#include "progress.h"

#define BATCH_TIMEOUT_MS (24L * 3600 * 1000)  /* the whole answer; stalls end sooner */
#define PATH_LEN 4096
#define MSG_MAX 512

/* The entries LIST holds, and the line each came from (the cluster's
 * refusals name entries[i]; people want the line). */
struct blist {
    const char *src;             /* LIST as given, "stdin" for - */
    const char *provider;        /* --provider: for the entries that name none */
    json_t *entries;             /* the entry objects, in order */
    long *lines;
    size_t n, cap;
};

/* Where the archive goes. */
struct dest {
    int fd;                      /* written as the answer comes */
    const char *file;            /* -o FILE; NULL for stdout and for -x */
    char partial[PATH_LEN];      /* FILE.partial, renamed to FILE at the end; "" when FILE
                                  * is a device or FIFO, written as it is */
    const char *dir;             /* -x DIR; fd is then an unlinked file in it */
};

/* ---- the list -------------------------------------------------------------------------- */

/* "shoal: LIST:LINE: <message>" on stderr; RC_USAGE. */
static int line_error(const struct blist *l, long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int line_error(const struct blist *l, long line, const char *fmt, ...)
{
    char msg[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return args_usage_error("%s:%ld: %s", l->src, line, msg);
}

/*
 * Check e, an entry of line, as the cluster will (batchreq_parse on a
 * request of e alone), then take it into l (e's reference with it).
 * 0, or RC_USAGE with the line named (e dropped).
 */
static int add_entry(struct blist *l, long line, json_t *e)
{
    if (l->provider && !json_object_get(e, "provider"))
        json_object_set_new(e, "provider", json_string(l->provider));
    json_t *w = json_pack("{s:[O]}", "entries", e);
    char *body = json_dumps(w, JSON_COMPACT);
    json_decref(w);
    struct batch_req q;
    char err[MSG_MAX] = "the entry cannot be encoded";
    int bad = !body || batchreq_parse(&q, body, strlen(body), err, sizeof(err));
    free(body);
    if (bad) {
        json_decref(e);
        /* "entries[0]: why" or "entries[0] does what": the line instead */
        const char *m = strncmp(err, "entries[0]", 10) ? err : err + 10;
        int colon = m[0] == ':' && m[1] == ' ';
        return line_error(l, line, "%s%s", colon ? "" : m == err ? "" : "the entry",
                          colon ? m + 2 : m);
    }
    batchreq_free(&q);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->lines = xrealloc(l->lines, l->cap * sizeof(*l->lines));
    }
    l->lines[l->n++] = line;
    json_array_append_new(l->entries, e);
    return 0;
}

/* "BUCKET/NAME" or "BUCKET/NAME<TAB>ARCHPATH" (len bytes at s) as an
 * entry object: a new one, or NULL with RC_USAGE told. */
static json_t *plain_entry(const struct blist *l, long line, const char *s, size_t len)
{
    const char *tab = memchr(s, '\t', len);
    size_t nl = tab ? (size_t)(tab - s) : len;
    const char *slash = memchr(s, '/', nl);
    if (!slash || slash == s || slash + 1 == s + nl) {
        line_error(l, line, "'%.*s' is not BUCKET/NAME (nor a JSON entry)", (int)nl, s);
        return NULL;
    }
    const char *ap = tab ? tab + 1 : NULL;
    size_t apl = tab ? len - nl - 1 : 0;
    if (ap && (!apl || memchr(ap, '\t', apl))) {
        line_error(l, line, "after BUCKET/NAME and a TAB comes one ARCHPATH, and nothing else");
        return NULL;
    }
    json_t *b = json_stringn(s, (size_t)(slash - s));
    json_t *n = json_stringn(slash + 1, (size_t)(s + nl - slash - 1));
    json_t *a = ap ? json_stringn(ap, apl) : NULL;
    if (!b || !n || (ap && !a)) {
        json_decref(b);
        json_decref(n);
        json_decref(a);
        line_error(l, line, "the line is not UTF-8");
        return NULL;
    }
    json_t *e = json_object();
    json_object_set_new(e, "bucket", b);
    json_object_set_new(e, "name", n);
    if (a)
        json_object_set_new(e, "archpath", a);
    return e;
}

/* One line of LIST (len bytes at s, its end of line included). 0 (taken,
 * or skipped: blank or a comment), or RC_USAGE told. */
static int parse_line(struct blist *l, long line, const char *s, size_t len)
{
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    size_t sp = 0;
    while (sp < len && (s[sp] == ' ' || s[sp] == '\t'))
        sp++;
    if (sp == len || s[0] == '#')
        return 0;
    if (memchr(s, '\0', len))
        return line_error(l, line, "the line holds a NUL byte");
    json_t *e;
    if (s[sp] == '{') {
        json_error_t je;
        e = json_loadb(s, len, JSON_REJECT_DUPLICATES, &je);
        if (!e)
            return line_error(l, line, "not a JSON entry: %s (column %d)", je.text, je.column);
        if (!json_is_object(e)) {
            json_decref(e);
            return line_error(l, line, "a JSON entry is one object");
        }
    } else if (!(e = plain_entry(l, line, s, len))) {
        return RC_USAGE;
    }
    if (l->n == BATCHREQ_MAX) {
        json_decref(e);
        return line_error(l, line, "a batch has at most %d entries: split the list",
                          (int)BATCHREQ_MAX);
    }
    return add_entry(l, line, e);
}

/* LIST (path; NULL or "-": stdin) into l, checked whole. 0; RC_USAGE for
 * a malformed line or an empty list, RC_FAIL when it cannot be read (both
 * told). */
static int read_list(struct blist *l, const char *path)
{
    int in = !path || !strcmp(path, "-");
    l->src = in ? "stdin" : path;
    FILE *f = in ? stdin : fopen(path, "r");
    if (!f)
        return out_fail("cannot read %s: %s", path, strerror(errno));
    char *s = NULL;
    size_t cap = 0;
    ssize_t n;
    long line = 0;
    int rc = 0;
    while (!rc && (n = getline(&s, &cap, f)) >= 0)
        rc = parse_line(l, ++line, s, (size_t)n);
    if (!rc && ferror(f))
        rc = out_fail("cannot read %s: %s", l->src, strerror(errno));
    if (!rc && !l->n)
        rc = args_usage_error("%s has no entries (one a line: BUCKET/NAME[<TAB>ARCHPATH], or "
                              "a JSON object)", l->src);
    free(s);
    if (!in)
        fclose(f);
    return rc;
}

/* When the cluster's refusal names entries[i], say which line that is. */
static void name_line(const struct blist *l, const struct conn_ans *r)
{
    json_t *j = out_parse(r);
    const char *e = json_string_value(json_object_get(j, "error"));
    const char *at = e ? strstr(e, "entries[") : NULL;
    unsigned long i;
    if (at && sscanf(at, "entries[%lu]", &i) == 1 && i < l->n)
        fprintf(stderr, "shoal: entries[%lu] is %s:%ld\n", i, l->src, l->lines[i]);
    json_decref(j);
}

/* ---- the request ----------------------------------------------------------------------- */

/* The archive's format as the API names it: --output's (with or without
 * its dot), else what -o FILE's name ends with, else .tar. NULL when
 * --output names no format. */
static const char *format_of(const char *opt, const char *file)
{
    static const struct {
        const char *ext, *fmt;
    } fmts[] = {
        {".tar.gz", ".tar.gz"},
        {".tgz", ".tar.gz"},
        {".zip", ".zip"},
        {".tar", ".tar"},
    };
    size_t n = file ? strlen(file) : 0;
    for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
        size_t e = strlen(fmts[k].ext);
        if (opt ? !strcmp(opt, fmts[k].ext) || !strcmp(opt, fmts[k].ext + 1)
                : n > e && !strcmp(file + n - e, fmts[k].ext))
            return fmts[k].fmt;
    }
    return opt ? NULL : ".tar";
}

/* The request's JSON: a new string, or NULL with RC_USAGE told when it
 * would be larger than the cluster takes. */
static char *request_body(const struct args *a, const struct blist *l, const char *fmt)
{
    json_t *j = json_pack("{s:O, s:s, s:b, s:s, s:b}", "entries", l->entries, "output", fmt,
                          "continue_on_error", a->continue_on_error, "names",
                          a->name_only ? "name-only" : "with-bucket", "manifest", a->manifest);
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (body && strlen(body) > BATCHREQ_BODY_MAX) {
        args_usage_error("the request would take %zu MiB, over the %u MiB the cluster takes: "
                         "split the list", strlen(body) >> 20, BATCHREQ_BODY_MAX >> 20);
        free(body);
        return NULL;
    }
    return body;
}

/* ---- where it goes --------------------------------------------------------------------- */

static const char *dest_name(const struct dest *d)
{
    return d->dir ? d->dir : d->file ? d->file : "stdout";
}

/* Open d: stdout, or -o FILE (as FILE.partial; a FILE that exists and is
 * neither a regular file nor a directory, such as /dev/null or a FIFO, as
 * it is: renaming over it would replace it, as object.c's get explains),
 * or -x DIR (made when missing) with an unlinked file in it. 0, or
 * RC_USAGE / RC_FAIL told. */
static int dest_open(struct dest *d, const struct args *a)
{
    struct stat st;
    memset(d, 0, sizeof(*d));
    d->fd = STDOUT_FILENO;
    if (a->extract) {
        d->dir = a->extract;
        char tmp[PATH_LEN];
        int rc = mkdir_p(d->dir, 0777);
        if (rc)
            return out_fail("cannot make %s: %s", d->dir, strerror(-rc));
        if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.shoal-batch-XXXXXX", d->dir) >= sizeof(tmp))
            return out_fail("cannot write in %s: %s", d->dir, strerror(ENAMETOOLONG));
        if ((d->fd = mkstemp(tmp)) < 0)
            return out_fail("cannot write in %s: %s", d->dir, strerror(errno));
        unlink(tmp);
        return 0;
    }
    if (!a->out || !strcmp(a->out, "-"))
        return 0;
    d->file = a->out;
    if (!stat(d->file, &st) && S_ISDIR(st.st_mode))
        return args_usage_error("%s is a directory: -o names the archive's file (-x DIR "
                                "extracts into a directory)", d->file);
    if (!stat(d->file, &st) && !S_ISREG(st.st_mode)) {
        d->fd = open(d->file, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (d->fd < 0)
            return out_fail("cannot write %s: %s", d->file, strerror(errno));
        return 0;
    }
    if ((size_t)snprintf(d->partial, sizeof(d->partial), "%s.partial", d->file) >=
        sizeof(d->partial))
        return out_fail("cannot write %s: %s", d->file, strerror(ENAMETOOLONG));
    unlink(d->partial);          /* an earlier try's: started again, never appended to */
    d->fd = open(d->partial, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666);
    if (d->fd < 0)
        return out_fail("cannot write %s: %s", d->partial, strerror(errno));
    return 0;
}

/* Close d: FILE.partial renamed to FILE when ok, else removed; the
 * extraction's file (gone already) closed. 0, or RC_FAIL. */
static int dest_close(struct dest *d, int ok)
{
    int rc = ok ? 0 : RC_FAIL;
    if (d->fd == STDOUT_FILENO)
        return rc;
    if (d->partial[0] && !rc && fsync(d->fd))
        rc = out_fail("cannot write %s: %s", d->file, strerror(errno));
    if (close(d->fd) && !rc && !d->dir)
        rc = out_fail("cannot write %s: %s", d->file, strerror(errno));
    if (d->partial[0] && !rc && rename(d->partial, d->file))
        rc = out_fail("cannot write %s: %s", d->file, strerror(errno));
    if (rc && d->partial[0])
        unlink(d->partial);
    d->fd = -1;
    return rc;
}

/* ---- the answer ------------------------------------------------------------------------- */

/* Send body and write the answer's archive to d. RC_OK once it came
 * whole, else the exit status (told). r is the caller's to free. */
static int fetch(const struct args *a, const struct blist *l, const char *body,
                 const struct dest *d, struct conn_ans *r)
{
    struct progress p;
    progress_init(&p, PROGRESS_BYTES, "batch", a->quiet);
    struct conn_req q = {.method = "POST", .path = "/v1/batch", .body = body,
                         .len = strlen(body), .sink = 1, .sink_fd = d->fd,
                         .timeout_ms = BATCH_TIMEOUT_MS, .prog = &p};
    conn_do(&q, r);
    int ok = r->status >= 200 && r->status < 300;
    int whole = ok && !r->sink_errno && (r->clen < 0 || r->got == (uint64_t)r->clen);
    progress_end(&p, whole);
    const char *kept = d->partial[0] || d->dir ? "nothing was kept"
                       : d->file             ? "what went to it is cut short"
                                             : "what went to stdout is cut short";
    char got[32];
    out_size(got, sizeof(got), (double)r->got);
    if (r->sink_errno)
        return out_fail("cannot write %s: %s", dest_name(d), strerror(r->sink_errno));
    if (r->status == 0 && r->head >= 200 && r->head < 300)
        return out_fail("the archive broke off after %s (%s): the cluster could not finish the "
                        "batch (an entry failed?); %s", got, r->err[0] ? r->err : "no reason",
                        kept);
    int rc = out_check(r, "the batch");
    if (rc) {
        name_line(l, r);
        return rc;
    }
    if (!whole)
        return out_fail("the archive ended after %llu of %lld bytes; %s",
                        (unsigned long long)r->got, (long long)r->clen, kept);
    return RC_OK;
}

/* The data of the member in is at, to out (at its offsets: sparse files
 * stay sparse). ARCHIVE_OK, or the failure (a warning while reading is
 * one: the member may be short) with *which the side whose error string
 * says why. */
static int copy_member(struct archive *in, struct archive *out, struct archive **which)
{
    for (;;) {
        const void *buf;
        size_t n;
        la_int64_t off;
        int r = archive_read_data_block(in, &buf, &n, &off);
        if (r == ARCHIVE_EOF)
            return ARCHIVE_OK;
        if (r < ARCHIVE_OK) {
            *which = in;
            return r == ARCHIVE_WARN ? ARCHIVE_FAILED : r;
        }
        la_ssize_t w = archive_write_data_block(out, buf, n, off);
        if (w < ARCHIVE_WARN) {
            *which = out;
            return (int)w;
        }
    }
}

/*
 * Extract the archive in fd (whole; read from its start) into dir, the
 * process's working directory meanwhile (libarchive's checks take names
 * as relative to it). A member that cannot be written is told and the
 * others go on; *members counts those extracted. Warnings are told and
 * are no failure. RC_OK, or RC_FAIL when a member could not be
 * extracted (or the archive cannot be read).
 */
static int extract(int fd, const char *dir, int64_t *members)
{
    int back = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (back < 0 || lseek(fd, 0, SEEK_SET) != 0 || chdir(dir)) {
        int e = errno;
        if (back >= 0)
            close(back);
        return out_fail("cannot extract into %s: %s", dir, strerror(e));
    }
    struct archive *in = archive_read_new(), *out = archive_write_disk_new();
    archive_read_support_filter_gzip(in);
    archive_read_support_format_tar(in);
    archive_read_support_format_zip(in);
    archive_write_disk_set_options(out, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                            ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                            ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
    int64_t failed = 0;
    int fatal = 0, r = archive_read_open_fd(in, fd, 1 << 16);
    if (r != ARCHIVE_OK) {
        fprintf(stderr, "shoal: cannot read the archive: %s\n", archive_error_string(in));
        fatal = 1;
    }
    while (!fatal) {
        struct archive_entry *e;
        r = archive_read_next_header(in, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            fprintf(stderr, "shoal: cannot read the archive: %s\n", archive_error_string(in));
            fatal = 1;
            break;
        }
        const char *name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "?";
        if (r == ARCHIVE_WARN)
            fprintf(stderr, "shoal: %s: %s\n", name, archive_error_string(in));
        struct archive *which = out;
        if ((r = archive_write_header(out, e)) == ARCHIVE_WARN)
            fprintf(stderr, "shoal: %s: %s\n", name, archive_error_string(out));
        if (r >= ARCHIVE_WARN)
            r = copy_member(in, out, &which);
        if (r >= ARCHIVE_WARN && (r = archive_write_finish_entry(out)) < ARCHIVE_WARN)
            which = out;
        if (r < ARCHIVE_WARN) {
            fprintf(stderr, "shoal: cannot extract %s: %s\n", name,
                    archive_error_string(which) ? archive_error_string(which) : "failed");
            failed++;
            fatal = r == ARCHIVE_FATAL;
            continue;
        }
        (*members)++;
    }
    if (archive_write_close(out) != ARCHIVE_OK && !fatal)   /* directories' times */
        fprintf(stderr, "shoal: extracting into %s: %s\n", dir, archive_error_string(out));
    archive_write_free(out);
    archive_read_free(in);
    if (fchdir(back))
        fprintf(stderr, "shoal: cannot return to the working directory: %s\n", strerror(errno));
    close(back);
    if (fatal)
        return out_fail("extracting into %s stopped after %lld members", dir,
                        (long long)*members);
    if (failed)
        return out_fail("%lld of %lld members could not be extracted into %s", (long long)failed,
                        (long long)(failed + *members), dir);
    return RC_OK;
}

/* ---- the command -------------------------------------------------------------------------- */

/* The one-line summary on stderr, and with --json the figures on stdout. */
static void summary(const struct args *a, const struct blist *l, const struct dest *d,
                    uint64_t got, uint64_t ms, int64_t members)
{
    if (!a->quiet) {
        char sz[32], where[64] = "";
        out_size(sz, sizeof(sz), (double)got);
        if (d->dir)
            snprintf(where, sizeof(where), " (%lld member%s)", (long long)members,
                     members == 1 ? "" : "s");
        fprintf(stderr, "batch: %zu entr%s, %s in %.1f s -> %s%s\n", l->n, l->n == 1 ? "y" : "ies",
                sz, (double)ms / 1000, dest_name(d), where);
    }
    if (!a->json)
        return;
    json_t *j = json_pack("{s:I, s:I, s:I}", "entries", (json_int_t)l->n, "bytes",
                          (json_int_t)got, "ms", (json_int_t)ms);
    if (d->dir) {
        json_object_set_new(j, "dir", json_string(d->dir));
        json_object_set_new(j, "members", json_integer(members));
    } else {
        json_object_set_new(j, "file", json_string(d->file));
    }
    out_json(j);
    json_decref(j);
}

int cmd_batch(const struct args *a)
{
    const char *fmt = format_of(a->format, a->out);
    int to_stdout = !a->extract && (!a->out || !strcmp(a->out, "-"));
    if (a->out && a->extract)
        return args_usage_error("-o FILE writes the archive, -x DIR extracts it: one of them");
    if (!fmt)
        return args_usage_error("--output is .tar, .tar.gz or .zip, not '%s'", a->format);
    if (to_stdout && a->json)
        return args_usage_error("--json writes JSON on stdout: give -o FILE or -x DIR for the "
                                "archive");
    if (to_stdout && isatty(STDOUT_FILENO))
        return args_usage_error("the archive would go to a terminal: give -o FILE or -x DIR "
                                "(or pipe stdout)");
    struct blist l = {.provider = a->provider, .entries = json_array()};
    char *body = NULL;
    int rc = read_list(&l, a->npos ? a->pos[0] : NULL);
    if (!rc && !(body = request_body(a, &l, fmt)))
        rc = RC_USAGE;
    struct dest d = {.fd = -1};
    if (!rc)
        rc = dest_open(&d, a);
    if (rc) {
        free(body);
        json_decref(l.entries);
        free(l.lines);
        return rc;
    }
    uint64_t t0 = mono_ms();
    struct conn_ans r;
    int64_t members = 0;
    rc = fetch(a, &l, body, &d, &r);
    if (!rc && d.dir)
        rc = extract(d.fd, d.dir, &members);
    int kept = dest_close(&d, rc == RC_OK);
    if (!rc)
        rc = kept;
    if (!rc)
        summary(a, &l, &d, r.got, mono_ms() - t0, members);
    conn_ans_free(&r);
    free(body);
    json_decref(l.entries);
    free(l.lines);
    return rc;
}
