/*
 * repair: a read that found the copy here damaged (repair.c). Its data
 * file is missing, short, or does not match its checksum: a good copy is
 * brought in its place, from another drive, a copy holder of a mirrored
 * bucket (neighbour.h asks them, as for a name missing here) or, for a bucket
 * with a backend, from the backend; then the read is served from it. The
 * damaged copy meanwhile is kept, marked damaged (only that version: a
 * new one written meanwhile stays), while its bytes are here and no
 * backend has them: the last bytes of an object are never dropped. When
 * no good copy is anywhere, the read is 500 ObjectCorrupted, and the
 * object stays listed, marked, until a good copy (a PUT, a copy from
 * elsewhere) replaces it; one whose data file is gone is dropped (no
 * ghost lingers in listings). A copy still owed to a write-back backend
 * is never dropped: its read stays 500.
 *
 * Thread: r's worker; the drop on the I/O pool.
 */
#ifndef SHOAL_TARGET_REPAIR_H
#define SHOAL_TARGET_REPAIR_H

#include <stddef.h>
#include <stdint.h>

struct http_req;
struct objmeta;
struct target;

/* The copy of mkey (klen bytes, copied) with record m is damaged: 1
 * when a repair started (r is answered once it is over, with flags as
 * get_local's), 0 when the bucket has nothing to repair from (mirror
 * copies 1, no backend): the caller answers. */
int repair_read(struct target *t, struct http_req *r, const char *mkey, size_t klen,
                const struct objmeta *m, int flags);

/* A GET or HEAD of mkey (taken) in an erasure-coded bucket, not here:
 * rebuilt from its slices and served with get_local's flags; 404 when no
 * slice is anywhere (503 when unsure: a target that may hold it is down),
 * 500 ObjectCorrupted when too few are. */
void repair_rebuild_get(struct target *t, struct http_req *r, char *mkey, size_t klen,
                        int flags, int unsure);

#endif
