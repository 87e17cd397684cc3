/*
 * inbody: the body a neighbour sends an object or a slice with (xfer.c,
 * slice.c): its metadata record (objmeta, N bytes, N given by ?meta=N),
 * then its bytes, taken into a work file as they come, checksummed on the
 * way (inbody.c).
 *
 * Thread: the request's worker.
 */
#ifndef SHOAL_TARGET_INBODY_H
#define SHOAL_TARGET_INBODY_H

#include <limits.h>
#include <stdint.h>

#include "bsum.h"
#include "xxh.h"

struct http_req;
struct objmeta;
struct store_mp;
struct target;

struct inbody {
    struct store_mp *mp;
    int fd;                      /* the work file; -1 when not open or handed on */
    char work[PATH_MAX];
    uint64_t uid;                /* the work file's, the data file's once committed */
    char *meta;                  /* the record, as it arrives */
    size_t meta_len, meta_got;
    XXH3_state_t *xs;
    struct bsum bs;              /* the block sums */
    uint64_t size;               /* bytes after the record */
};

/* Ready b (zeroed) for r's body on mp: 0, or -1 with r answered (400 for
 * a bad ?meta, 507 when mp has no room, else the work file's error). */
int inbody_open(struct inbody *b, struct target *t, struct http_req *r, struct store_mp *mp);
/* n bytes of the body: 0, or the errno a write failed with. */
int inbody_take(struct inbody *b, const char *d, size_t n);
/* The record into m: 0 when it is whole and the bytes are its size and
 * checksum (and it has a version), else -1. m->uid is the work file's. */
int inbody_check(struct inbody *b, struct objmeta *m);
/* Stop taking r's body (its hooks and data go) and answer status with
 * msg, closing the connection after. */
void inbody_refuse(struct http_req *r, int status, const char *msg);
/* Free what b holds; the work file goes unless handed on (fd -1). */
void inbody_free(struct inbody *b);

#endif
