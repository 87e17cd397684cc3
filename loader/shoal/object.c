/*
 * object: `shoal ls|get|put|rm`, over the native object API
 * (/v1/objects/BUCKET/NAME, which a proxy answers with a 307 to the owning
 * target: conn follows it) and the bucket listing
 * (/v1/buckets/BUCKET/objects, paged with its continuation token).
 *
 * Bodies stream through conn: a GET is written to the file as it arrives
 * (into a temporary file beside it, renamed into place once the whole
 * body came and its length and X-Shoal-Checksum check out, so a failed
 * download never leaves a partial file under the name). A destination
 * that exists and is not a regular file (a device such as /dev/null, a
 * FIFO) is written into directly, as stdout is: renaming over it would
 * replace the device or pipe with a file, /dev/null for the whole machine
 * when run as root. A PUT is read from the file by offset. Stdin that is
 * not a regular file is first spooled to an unlinked temporary file, since
 * a PUT states its length and a redirect may need the body again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmds.h"
#include "conn.h"
#include "out.h"
#include "progress.h"

#define XFER_TIMEOUT_MS (24L * 3600 * 1000)   /* a whole transfer; stalls end sooner (nodeclient) */
#define SPOOL_PIECE (1 << 20)
#define NAME_MAX_LEN 4096

/* "BUCKET/NAME" into bucket and *name (after the first '/', "" when none).
 * 0, or RC_USAGE. */
static int split_obj(const char *s, char *bucket, size_t blen, const char **name)
{
    const char *slash = strchr(s, '/');
    size_t bl = slash ? (size_t)(slash - s) : strlen(s);
    if (bl == 0 || bl >= blen)
        return args_usage_error("'%s' does not start with a bucket name (BUCKET/NAME)", s);
    memcpy(bucket, s, bl);
    bucket[bl] = '\0';
    *name = slash ? slash + 1 : "";
    return 0;
}

/* split_obj for a command that needs a NAME too. */
static int split_named(const char *s, char *bucket, size_t blen, const char **name,
                       const char *cmd)
{
    int rc = split_obj(s, bucket, blen, name);
    if (!rc && !(*name)[0])
        rc = args_usage_error("%s needs BUCKET/NAME, not '%s'", cmd, s);
    return rc;
}

static void object_path(struct gbuf *u, const char *bucket, const char *name, const char *prov)
{
    gbuf_str(u, "/v1/objects/");
    conn_path_add(u, bucket, 0);
    gbuf_add(u, "/", 1);
    conn_path_add(u, name, 1);
    conn_query(u, "provider", prov);
}

/* The last segment of a name or path. */
static const char *base_of(const char *s)
{
    const char *b = strrchr(s, '/');
    return b && b[1] ? b + 1 : s;
}

/* ---- ls ------------------------------------------------------------------------------ */

/* One listing page's objects on stdout; their count and bytes added. */
static void print_page(const struct args *a, const json_t *objs, int64_t *count,
                       uint64_t *bytes)
{
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o) {
        if (a->json) {
            fputs(*count ? ",\n    " : "\n    ", stdout);
            json_dumpf(o, stdout, JSON_COMPACT);
        } else {
            printf("%14lld  %-6s  %s\n", (long long)out_int(o, "size"),
                   json_is_true(json_object_get(o, "cached")) ? "yes" : "no", out_str(o, "name"));
        }
        (*count)++;
        *bytes += (uint64_t)out_int(o, "size");
    }
}

int cmd_ls(const struct args *a)
{
    if (a->npos == 0)
        return cmd_bucket_ls(a);
    char bucket[256];
    const char *prefix;
    uint64_t lim;
    int rc = split_obj(a->pos[0], bucket, sizeof(bucket), &prefix);
    if (rc)
        return rc;
    if (a->limit && (parse_u64(a->limit, strlen(a->limit), &lim) || lim < 1 || lim > 10000))
        return args_usage_error("--limit must be 1..10000, not '%s'", a->limit);
    char *token = NULL;
    int64_t count = 0;
    uint64_t bytes = 0;
    int pages = 0;
    while (rc == RC_OK) {
        struct gbuf u = {0};
        cmd_bucket_path(&u, bucket, "/objects");
        conn_query(&u, "prefix", prefix[0] ? prefix : NULL);
        conn_query(&u, "limit", a->limit);
        conn_query(&u, "token", token);
        conn_query(&u, "provider", a->provider);
        conn_query(&u, "cached", a->cached ? "true" : NULL);
        /* after the first page the JSON document is open: an error then
         * closes it marked incomplete, and is told on stderr only */
        out_json_mode = a->json && pages == 0;
        json_t *j = out_ask("GET", u.p, NULL, "listing the objects", &rc);
        out_json_mode = a->json;
        gbuf_free(&u);
        free(token);
        token = NULL;
        if (!j)
            break;
        if (pages++ == 0)
            fputs(a->json ? "{\n  \"objects\": [" : "          SIZE  CACHED  NAME\n", stdout);
        print_page(a, json_object_get(j, "objects"), &count, &bytes);
        const char *next = out_str(j, "next");
        token = next[0] ? xstrdup(next) : NULL;
        json_decref(j);
        if (!token)
            break;
    }
    free(token);
    if (a->json && (rc == RC_OK || pages > 0))
        printf("\n  ]%s\n}\n", rc ? ",\n  \"incomplete\": true" : "");
    if (!a->json && rc == RC_OK) {
        char sz[32];
        out_size(sz, sizeof(sz), (double)bytes);
        printf("%lld object%s, %s\n", (long long)count, count == 1 ? "" : "s", sz);
    }
    return rc;
}

/* ---- get ------------------------------------------------------------------------------- */

/* Where a GET lands: stdout for "-", else a temporary file beside dest
 * (in dest when it is a directory, under the name's last segment), or
 * dest itself when it is neither a regular file nor missing. */
struct sink {
    int fd;
    char dest[NAME_MAX_LEN];     /* "" for stdout */
    char tmp[NAME_MAX_LEN + 16]; /* "" when written directly */
};

/* Open s->dest itself into s->fd (*direct set) when it exists and is
 * neither a regular file nor a directory; else leave *direct clear for
 * the temporary-file path. 0, or RC_FAIL (told). Opening a FIFO waits
 * for its reader, as any writer does; neither O_CREAT nor O_TRUNC: the
 * node is written as it is. */
static int sink_open_direct(struct sink *s, int *direct)
{
    struct stat st;
    *direct = 0;
    if (stat(s->dest, &st) || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
        return 0;
    s->fd = open(s->dest, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (s->fd < 0)
        return out_fail("cannot write %s: %s", s->dest, strerror(errno));
    /* replaced by a regular file since the stat: that one is renamed over */
    if (!fstat(s->fd, &st) && S_ISREG(st.st_mode)) {
        close(s->fd);
        return 0;
    }
    *direct = 1;
    return 0;
}

static int sink_open(struct sink *s, const char *dest, const char *name)
{
    struct stat st;
    s->dest[0] = s->tmp[0] = '\0';
    if (!strcmp(dest, "-")) {
        s->fd = STDOUT_FILENO;
        return 0;
    }
    if (!stat(dest, &st) && S_ISDIR(st.st_mode))
        snprintf(s->dest, sizeof(s->dest), "%s/%s", dest, base_of(name));
    else
        snprintf(s->dest, sizeof(s->dest), "%s", dest);
    int direct, rc = sink_open_direct(s, &direct);
    if (rc || direct)
        return rc;
    snprintf(s->tmp, sizeof(s->tmp), "%s.shoal-XXXXXX", s->dest);
    s->fd = mkstemp(s->tmp);
    if (s->fd < 0)
        return out_fail("cannot write %s: %s", s->dest, strerror(errno));
    return 0;
}

/* Keep the file (renamed into place, with the mode a new file gets) when
 * ok, else drop it; a destination written directly is only closed (what
 * reached it stays, as on stdout). 0, or RC_FAIL. */
static int sink_close(struct sink *s, int ok)
{
    if (!s->tmp[0]) {
        if (s->dest[0] && close(s->fd) && ok)
            return out_fail("cannot write %s: %s", s->dest, strerror(errno));
        return ok ? 0 : RC_FAIL;
    }
    mode_t um = umask(0);
    umask(um);
    int rc = ok ? 0 : RC_FAIL;
    if (!rc && (fchmod(s->fd, 0666 & ~um) || fsync(s->fd) || rename(s->tmp, s->dest)))
        rc = out_fail("cannot write %s: %s", s->dest, strerror(errno));
    close(s->fd);
    if (rc)
        unlink(s->tmp);
    return rc;
}

/* Is the body whole and as the cluster stored it? 0, or RC_FAIL. */
static int check_body(const struct conn_ans *r, const char *what)
{
    if (r->clen >= 0 && r->got != (uint64_t)r->clen)
        return out_fail("%s: the answer ended after %llu of %lld bytes", what,
                        (unsigned long long)r->got, (long long)r->clen);
    char want[48];
    snprintf(want, sizeof(want), "xxh3-64:%016llx", (unsigned long long)r->xxh3);
    if (r->status == 200 && !strncmp(r->cksum, "xxh3-64:", 8) && strcmp(r->cksum, want))
        return out_fail("%s: the body does not match its checksum (%s, got %s)", what, r->cksum,
                        want + 8);
    return 0;
}

int cmd_get(const struct args *a)
{
    char bucket[256], what[NAME_MAX_LEN + 300];
    const char *name;
    int rc = split_named(a->pos[0], bucket, sizeof(bucket), &name, "get");
    if (rc)
        return rc;
    const char *dest = a->npos > 1 ? a->pos[1] : base_of(name);
    if (a->json && !strcmp(dest, "-"))
        return args_usage_error("--json writes JSON on stdout: give a FILE for the object");
    struct sink s;
    if ((rc = sink_open(&s, dest, name)))
        return rc;
    snprintf(what, sizeof(what), "reading %s/%s", bucket, name);
    struct progress p;
    progress_init(&p, PROGRESS_BYTES, base_of(name), a->quiet);
    struct gbuf u = {0};
    object_path(&u, bucket, name, a->provider);
    struct conn_req q = {.method = "GET", .path = u.p, .sink = 1, .sink_fd = s.fd,
                         .timeout_ms = XFER_TIMEOUT_MS, .prog = &p};
    struct conn_ans r;
    conn_do(&q, &r);
    if (r.sink_errno)
        rc = out_fail("cannot write %s: %s", s.dest[0] ? s.dest : "stdout",
                      strerror(r.sink_errno));
    else if (!(rc = out_check(&r, what)))
        rc = check_body(&r, what);
    progress_end(&p, rc == RC_OK);
    int kept = sink_close(&s, rc == RC_OK);
    if (!rc)
        rc = kept;
    if (!rc && a->json) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:s}", "bucket", bucket, "name", name,
                              "file", s.dest, "size", (json_int_t)r.got, "checksum", r.cksum);
        out_json(j);
        json_decref(j);
    } else if (!rc && s.dest[0]) {
        char sz[32];
        out_size(sz, sizeof(sz), (double)r.got);
        printf("%s/%s -> %s (%s)\n", bucket, name, s.dest, sz);
    }
    conn_ans_free(&r);
    gbuf_free(&u);
    return rc;
}

/* ---- put -------------------------------------------------------------------------------- */

/* Copy what fd has into an unlinked temporary file: its descriptor, or -1
 * (told). *len gets the size. */
static int spool(int fd, int64_t *len)
{
    const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    char path[NAME_MAX_LEN];
    snprintf(path, sizeof(path), "%s/shoal-put-XXXXXX", dir);
    int out = mkstemp(path);
    if (out < 0) {
        out_fail("cannot spool stdin in %s: %s", dir, strerror(errno));
        return -1;
    }
    unlink(path);
    char *buf = xmalloc(SPOOL_PIECE);
    ssize_t n;
    *len = 0;
    while ((n = read(fd, buf, SPOOL_PIECE)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || write(out, buf, (size_t)n) != n) {
            out_fail("cannot spool stdin: %s", strerror(errno));
            close(out);
            out = -1;
            break;
        }
        *len += n;
    }
    free(buf);
    return out;
}

/* The upload's source: src's descriptor (a regular file as it is, anything
 * else spooled) and its length; -1 when it cannot be read (told). */
static int source_open(const char *src, int64_t *len)
{
    int fd = strcmp(src, "-") ? open(src, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        out_fail("cannot read %s: %s", src, strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode)) {
        *len = st.st_size;
        return fd;
    }
    int sp = spool(fd, len);
    if (fd != STDIN_FILENO)
        close(fd);
    return sp;
}

int cmd_put(const struct args *a)
{
    char bucket[256], what[NAME_MAX_LEN + 300];
    const char *src = a->pos[0], *name;
    int rc = split_obj(a->pos[1], bucket, sizeof(bucket), &name);
    if (rc)
        return rc;
    if (!name[0] && !strcmp(src, "-"))
        return args_usage_error("put from stdin needs BUCKET/NAME, not '%s'", a->pos[1]);
    char *full = name[0] && name[strlen(name) - 1] != '/'
                     ? xstrdup(name) : xasprintf("%s%s", name, base_of(src));
    int64_t len;
    int fd = source_open(src, &len);
    if (fd < 0) {
        free(full);
        return RC_FAIL;
    }
    snprintf(what, sizeof(what), "writing %s/%s", bucket, full);
    struct progress p;
    progress_init(&p, PROGRESS_BYTES, base_of(full), a->quiet);
    progress_bytes_total(&p, len);
    struct gbuf u = {0};
    object_path(&u, bucket, full, a->provider);
    struct conn_req q = {.method = "PUT", .path = u.p, .upload = 1, .up_fd = fd, .up_len = len,
                         .timeout_ms = XFER_TIMEOUT_MS, .prog = &p};
    struct conn_ans r;
    conn_do(&q, &r);
    rc = r.status == 0 && r.err[0] && !strncmp(r.err, "cannot read", 11)
             ? out_fail("%s", r.err) : out_check(&r, what);
    progress_end(&p, rc == RC_OK);
    if (!rc && a->json) {
        out_json_answer(&r);
    } else if (!rc) {
        json_t *j = out_parse(&r);
        char sz[32];
        out_size(sz, sizeof(sz), (double)len);
        printf("%s -> %s/%s (%s, version %lld)\n", src, bucket, full, sz,
               (long long)out_int(j, "version"));
        json_decref(j);
    }
    if (fd != STDIN_FILENO)
        close(fd);
    conn_ans_free(&r);
    gbuf_free(&u);
    free(full);
    return rc;
}

/* ---- rm ----------------------------------------------------------------------------------- */

int cmd_rm(const struct args *a)
{
    char bucket[256], what[NAME_MAX_LEN + 300];
    const char *name;
    int rc = split_named(a->pos[0], bucket, sizeof(bucket), &name, "rm");
    if (rc)
        return rc;
    struct gbuf u = {0};
    object_path(&u, bucket, name, a->provider);
    if (a->evict)
        gbuf_str(&u, u.p && strchr(u.p, '?') ? "&evict" : "?evict");
    snprintf(what, sizeof(what), "%s %s/%s", a->evict ? "evicting" : "removing", bucket, name);
    json_t *j = out_ask("DELETE", u.p, NULL, what, &rc);
    gbuf_free(&u);
    if (j && a->json)
        out_json(j);
    else if (j)
        printf("%s %s/%s\n", a->evict ? "evicted" : "removed", bucket, name);
    json_decref(j);
    return rc;
}
