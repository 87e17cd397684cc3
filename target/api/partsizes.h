/*
 * partsizes: a multipart object's part sizes, kept among its metadata (under
 * ":parts", as "size*count,size*count...", a run per stretch of equal
 * sizes) so that GET and HEAD serve ?partNumber= as S3 does: that part's
 * bytes (206, x-amz-mp-parts-count), 400 InvalidPartNumber past the last
 * (a plain object's part 2 too), and part 1 of an object not uploaded in
 * parts as the whole object.
 * An object whose sizes do not fit PARTSIZES_MAX keeps none; ?partNumber= on
 * it is answered 501.
 */
#ifndef SHOAL_TARGET_PARTSIZES_H
#define SHOAL_TARGET_PARTSIZES_H

#include <stdint.h>

struct http_req;
struct objmeta;

#define PARTSIZES_MAX 2048       /* the kept text, bytes */

/* The n parts' sizes into m (nothing when they do not fit). */
void partsizes_keep(struct objmeta *m, const uint64_t *sizes, int n);
/* r's ?partNumber= against m: 0 when r names none; 1 with [*off, *off +
 * *len) the part's bytes (the parts count answered); 2 for part 1 of an
 * object not in parts (the whole object) or an empty part (nothing); -1
 * with r answered (400 with a Range too, a bad number, or past the parts;
 * 501). */
int partsizes_range(struct http_req *r, const struct objmeta *m, uint64_t *off, uint64_t *len);
/* m's parts: 0 with *count and part num's *len (0 past the last); 1 for an
 * object not uploaded in parts; -1 when its sizes were not kept. */
int partsizes_part(const struct objmeta *m, int num, uint64_t *len, int *count);

#endif
