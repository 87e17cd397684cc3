/*
 * snap: versioned, immutable, reference-counted snapshots (the cluster map
 * and the bucket metadata) and the holder that publishes the current one.
 * Readers take a reference and use the snapshot without locks; a writer
 * builds a new snapshot and installs it, which succeeds only when its
 * version is newer than the current one.
 */
#ifndef SHOAL_SNAP_H
#define SHOAL_SNAP_H

#include <pthread.h>
#include <stdint.h>

struct snap {
    int refs;                    /* atomic */
    int64_t version;
    void (*destroy)(struct snap *);
};

/* Readers (every request) share the lock; only an install takes it
 * exclusively, so request threads never wait on one another. */
struct snap_holder {
    pthread_rwlock_t lock;
    struct snap *cur;            /* owned reference, or NULL */
};

#define SNAP_HOLDER_INIT {PTHREAD_RWLOCK_INITIALIZER, NULL}

void snap_init(struct snap *s, int64_t version, void (*destroy)(struct snap *));
void snap_ref(struct snap *s);
void snap_unref(struct snap *s);
/* A new reference to the current snapshot (NULL if none); unref it. */
struct snap *snap_get(struct snap_holder *h);
/*
 * Install s if it is newer than the current snapshot (or force is set).
 * Takes the caller's reference either way. Returns 1 when installed, 0 when
 * s was stale and dropped.
 */
int snap_install(struct snap_holder *h, struct snap *s, int force);

#endif
