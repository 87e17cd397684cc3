/*
 * archidx: what an archive object (a shard) holds, read with libarchive:
 * its kind by the name's extension, the index of its members, and the
 * index's encoding for the record kept beside the object.
 *
 * Kinds: .tar (plain), .tar.gz / .tgz, .tar.lz4, .zip. For a plain tar
 * and a zip's stored members, the index gives each member's data offset
 * in the file, so a read of one member reads only its bytes; a member of
 * a compressed archive (or a zip's deflated one) is marked ARCHIDX_SEQ and
 * is read by decompressing up to it.
 *
 * Refused, with a message for a 400 (the archive is the client's bytes):
 * a file that is not an archive of its extension, truncated headers,
 * sizes past the end, a member name longer than ARCHIDX_NAME_MAX or with
 * a ".." component or a leading '/', more than ARCHIDX_MEMBERS_MAX
 * members, and a compressed archive that decompresses to more than
 * ARCHIDX_RATIO_MAX times its size (a bomb). Memory and time are bounded
 * by those limits and the archive's size.
 *
 * Names are kept as the archive spells them less a leading "./"; only
 * regular files are members (directories, links and devices are not).
 * A name that appears twice is its first member, in the index as in a
 * sequential read (a tar's appended update is not what a read gives).
 *
 * Thread: any; an index is read-only once built.
 */
#ifndef SHOAL_ARCHIDX_H
#define SHOAL_ARCHIDX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum archidx_kind { ARCHIDX_NONE = 0, ARCHIDX_TAR, ARCHIDX_TGZ, ARCHIDX_TLZ4, ARCHIDX_ZIP };

#define ARCHIDX_NAME_MAX 4096
#define ARCHIDX_MEMBERS_MAX 1000000
#define ARCHIDX_RATIO_MAX 250u
#define ARCHIDX_SEQ UINT64_MAX   /* a member read by decompressing up to it */

struct archidx_member {
    const char *name;            /* into the index's names */
    uint32_t name_len;
    uint64_t off;                /* its data's offset in the file, or ARCHIDX_SEQ */
    uint64_t size;
};

struct archidx {
    int kind;
    size_t n;                    /* members, sorted by name */
    struct archidx_member *m;
    char *names;                 /* every name, NUL-terminated, back to back */
    size_t names_len;
};

/* A source of the archive's bytes: up to n bytes at off into buf; the
 * count (0 only at the end), or -errno. */
typedef ssize_t (*archidx_pread_fn)(void *arg, void *buf, size_t n, uint64_t off);

/* The kind of an object named name (by its extension), ARCHIDX_NONE. */
int archidx_kind_of(const char *name, size_t len);
const char *archidx_kind_name(int kind);

/* Build x from the size bytes rd reads. 0; -EINVAL with err (the archive
 * is malformed or hostile: a 400); -EIO (or rd's -errno) when it could
 * not be read. x is empty on failure. */
int archidx_build(struct archidx *x, int kind, archidx_pread_fn rd, void *arg, uint64_t size,
                  char *err, size_t errlen);
void archidx_free(struct archidx *x);

/* The member named name, or NULL. */
const struct archidx_member *archidx_find(const struct archidx *x, const char *name, size_t len);

/* The encoding, for the record beside the object: a new buffer of *len
 * bytes. decode: 0, or -EINVAL for bytes that are not one (x empty). */
char *archidx_encode(const struct archidx *x, size_t *len);
int archidx_decode(struct archidx *x, const char *p, size_t len);

/*
 * Sequential reading with libarchive, for what the index cannot point at
 * (a compressed archive's members, a zip's deflated ones, a listing by
 * pattern): open over rd (a zip is read by its central directory and
 * seeks to its members), then next (the next member: 1, 0 at the end, or
 * -EINVAL / -EIO with err) and data (up to n of its bytes: the count, 0
 * at its end, -EINVAL / -EIO). The decompressed bytes are bounded as
 * archidx_build's are. Thread: one at a time, any.
 */
struct archidx_rd;
struct archidx_rd *archidx_rd_open(int kind, archidx_pread_fn rd, void *arg, uint64_t size,
                                   char *err, size_t errlen);
int archidx_rd_next(struct archidx_rd *a, const char **name, size_t *len, uint64_t *size,
                    char *err, size_t errlen);
ssize_t archidx_rd_data(struct archidx_rd *a, void *buf, size_t n, char *err, size_t errlen);
void archidx_rd_close(struct archidx_rd *a);

/*
 * Writing an archive into a buffer, for streams Shoal makes (a batch's
 * answer, the members a pattern selects, a shard): kind ARCHIDX_TAR
 * (pax, for long names), ARCHIDX_TGZ or ARCHIDX_ZIP (stored, streamed
 * with data descriptors). member starts one of size bytes, which data
 * then gives in pieces; close writes the end. The bytes go to out as
 * they are made. 0 or -EIO with
 * err. Thread: one at a time, any.
 */
struct archidx_w;
/* out(arg, p, n): n bytes of the archive, in order */
typedef void (*archidx_out_fn)(void *arg, const void *p, size_t n);
struct archidx_w *archidx_w_open(int kind, archidx_out_fn out, void *arg);
int archidx_w_member(struct archidx_w *w, const char *name, uint64_t size, uint64_t mtime_s,
                     char *err, size_t errlen);
int archidx_w_data(struct archidx_w *w, const void *p, size_t n, char *err, size_t errlen);
int archidx_w_close(struct archidx_w *w, char *err, size_t errlen);
/* Frees w (without an end, unless closed). */
void archidx_w_free(struct archidx_w *w);
const char *archidx_content_type(int kind);

/* Is name (len bytes) a member name the index accepts (see above)? */
int archidx_name_ok(const char *name, size_t len);

#endif
