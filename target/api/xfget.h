/*
 * xfget: a GET with ?transform=NAME[&args...] (xfget.c): the object's
 * bytes go through the transform (xfrun.h) and its answer to the client,
 * streamed, in place of the bytes. The read itself is a GET's (warm,
 * cold once fetched whole, an erasure-coded object once rebuilt here, an
 * archive's member with ?archpath), checked against its sums first; its
 * conditions hold for the stored object. The answer has no ETag (the
 * bytes are not the object's) and says X-Shoal-Transform: NAME.
 *
 * Thread: r's worker.
 */
#ifndef SHOAL_TARGET_XFGET_H
#define SHOAL_TARGET_XFGET_H

#include <stddef.h>
#include <stdint.h>

struct http_req;
struct objmeta;
struct target;

/* Does r ask for a transform? */
int xfget_asked(const struct http_req *r);

/* Before anything is read: answer r when its transform cannot be (a
 * method other than GET, a Range, a bad name: 400 or 501; a transform
 * that does not exist, 404, or that is starting, 503). 1 when answered. */
int xfget_refused(struct http_req *r);

/* The bytes [off, off + len) of the object mkey (record m, data file fd,
 * taken; or from mem when not NULL) through r's transform, as r's answer.
 * cache is the X-Shoal-Cache value, or NULL. */
void xfget_send(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const char *cache, const struct objmeta *m, int fd, uint64_t off, uint64_t len,
                const char *mem);

#endif
