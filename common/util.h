/*
 * util: allocation wrappers, strict number parsing, clocks, small file
 * helpers. Everything here is thread-safe and free of global state.
 */
#ifndef SHOAL_UTIL_H
#define SHOAL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Small control allocations: out of memory aborts the process. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The strings up to a NULL joined into a new one: xasprintf's "%s%s..."
 * without the formatting, for the paths a request takes every time. */
char *xstrcat(const char *s, ...) __attribute__((sentinel));

/* A growable byte buffer, NUL-terminated after every add. */
struct gbuf {
    char *p;
    size_t n, cap;
};
void gbuf_add(struct gbuf *b, const void *p, size_t n);
void gbuf_str(struct gbuf *b, const char *s);
/* The strings up to a NULL, one after the other. */
void gbuf_strs(struct gbuf *b, ...) __attribute__((sentinel));
/* v in decimal. */
void gbuf_i64(struct gbuf *b, int64_t v);
/* v in decimal into out (at least 20 bytes, no NUL added); its length. */
size_t fmt_i64(char *out, int64_t v);
size_t fmt_u64(char *out, uint64_t v);
/* n bytes of s as a quoted JSON string: '"' and '\\' escaped, control
 * bytes as \u00XX, everything else (UTF-8) as it is. */
void gbuf_json_str(struct gbuf *b, const char *s, size_t n);
/* The contents as a malloc'd string ("" when empty); b is left empty. */
char *gbuf_take(struct gbuf *b);
void gbuf_free(struct gbuf *b);

/* Strict decimal parsing of exactly n bytes: no sign, no spaces, no
 * trailing junk, no overflow. Return 0 or -EINVAL / -ERANGE. */
int parse_u64(const char *s, size_t n, uint64_t *out);
int parse_i64(const char *s, size_t n, int64_t *out);

uint64_t mono_ms(void);          /* monotonic clock, milliseconds */
uint64_t mono_ns(void);          /* monotonic clock, nanoseconds */
uint64_t wall_ns(void);          /* realtime clock, nanoseconds */

void rand_bytes(void *buf, size_t n);
/* Lower-case hex of n bytes into out (2n+1 bytes, NUL-terminated). */
void hex_encode(const void *in, size_t n, char *out);

/* Length of the longest valid UTF-8 prefix of s[0..n) (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF); n when all of it
 * is valid. */
size_t utf8_valid_prefix(const char *s, size_t n);
/* s with every byte that is not part of valid UTF-8 written as "\xHH":
 * a new string, safe to put in JSON or XML. */
char *utf8_printable(const char *s);

/* Read a whole file (at most max bytes); returns a NUL-terminated malloc'd
 * buffer or NULL with errno set. */
char *file_read(const char *path, size_t max, size_t *len);
/* Write through a temporary file (mode 0600: state files may hold
 * secrets) and rename; fsync file and directory when sync is set.
 * Returns 0 or -errno. */
int file_write_atomic(const char *path, const void *data, size_t len, int sync);
/* All n bytes of fd at off into buf: 0, -errno, or -EIO at a short file. */
int pread_full(int fd, void *buf, size_t n, uint64_t off);
/* All n bytes of buf to fd at off: 0 or -errno. */
int pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
/*
 * A persistent identifier kept in a one-line file: the file's content when
 * it exists, else prefix + nbytes random bytes in hex, written (fsync'd)
 * first. Returns a new string, or NULL with *rc = -errno.
 */
char *id_file_load(const char *path, const char *prefix, size_t nbytes, int *rc);
/* mkdir -p; returns 0 or -errno. */
int mkdir_p(const char *path, mode_t mode);
/* fsync the directory containing path (or path itself if dir is set). */
int fsync_dir_of(const char *path);
/* The same for rel, relative to the directory dfd: fsync of the directory
 * holding it (dfd itself when rel has no slash). */
int fsync_dir_at(int dfd, const char *rel);

#endif
