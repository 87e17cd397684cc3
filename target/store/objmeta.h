/*
 * objmeta: an object's metadata record as stored in a mountpath's RocksDB.
 *
 * Encoding (little-endian): a format byte (1), then size, checksum
 * (xxh3-64 of the whole object), version, mtime (ns), uid (names this version's data file) as
 * u64 each, flags as u32, then optional fields as (tag u8, len u16, bytes)
 * so later fields can be added without rewriting old records. Unknown tags
 * are skipped on decode. A small object's bytes may be kept with its
 * record, with no data file (OBJMETA_F_INLINE): in RocksDB under a key of
 * their own (store.c), so that scans of records do not read them, and in
 * an encoding that carries them (objmeta_encode_full) as tag 8, exactly
 * size bytes.
 */
#ifndef SHOAL_OBJMETA_H
#define SHOAL_OBJMETA_H

#include <stddef.h>
#include <stdint.h>

#define OBJMETA_ETAG_MAX 128
#define OBJMETA_CTYPE_MAX 255
#define OBJMETA_UMETA_MAX 16384   /* user metadata (S3's limit: 2 KiB) and the kept headers */
#define OBJMETA_TAGS_MAX 15380    /* S3's 10 tags, as UTF-8 (s3tag.h: S3TAG_OBJECT_BYTES) */

/* kept with a versioned bucket's objects (store.h): the S3 version id,
 * and, on a delete marker, "true" */
#define OBJMETA_VID ":vid"
#define OBJMETA_DELETE_MARKER ":dm"
/* kept with an object whose owner is not its bucket's (s3own.h): the
 * owner's access key, which listings show */
#define OBJMETA_OWNER ":owner"

/* per-block checksums (bsum.h): at most this many, tag 7 */
#define OBJMETA_BS_MAX 1024

/* a record's own bytes (tag 8): at most this many */
#define OBJMETA_INLINE_MAX (32u << 10)

/* flags */
#define OBJMETA_F_DAMAGED 0x1u   /* a scrub found its bytes wrong, with no other copy:
                                  * never served (500), kept for an operator */
#define OBJMETA_F_INLINE 0x2u    /* its bytes are inl, in the record: no data file */

struct objmeta {
    uint64_t size;
    uint64_t cksum;
    uint64_t version;
    uint64_t mtime_ns;
    uint64_t uid;
    uint32_t flags;
    char backend_etag[OBJMETA_ETAG_MAX + 1]; /* "" when none (tag 1) */
    char etag[OBJMETA_ETAG_MAX + 1];        /* S3 ETag, quoted; "" when none (tag 2) */
    char ctype[OBJMETA_CTYPE_MAX + 1];      /* Content-Type; "" when none (tag 3) */
    /* user metadata (x-amz-meta-*): "name\0value\0" pairs, names lower
     * case without the prefix; and the standard headers S3 keeps with an
     * object (Cache-Control...), named ":" + the lower-case header name,
     * which no x-amz-meta- name can be (tag 4) */
    char umeta[OBJMETA_UMETA_MAX];
    size_t umeta_len;
    /* S3 tags: "key\0value\0" pairs (tag 5) */
    char tags[OBJMETA_TAGS_MAX];
    size_t tags_len;
    /* an erasure-coded slice's record (tag 6): size and checksum are the
     * slice's, the rest (version, ETag, metadata) the object's, with the
     * code, the slice's index and the object's size and checksum; d 0 for
     * an object's record */
    struct {
        uint8_t d, p, idx;
        uint64_t len, cksum;     /* the object's */
    } ec;
    /* per-block checksums (tag 7: the level, then the sums): nbs 0 when
     * none are kept (bsum.h) */
    uint8_t bs_level;
    uint16_t nbs;
    uint64_t bs[OBJMETA_BS_MAX];
    /* the object's bytes, size of them, when OBJMETA_F_INLINE is set and
     * inl_loaded says they are here (decoded with the record, or read by
     * store_get) */
    int inl_loaded;
    char inl[OBJMETA_INLINE_MAX];
};

/* Encode into buf (at least OBJMETA_MAX bytes); returns the length. */
#define OBJMETA_EC_LEN 19
#define OBJMETA_EC_DATA_MAX 16    /* a slice's code: at most 16 data, 8 parity */
#define OBJMETA_EC_PARITY_MAX 8
#define OBJMETA_MAX                                                                        \
    (1 + 5 * 8 + 4 + 7 * 3 + 2 * OBJMETA_ETAG_MAX + OBJMETA_CTYPE_MAX + OBJMETA_UMETA_MAX + \
     OBJMETA_TAGS_MAX + OBJMETA_EC_LEN + 1 + 8 * OBJMETA_BS_MAX + 3 + OBJMETA_INLINE_MAX)
size_t objmeta_encode(const struct objmeta *m, char *buf);
/* The record with an inline version's bytes (tag 8, when loaded). */
size_t objmeta_encode_full(const struct objmeta *m, char *buf);
/* The record without its bytes (nor OBJMETA_F_INLINE): what travels
 * ahead of an object's body to another node, which keeps them its way. */
size_t objmeta_encode_meta(const struct objmeta *m, char *buf);
/* Is m's data in m->inl? */
static inline int objmeta_inline(const struct objmeta *m)
{
    return (m->flags & OBJMETA_F_INLINE) != 0;
}
/* The ETag clients see, quoted: the S3 one, else the backend's, else the
 * xxh3 checksum in hex. */
void objmeta_etag(const struct objmeta *m, char *out, size_t n);
/* Append user metadata (the name lower-cased); 0, or -E2BIG when it does
 * not fit OBJMETA_UMETA_MAX. */
int objmeta_umeta_add(struct objmeta *m, const char *name, const char *value);
/* The value of the metadata pair named name (as stored: lower case), or
 * NULL; objmeta_umeta_del drops every pair so named. */
const char *objmeta_umeta_get(const struct objmeta *m, const char *name);
void objmeta_umeta_del(struct objmeta *m, const char *name);
/* Replace the tags with len bytes of pairs; 0, or -E2BIG. */
int objmeta_tags_set(struct objmeta *m, const char *pairs, size_t len);
/* Returns 0, or -EINVAL for a truncated or unknown-format record. */
int objmeta_decode(const char *buf, size_t len, struct objmeta *m);

#endif
