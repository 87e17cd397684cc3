/*
 * jobfetch: the prefetch and evict kinds of a batch job, walking their
 * selection with jobsel.h.
 *
 * prefetch: an owned object of a backed bucket not yet held is fetched
 * through the same path as a cold GET (target/backend/fetch.c); with
 * "latest", a held one is asked of the backend (HEAD) and fetched again
 * when its ETag changed, dropped when the backend no longer has it. With
 * "pin", what it selects is kept from eviction (pin.h); the pin's record
 * is written beside the job's start record.
 *
 * evict: Shoal's copy of an owned object of a backed bucket is dropped,
 * its local copies with it, on the I/O pool; the backend keeps it.
 *
 * Thread: the job's loop; the drives on the I/O pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fetch.h"
#include "iopool.h"
#include "jobfetch.h"
#include "jobsel.h"
#include "localcopy.h"
#include "pin.h"
#include "store.h"
#include "target.h"
#include "util.h"

struct prefetch_opts {
    int latest;                  /* re-validate what is held */
    char *pin;                   /* its pin's record (pin.h), or NULL */
};

struct item {
    struct job *j;
    char *name;
    char *mkey;
    size_t klen;
    uint64_t size;               /* evict: the copy's */
    char etag[OBJMETA_ETAG_MAX + 1]; /* latest: the held copy's backend ETag */
    int rc;                      /* evict: store_delete's */
};

static struct item *item_new(struct job *j, const char *name, size_t n, char *mkey, size_t klen)
{
    struct item *it = xcalloc(1, sizeof(*it));
    it->j = j;
    it->name = xstrndup(name, n);
    it->mkey = mkey;
    it->klen = klen;
    j->inflight++;
    return it;
}

static void item_over(struct item *it)
{
    struct job *j = it->j;
    free(it->name);
    free(it->mkey);
    free(it);
    jobsel_over(j);
}

/* ---- evict ----------------------------------------------------------------------- */

/* On the I/O pool: the drives and RocksDB block. */
static void drop_work(void *arg)
{
    struct item *it = arg;
    struct store *st = &it->j->t->store;
    it->rc = store_delete(st, store_pick(st, it->mkey, it->klen), it->mkey, it->klen);
    if (!it->rc)                 /* and its copies on other drives (localcopy.h) */
        localcopy_drop(st, it->mkey, it->klen);
}

static void dropped(void *arg)
{
    struct item *it = arg;
    /* a copy gone meanwhile (deleted, evicted by another job) is not an error */
    if (it->rc == 0)
        job_add(it->j, JC_EVICTED, 1, it->size);
    item_over(it);
}

static void evict_one(struct job *j, const char *name, size_t n, const char *url, char *mkey,
                      size_t klen, int held, const struct objmeta *m)
{
    (void)url;
    if (!held) {
        job_add(j, JC_DONE, 1, 0);
        free(mkey);
        return;
    }
    struct item *it = item_new(j, name, n, mkey, klen);
    it->size = m->size;
    iopool_submit(j->t->io, j->q, drop_work, dropped, it);
}

/* Prefetch and evict need a bucket with a backend. */
static int backed(struct job *j, char *err, size_t errlen)
{
    if (jobsel_of(j)->b.kind != BK_NONE)
        return 0;
    snprintf(err, errlen, "bucket %s/%s has no backend: Shoal's copy is the only one",
             j->provider, j->bucket);
    return -1;
}

static int evict_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    return jobsel_init(j, spec, evict_one, 0, err, errlen) || backed(j, err, errlen);
}

const struct job_kind jobfetch_evict = {
    .name = "evict",
    .init = evict_init,
    .pump = jobsel_pump,
    .free = jobsel_free,
};

/* ---- prefetch -------------------------------------------------------------------- */

static void fetched(void *arg, const struct fetch_result *res)
{
    struct item *it = arg;
    struct job *j = it->j;
    if (res->status == 0) {
        struct objmeta m;
        int got = store_get(&j->t->store, store_pick(&j->t->store, it->mkey, it->klen), it->mkey,
                            it->klen, &m) == 0;
        job_add(j, JC_FETCHED, 1, got ? m.size : 0);
    } else {
        job_note_error(j, it->name, res->msg[0] ? res->msg : "fetch failed");
    }
    item_over(it);
}

static void fetch(struct item *it)
{
    struct job *j = it->j;
    struct fetch_req fr = {j->t, j->cli, j->q, &jobsel_of(j)->b, it->name, it->mkey, it->klen};
    fetch_get(&fr, NULL, NULL, fetched, it);
}

static void stale_dropped(void *arg)
{
    item_over(arg);
}

/* latest: the backend's word on a held object; a changed one is fetched
 * again, one gone from the backend is dropped here too. */
static void validated(void *arg, const struct backend_obj *o)
{
    struct item *it = arg;
    struct job *j = it->j;
    char msg[300];
    if (o->status == 200 && strcmp(o->etag, it->etag)) {
        fetch(it);
        return;
    }
    if (o->status == 404) {
        job_note_error(j, it->name, "gone from the backend: Shoal's copy is dropped");
        iopool_submit(j->t->io, j->q, drop_work, stale_dropped, it);
        return;
    }
    if (o->status != 200) {
        backend_status(&jobsel_of(j)->b, o, msg, sizeof(msg));
        job_note_error(j, it->name, msg);
    }
    item_over(it);
}

static void prefetch_one(struct job *j, const char *name, size_t n, const char *url,
                         char *mkey, size_t klen, int held, const struct objmeta *m)
{
    (void)url;
    struct jobsel *s = jobsel_of(j);
    const struct prefetch_opts *o = s->opts;
    if (held && !(o->latest && backend_listable(&s->b))) {
        job_add(j, JC_DONE, 1, 0);
        free(mkey);
        return;
    }
    struct item *it = item_new(j, name, n, mkey, klen);
    if (held) {                  /* latest: is the held copy still the backend's? */
        snprintf(it->etag, sizeof(it->etag), "%s", m->backend_etag);
        backend_head(j->cli, &s->b, it->name, validated, it);
    } else {
        fetch(it);
    }
}

static void prefetch_opts_free(void *arg)
{
    struct prefetch_opts *o = arg;
    free(o->pin);
    free(o);
}

static int prefetch_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    if (jobsel_init(j, spec, prefetch_one, 0, err, errlen) || backed(j, err, errlen))
        return -1;
    struct prefetch_opts *o = xcalloc(1, sizeof(*o));
    o->latest = json_is_true(json_object_get(spec, "latest"));
    o->pin = pin_record(spec, j->start_ns);
    jobsel_of(j)->opts = o;
    jobsel_of(j)->opts_free = prefetch_opts_free;
    return 0;
}

/* On the I/O pool, before the job's start record: its pin's ("n" + id). */
static int prefetch_persist(struct job *j)
{
    const struct prefetch_opts *o = jobsel_of(j)->opts;
    if (!o->pin)
        return 0;
    struct store *st = &j->t->store;
    char *nk = xasprintf("n%s", j->id);
    int rc = store_kv_put(st, &st->mp[0], nk, strlen(nk), o->pin, strlen(o->pin));
    free(nk);
    return rc;
}

static void prefetch_recorded(struct job *j)
{
    const struct prefetch_opts *o = jobsel_of(j)->opts;
    if (o->pin)
        pin_add(j->id, o->pin);
}

const struct job_kind jobfetch_prefetch = {
    .name = "prefetch",
    .init = prefetch_init,
    .pump = jobsel_pump,
    .persist = prefetch_persist,
    .recorded = prefetch_recorded,
    .free = jobsel_free,
};
