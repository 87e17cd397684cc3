/*
 * md5lane: the MD5s of S3 bodies as they are written to their work files,
 * hashed back from the files (the page cache) several at once. A stream
 * (struct md5lane, one per PUT) says how much of its body is in its file
 * (md5lane_wrote); the hasher, a thread of its own, takes every stream
 * with bytes waiting, up to MD5_LANES of them, and hashes them together
 * in md5mb's lanes. The more bodies come in at once, the longer a turn
 * takes and the more streams wait for the next, so the streams step
 * together as the load grows, and the hashing of all of them costs about
 * what one would. With no hasher (a machine of one core) a stream is
 * hashed on its loop, alone.
 *
 * A stream's calls are on its loop thread; done() comes there too.
 */
#ifndef SHOAL_MD5LANE_H
#define SHOAL_MD5LANE_H

#include <stdint.h>

#include "md5mb.h"

struct loopq;

struct md5lane {
    struct md5 st;               /* the MD5 of bytes [0, off); the hasher's while held */
    int fd;                      /* the work file, read with pread */
    /* under the hasher's lock: */
    uint64_t off;                /* bytes hashed */
    uint64_t in;                 /* bytes in the file */
    int rc;                      /* 0, or the -errno a read met (the stream is spent) */
    int final;                   /* md5lane_finish waits: done() once off == in */
    int held;                    /* in the hasher's turn */
    int posted;                  /* a done() is on its way to the loop */
    int dead;                    /* md5lane_close came while held or posted */
    struct loopq *q;
    void (*done)(void *arg);
    void *arg;
    struct md5lane *prev, *next; /* the hasher's streams */
};

/* The hasher: a thread when `on` (a machine with a core to spare), else
 * none; once, before any stream opens. md5lane_stop joins it. */
int md5lane_start(int on);
void md5lane_stop(void);

/* A stream hashing fd from byte 0; done(arg) will come on q's loop. */
void md5lane_open(struct md5lane *l, int fd, struct loopq *q, void (*done)(void *arg),
                  void *arg);
/*
 * The stream goes: 0. -EBUSY while the hasher holds it or a done() is on
 * its way: that done() still comes (then close again), and the stream
 * must stay until then.
 */
int md5lane_close(struct md5lane *l);

/* The file holds `in` bytes now. 0, or the error a read met. */
int md5lane_wrote(struct md5lane *l, uint64_t in);

/*
 * The body is whole in the file (`size` bytes). 0: l->st holds every
 * byte (md5_final it); -errno: a read failed; 1: the hasher is on it,
 * done() comes when it is through (call again then).
 */
int md5lane_finish(struct md5lane *l, uint64_t size);

#endif
