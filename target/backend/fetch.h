/*
 * fetch: an object brought from its bucket's backend into the store, one
 * fetch per object however many ask, with or without a client (fetch.c).
 */
#ifndef SHOAL_TARGET_FETCH_H
#define SHOAL_TARGET_FETCH_H

#include <stddef.h>
#include <stdint.h>

struct target;
struct curlclient;
struct loopq;
struct backend;
struct backend_obj;
struct fetch;

/* What to fetch, and the caller's loop. */
struct fetch_req {
    struct target *t;
    struct curlclient *cli;      /* the backend client of the caller's loop */
    struct loopq *q;             /* the caller's loop */
    const struct backend *b;     /* the bucket's backend; copied */
    const char *name;            /* the object's name in the backend; copied */
    const char *mkey;            /* its store key, klen bytes; copied */
    size_t klen;
};

/* How a fetch ended, for one of those who asked. */
struct fetch_result {
    int status;                  /* 0: the object is committed; else an HTTP status */
    const char *msg;             /* why, when status != 0 ("" otherwise) */
    int late;                    /* joined once the backend's bytes were all in */
    int uncached;                /* the starter's client had every byte, but no copy could
                                  * be kept (full or failing drive): read the backend */
};

typedef void (*fetch_done_fn)(void *arg, const struct fetch_result *res);

/* What the caller that starts a fetch may follow of it as it runs (the
 * cold GET streams the bytes to its client), on the fetch's loop. */
struct fetch_tap {
    /* The backend answered 200 with o (o->size -1 when unknown); its bytes
     * go to fd, the work file, from offset 0 (-1: no local copy is kept). */
    void (*begin)(void *arg, const struct backend_obj *o, int fd);
    /* Bytes [off, off + n) are in the work file, unless the local copy was
     * lost; p holds them either way. */
    void (*data)(void *arg, uint64_t off, const char *p, size_t n);
    /* All the backend's bytes are in; the commit begins (or, the local
     * copy lost, the fetch ends uncached). */
    void (*transferred)(void *arg);
    /* The local copy is lost (a full or failing drive): bytes from now on
     * are in p only; those before stay readable through fd. May be NULL. */
    void (*lost)(void *arg);
};

/*
 * Fetch fr's object into the store, or join the fetch of it in flight.
 * Call on fr->q's loop. Returns the fetch when this call started it (it
 * runs on this loop; tap, if not NULL, follows it; the fetch stays valid
 * until done returns), NULL when it joined one. Either way done(arg, ...)
 * fires exactly once and never before fetch_get returns: the starter's on
 * its loop as soon as the fetch is over (committed or failed), a joiner's
 * then posted to its own loop.
 */
struct fetch *fetch_get(const struct fetch_req *fr, const struct fetch_tap *tap, void *tap_arg,
                        fetch_done_fn done, void *arg);

/* The starter's backpressure: hold the backend's bytes, and let them come
 * again. Either is a no-op once the transfer is over. On the fetch's loop. */
void fetch_pause(struct fetch *f);
void fetch_resume(struct fetch *f);

#endif
