/*
 * nativelist: read another Shoal cluster's answers as a backend sees them
 * (target/backend, the shoal kind): a native listing page,
 *
 *   {"objects": [{"name": N, "size": S, "etag": E, "last_modified": L,
 *                 "mtime": NS, ...}, ...], "next": TOKEN,
 *    "complete": false, ...}
 *
 * into the listing form the other kinds parse to (s3list.h), and an error
 * body ({"error": "..."}) into its message. Pure and bounded: pages over
 * S3LIST_MAX_DOC and names over 1024 bytes are refused, as are pages that
 * say they are incomplete (names on targets that are down are missing, so
 * the page must not pass for the whole truth); fuzzed by
 * test/fuzz/fuzz_nativelist.c.
 */
#ifndef SHOAL_NATIVELIST_H
#define SHOAL_NATIVELIST_H

#include <stddef.h>

#include "s3list.h"

/* 0, or -1 with a message in err (out then empty). */
int nativelist_parse(const char *body, size_t len, struct s3list *out, char *err,
                     size_t errlen);
/* The "error" of a JSON error body into out ("" when there is none); the
 * body is read only up to len bytes. */
void nativelist_err(const char *body, size_t len, char *out, size_t n);

#endif
