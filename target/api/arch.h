/*
 * arch: reading inside archive objects (shards) on GET (arch.c).
 *
 *   ?archpath=NAME          one member's bytes (Range within it), its ETag
 *   ?archlist               the members, with sizes, as JSON
 *   ?archregx=RE[&archmode=regexp|prefix|suffix|wdskey]
 *                           every matching member, as a .tar stream
 *
 * The object's kind is its name's extension (archidx.h). A plain tar's
 * and a zip's stored members are read by their offsets, from an index
 * built on the first such read and kept beside the object's record (the
 * 'x' side key, with the data file's uid: a new version does not use an
 * old index) and in memory; the rest is read sequentially on the I/O
 * pool, in turns, with backpressure. Every byte read is checked against
 * the object's sums first (GET_VERIFY), as a plain GET's are.
 */
#ifndef SHOAL_TARGET_ARCH_H
#define SHOAL_TARGET_ARCH_H

#include <stddef.h>
#include <stdint.h>

struct http_req;
struct objmeta;
struct target;

/* Does r ask for something inside the object? */
int arch_asked(const struct http_req *r);

/* Answer r from the archive object mkey: its record m and data file fd
 * (taken), cache and flags as get_local's. On r's worker. */
void arch_serve(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, const struct objmeta *m, int fd, int flags);

/* Where member path of the archive mkey (record m, data file fd) is:
 * 0 with its data's offset in the file (ARCHIDX_SEQ: read only by
 * decompressing) and size; -ENOENT (no such member), -EINVAL (not an
 * archive, malformed: err), or damage (-EUCLEAN, -EIO). Builds and keeps
 * the index as a read does. Blocks: the I/O pool. */
int arch_locate(struct target *t, const char *mkey, size_t klen, const struct objmeta *m, int fd,
                int verify, const char *path, uint64_t *off, uint64_t *size, char *err,
                size_t errlen);

/* The side key of mkey's index record (store_side_key 'x'). */
#define ARCH_SIDE_KIND 'x'

#endif
