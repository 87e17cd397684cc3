/*
 * listpage: the compact page a target answers a listing with, and its reader
 * on the proxy. A page of ten thousand names is the hot part of listing a
 * large bucket, so it is neither JSON nor XML: a head line, then one entry
 * per name, each a line of decimal and hex fields followed by its ETag and
 * name as raw bytes of a stated length (a name may hold any byte but NUL,
 * so no escaping and no scanning for delimiters inside it):
 *
 *   "SL2 <more>\n"                        more: 0, or 1 when names follow
 *   "<size> <cksum> <version> <mtime_ns> <etag_len> <name_len> <owner_len>\n"
 *   "<etag><name><owner>\n"
 *
 * size, version and mtime_ns are decimal, cksum is 16 lower-case hex
 * digits. owner is the access key owning the object when it is not its
 * bucket's owner (an ObjectWriter's upload, s3own.h), else empty. Entries
 * are in strictly ascending name order (the merge and the cached marks
 * rely on it). A page of the version before ("SL1", no owner_len) is read
 * too, its owners empty.
 *
 * The reader is strict: every field present and in range, nothing after
 * the last entry, names 1..LISTPAGE_NAME_MAX bytes without NUL, each after
 * the one before, ETags at most LISTPAGE_ETAG_MAX, owners at most
 * LISTPAGE_OWNER_MAX without NUL. Entries point into the
 * page's bytes, which must outlive them.
 *
 * Thread: pure functions.
 */
#ifndef SHOAL_LISTPAGE_H
#define SHOAL_LISTPAGE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define LISTPAGE_NAME_MAX 1041    /* a name, or a kept version's (objname.h) */
#define LISTPAGE_ETAG_MAX 192    /* an ETag, or a version listing's id, kind and ETag */
#define LISTPAGE_OWNER_MAX 127   /* an access key (s3auth.h) */
#define LISTPAGE_CTYPE "application/x-shoal-list"

struct listpage_ent {
    const char *name;            /* not NUL-terminated */
    size_t nlen;
    const char *etag;            /* not NUL-terminated; elen 0 when none */
    size_t elen;
    const char *owner;           /* not NUL-terminated; olen 0 for the bucket's owner */
    size_t olen;
    uint64_t size, cksum, version, mtime_ns;
};

struct listpage {
    struct listpage_ent *v;      /* n entries, owned (listpage_free) */
    size_t n;
    int more;
};

/* Writing: the head once, then each entry. */
void listpage_begin(struct gbuf *b, int more);
void listpage_add(struct gbuf *b, const struct listpage_ent *e);
/* Set the head's more flag after the fact (b begins with listpage_begin). */
void listpage_set_more(struct gbuf *b, int more);

/* Read n bytes at p into pg: 0, or -1 with err set and pg empty. */
int listpage_parse(const char *p, size_t n, struct listpage *pg, char *err, size_t errlen);
void listpage_free(struct listpage *pg);

/* Name order: bytes compared unsigned, a shorter name first on a tie. */
int listpage_name_cmp(const char *a, size_t al, const char *b, size_t bl);

#endif
