#include "snap.h"

#include <stddef.h>

void snap_init(struct snap *s, int64_t version, void (*destroy)(struct snap *))
{
    s->refs = 1;
    s->version = version;
    s->destroy = destroy;
}

void snap_ref(struct snap *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void snap_unref(struct snap *s)
{
    if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0)
        s->destroy(s);
}

struct snap *snap_get(struct snap_holder *h)
{
    pthread_rwlock_rdlock(&h->lock);
    struct snap *s = h->cur;
    if (s)
        snap_ref(s);
    pthread_rwlock_unlock(&h->lock);
    return s;
}

int snap_install(struct snap_holder *h, struct snap *s, int force)
{
    pthread_rwlock_wrlock(&h->lock);
    struct snap *old = h->cur;
    if (old && !force && s->version <= old->version) {
        pthread_rwlock_unlock(&h->lock);
        snap_unref(s);
        return 0;
    }
    h->cur = s;
    pthread_rwlock_unlock(&h->lock);
    snap_unref(old);
    return 1;
}
