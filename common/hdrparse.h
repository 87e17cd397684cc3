/*
 * hdrparse: parsers of request header values that arrive from clients
 * (untrusted bytes): Range and entity-tag lists. Pure functions, no
 * allocation; fuzzed by test/fuzz/fuzz_hdrparse.c.
 */
#ifndef SHOAL_HDRPARSE_H
#define SHOAL_HDRPARSE_H

#include <stdint.h>

/* One Range header against size: 1 with [*off, *off+*len), 0 to serve it
 * whole (absent, several ranges, or syntax ignored as RFC 9110 allows),
 * -1 when unsatisfiable (416). h may be NULL. */
int hdr_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len);

/* Does the entity-tag list h (If-Match, If-None-Match) name etag; "*"
 * names any. Weak tags compare by their opaque part. */
int hdr_etag_listed(const char *h, const char *etag);

#endif
