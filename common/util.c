/*
 * util: the small helpers every module needs. Allocation failure of control
 * structures is decided once, here: the process aborts, because a daemon that
 * cannot allocate a few hundred bytes cannot do anything useful either.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void oom(void)
{
    static const char msg[] = "shoal: out of memory\n";
    ssize_t r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom();
    return q;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom();
    char *p = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void gbuf_add(struct gbuf *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        while (b->n + n + 1 > b->cap)
            b->cap = b->cap ? b->cap * 2 : 256;
        b->p = xrealloc(b->p, b->cap);
    }
    if (n) /* p may be NULL for nothing (an empty gbuf's contents) */
        memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void gbuf_str(struct gbuf *b, const char *s)
{
    gbuf_add(b, s, strlen(s));
}

static void gbuf_vstrs(struct gbuf *b, va_list ap)
{
    for (const char *a = va_arg(ap, const char *); a; a = va_arg(ap, const char *))
        gbuf_str(b, a);
}

void gbuf_strs(struct gbuf *b, ...)
{
    va_list ap;
    va_start(ap, b);
    gbuf_vstrs(b, ap);
    va_end(ap);
}

char *xstrcat(const char *s, ...)
{
    struct gbuf b = {0};
    gbuf_str(&b, s);
    va_list ap;
    va_start(ap, s);
    gbuf_vstrs(&b, ap);
    va_end(ap);
    return gbuf_take(&b);
}

size_t fmt_u64(char *out, uint64_t v)
{
    char d[20], *e = d + sizeof(d), *q = e;
    do
        *--q = (char)('0' + v % 10);
    while (v /= 10);
    memcpy(out, q, (size_t)(e - q));
    return (size_t)(e - q);
}

size_t fmt_i64(char *out, int64_t v)
{
    if (v >= 0)
        return fmt_u64(out, (uint64_t)v);
    out[0] = '-';
    return 1 + fmt_u64(out + 1, 0 - (uint64_t)v);
}

void gbuf_i64(struct gbuf *b, int64_t v)
{
    char d[20];
    gbuf_add(b, d, fmt_i64(d, v));
}

void gbuf_json_str(struct gbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    gbuf_add(b, "\"", 1);
    size_t run = 0;              /* start of what is not written yet */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        gbuf_add(b, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        if (c < 0x20) {
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            gbuf_add(b, esc, 6);
        } else {
            gbuf_add(b, esc, 2);
        }
    }
    gbuf_add(b, s + run, n - run);
    gbuf_add(b, "\"", 1);
}

char *gbuf_take(struct gbuf *b)
{
    char *p = b->p ? b->p : xstrdup("");
    memset(b, 0, sizeof(*b));
    return p;
}

void gbuf_free(struct gbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

int parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int parse_i64(const char *s, size_t n, int64_t *out)
{
    int neg = n > 0 && s[0] == '-';
    uint64_t v;
    int rc = parse_u64(s + neg, n - (size_t)neg, &v);
    if (rc)
        return rc;
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
        return -ERANGE;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void rand_bytes(void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            abort(); /* the kernel always has entropy for getrandom(0) */
        }
        p += r;
        n -= (size_t)r;
    }
}

void hex_encode(const void *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *p = in;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

char *file_read(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                free(buf);
                close(fd);
                errno = EFBIG;
                return NULL;
            }
            cap *= 2;
            buf = xrealloc(buf, cap + 1);
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(buf);
            close(fd);
            errno = e;
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int fsync_dir_of(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) ? -errno : 0;
    close(fd);
    return rc;
}

int fsync_dir_at(int dfd, const char *rel)
{
    const char *slash = strrchr(rel, '/');
    if (!slash)
        return fsync(dfd) ? -errno : 0;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
    int fd = openat(dfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) ? -errno : 0;
    close(fd);
    return rc;
}

int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    char *b = buf;
    while (n > 0) {
        ssize_t r = pread(fd, b, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO;
        b += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
    const char *b = buf;
    while (n > 0) {
        ssize_t w = pwrite(fd, b, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        b += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int file_write_atomic(const char *path, const void *data, size_t len, int sync)
{
    char tmp[PATH_MAX];
    uint32_t r;
    rand_bytes(&r, sizeof(r));
    if (snprintf(tmp, sizeof(tmp), "%s.tmp%08x", path, r) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    const char *p = data;
    size_t left = len;
    int rc = 0;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    if (!rc && sync && fsync(fd))
        rc = -errno;
    if (close(fd) && !rc)
        rc = -errno;
    if (!rc && rename(tmp, path))
        rc = -errno;
    if (rc) {
        unlink(tmp);
        return rc;
    }
    return sync ? fsync_dir_of(path) : 0;
}

int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, mode) && errno != EEXIST)
            return -errno;
        buf[i] = c;
    }
    return 0;
}

char *id_file_load(const char *path, const char *prefix, size_t nbytes, int *rc)
{
    size_t len;
    char *s = file_read(path, 256, &len);
    if (s) {
        while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
            s[--len] = '\0';
        return s;
    }
    uint8_t r[32];
    char hex[65];
    if (nbytes > sizeof(r))
        nbytes = sizeof(r);
    rand_bytes(r, nbytes);
    hex_encode(r, nbytes, hex);
    char *id = xasprintf("%s%s", prefix, hex);
    char *line = xasprintf("%s\n", id);
    *rc = file_write_atomic(path, line, strlen(line), 1);
    free(line);
    if (*rc) {
        free(id);
        return NULL;
    }
    return id;
}

size_t utf8_valid_prefix(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len;
        unsigned min, cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, min = 0x80, cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, min = 0x800, cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, min = 0x10000, cp = c & 0x07;
        } else {
            return i;
        }
        if (n - i < len)
            return i;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return i;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += len;
    }
    return n;
}

char *utf8_printable(const char *s)
{
    size_t n = strlen(s);
    struct gbuf b = {0};
    while (n > 0) {
        size_t ok = utf8_valid_prefix(s, n);
        gbuf_add(&b, s, ok);
        if (ok == n)
            break;
        char esc[5];
        snprintf(esc, sizeof(esc), "\\x%02X", (unsigned char)s[ok]);
        gbuf_add(&b, esc, 4);
        s += ok + 1;
        n -= ok + 1;
    }
    gbuf_add(&b, "", 1);
    return gbuf_take(&b);
}
