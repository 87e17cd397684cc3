/*
 * jobrun: a job's walk over its selection, and the prefetch and evict
 * kinds (see jobint.h).
 *
 * A job walks its selection by index (a template's names are made, never
 * held), keeps the names this target owns under the current cluster map,
 * and works on job_workers (config) of them at a time; it yields the loop
 * after JOB_BATCH names so that a long run of names owned elsewhere never
 * holds client requests up. A listed selection comes a page at a time:
 * the backend's ListObjectsV2 (every target walks it, keeping its own
 * names) or, for a bucket with no backend, the names the target's own
 * drives hold (store_list on the I/O pool).
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cmap.h"
#include "fetch.h"
#include "iopool.h"
#include "jobint.h"
#include "lcopy.h"
#include "log.h"
#include "lpage.h"
#include "node.h"
#include "objname.h"
#include "scrub.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "wbq.h"

#define JOB_BATCH 1000           /* names looked at per loop pass */
#define JOB_PAGE 1000            /* names per listing page */

struct item {
    struct job *j;
    char *name;
    char *mkey;
    size_t klen;
    uint64_t size;               /* evict: the copy's */
    char etag[OMETA_ETAG_MAX + 1];   /* latest: the held copy's backend ETag */
    int rc;                      /* evict: store_delete's */
};

static void item_free(struct item *it)
{
    free(it->name);
    free(it->mkey);
    free(it);
}

static void item_over(struct item *it)
{
    struct job *j = it->j;
    job_add(j, &j->done, 1, 0);
    item_free(it);
    j->inflight--;
    job_pump(j);
}

/* ---- evict, prefetch ------------------------------------------------------------ */

/* On the I/O pool: the drives and RocksDB block. */
static void drop_work(void *arg)
{
    struct item *it = arg;
    struct store *st = &it->j->t->store;
    it->rc = store_delete(st, store_pick(st, it->mkey, it->klen), it->mkey, it->klen);
    if (!it->rc)                 /* and its copies on other drives (lcopy.h) */
        lcopy_drop(st, it->mkey, it->klen);
}

static void dropped(void *arg)
{
    struct item *it = arg;
    /* a copy gone meanwhile (deleted, evicted by another job) is not an error */
    if (it->rc == 0)
        job_add(it->j, &it->j->evicted, 1, it->size);
    item_over(it);
}

static void fetched(void *arg, const struct fetch_result *res)
{
    struct item *it = arg;
    struct job *j = it->j;
    if (res->status == 0) {
        struct ometa m;
        int got = store_get(&j->t->store, store_pick(&j->t->store, it->mkey, it->klen), it->mkey,
                            it->klen, &m) == 0;
        job_add(j, &j->fetched, 1, got ? m.size : 0);
    } else {
        job_note_error(j, it->name, res->msg[0] ? res->msg : "fetch failed");
    }
    item_over(it);
}

static void fetch(struct item *it)
{
    struct job *j = it->j;
    struct fetch_req fr = {j->t, j->cli, j->q, &j->b, it->name, it->mkey, it->klen};
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
        backend_status(&j->b, o, msg, sizeof(msg));
        job_note_error(j, it->name, msg);
    }
    item_over(it);
}

/* ---- the selection -------------------------------------------------------------- */

#define NAME_END (-2)             /* the selection is walked */
#define NAME_WAIT (-3)            /* the next page of the listing is on its way */

/* list_end is read by other workers (progress) under jobs_mu. */
static void set_list_end(struct job *j, int end)
{
    pthread_mutex_lock(&jobs_mu);
    j->list_end = end;
    pthread_mutex_unlock(&jobs_mu);
}

static void page_failed(struct job *j, const char *err)
{
    job_note_error(j, j->prefix[0] ? j->prefix : "(the listing)", err);
    set_list_end(j, 1);
}

static void page_in(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct job *j = arg;
    char err[300];
    s3list_free(&j->page);
    memset(&j->page, 0, sizeof(j->page));
    j->page_i = 0;
    j->listing = 0;
    j->inflight--;
    if (o->status != 200) {
        backend_status(&j->b, o, err, sizeof(err));
        page_failed(j, err);
    } else if (s3list_parse(body, len, &j->page, err, sizeof(err))) {
        page_failed(j, err);
    } else {
        const char *next = j->page.truncated && j->page.next_token ? j->page.next_token : "";
        free(j->token);
        j->token = xstrdup(next);
        set_list_end(j, !next[0]);
    }
    job_pump(j);
}

/* A page of the names this target's drives hold (after j->token). */
struct lpage_req {
    struct job *j;
    struct gbuf out;
    int rc;
};

static void local_work(void *arg)
{
    struct lpage_req *lr = arg;
    struct job *j = lr->j;
    lr->rc = store_list(&j->t->store, j->provider, j->bucket, j->prefix, j->token, "", "",
                        JOB_PAGE, 0, &lr->out);
}

static void lnames_free(struct job *j)
{
    for (int i = 0; i < j->ln; i++)
        free(j->lnames[i]);
    free(j->lnames);
    j->lnames = NULL;
    j->ln = 0;
}

static void local_in(void *arg)
{
    struct lpage_req *lr = arg;
    struct job *j = lr->j;
    struct lpage pg;
    char err[256];
    lnames_free(j);
    j->page_i = 0;
    j->listing = 0;
    j->inflight--;
    if (lr->rc) {
        page_failed(j, strerror(-lr->rc));
    } else if (lpage_parse(lr->out.p, lr->out.n, &pg, err, sizeof(err))) {
        page_failed(j, err);
    } else {
        j->lnames = xcalloc(pg.n ? pg.n : 1, sizeof(char *));
        for (size_t i = 0; i < pg.n; i++)
            j->lnames[j->ln++] = xstrndup(pg.v[i].name, pg.v[i].nlen);
        if (j->ln) {
            free(j->token);
            j->token = xstrdup(j->lnames[j->ln - 1]);
        }
        set_list_end(j, !pg.more);
        lpage_free(&pg);
    }
    gbuf_free(&lr->out);
    free(lr);
    job_pump(j);
}

static void ask_page(struct job *j)
{
    j->listing = 1;
    j->inflight++;               /* the job ends only once the page is in */
    if (j->listed == JL_BACKEND) {
        backend_list(j->cli, &j->b, j->prefix, j->token, JOB_PAGE, page_in, j);
        return;
    }
    struct lpage_req *lr = xcalloc(1, sizeof(*lr));
    lr->j = j;
    iopool_submit(j->t->io, j->q, local_work, local_in, lr);
}

/* The next name of a listing, a page at a time. */
static int listed_name(struct job *j, char *buf, size_t len)
{
    int have = j->listed == JL_BACKEND ? j->page.n : j->ln;
    if (j->page_i < have) {
        const char *k = j->listed == JL_BACKEND ? j->page.objs[j->page_i].key
                                                : j->lnames[j->page_i];
        j->page_i++;
        size_t n = strlen(k);
        if (n >= len)
            return -1;
        memcpy(buf, k, n + 1);
        return (int)n;
    }
    if (j->list_end)
        return NAME_END;
    if (!j->listing)
        ask_page(j);
    return NAME_WAIT;
}

/* The next selected name (a download's: URL) into buf, and its index:
 * its length, -1 when it is too long, NAME_END or NAME_WAIT. */
static int next_name(struct job *j, char *buf, size_t len, uint64_t *idx)
{
    if (j->listed) {
        int n = listed_name(j, buf, len);
        if (n != NAME_WAIT && n != NAME_END)
            *idx = __atomic_fetch_add(&j->pos, 1, __ATOMIC_RELAXED);
        if (n == NAME_END) {     /* the size is known once the listing ends */
            pthread_mutex_lock(&jobs_mu);
            j->total = j->pos;
            pthread_mutex_unlock(&jobs_mu);
        }
        return n;
    }
    if (j->pos >= j->total)
        return NAME_END;
    uint64_t i = __atomic_fetch_add(&j->pos, 1, __ATOMIC_RELAXED);
    *idx = i;
    if (j->has_tmpl)
        return tmpl_name(&j->tm, i, buf, len);
    const char *s = json_string_value(json_array_get(j->names, i));
    size_t n = s ? strlen(s) : 0;
    if (!s || n >= len)
        return -1;
    memcpy(buf, s, n + 1);
    return (int)n;
}

/* Does this target own name in the job's bucket? */
static int owns(const struct job *j, const struct cmap *m, const char *name)
{
    size_t kl;
    char *hkey = node_obj_key(j->provider, j->bucket, name, &kl);
    const struct cmap_node *owner = m ? cmap_owner(m, hkey, kl) : NULL;
    free(hkey);
    return owner && !strcmp(owner->id, j->t->node.id);
}

/* Work on name (a download's object name, from url), when this target owns it. */
static void consider(struct job *j, const struct cmap *m, const char *name, size_t n,
                     const char *url)
{
    if (!owns(j, m, name))
        return;
    size_t klen;
    char *mkey = store_mkey(j->provider, j->bucket, name, n, &klen);
    struct ometa held;
    int present = store_get(&j->t->store, store_pick(&j->t->store, mkey, klen), mkey, klen,
                            &held) == 0;
    job_add(j, &j->owned, 1, 0);
    if (present)
        job_add(j, &j->present, 1, 0);
    if (j->kind == JK_COPY || j->kind == JK_DOWNLOAD) {
        free(mkey);
        if (j->kind == JK_COPY)
            job_copy_one(j, name, n, present, &held);
        else
            job_download_one(j, url, name, n, present);
        return;
    }
    int work = j->kind == JK_EVICT ? present : !present || (j->latest && j->b.kind == BK_S3);
    if (!work) {
        job_add(j, &j->done, 1, 0);
        free(mkey);
        return;
    }
    struct item *it = xcalloc(1, sizeof(*it));
    it->j = j;
    it->name = xstrndup(name, n);
    it->mkey = mkey;
    it->klen = klen;
    j->inflight++;
    if (j->kind == JK_EVICT) {
        it->size = held.size;
        iopool_submit(j->t->io, j->q, drop_work, dropped, it);
    } else if (present) {        /* latest: is the held copy still the backend's? */
        snprintf(it->etag, sizeof(it->etag), "%s", held.backend_etag);
        backend_head(j->cli, &j->b, it->name, validated, it);
    } else {
        fetch(it);
    }
}

#define MAP_WAITS 50              /* turns of 100 ms for the proxy's map version */

/* Hold the map names are judged by: the current one once it is as new as
 * the proxy's when it started the job (or after MAP_WAITS turns). 0 when
 * the pump should come back later (armed). */
static int pin_map(struct job *j)
{
    struct cmap *m = cmap_current();
    if (!m || (m->snap.version < j->want_map && j->map_waits++ < MAP_WAITS)) {
        cmap_unref(m);
        struct timeval tv = {0, 100000};
        event_add(j->tick, &tv);
        return 0;
    }
    j->map = m;
    __atomic_store_n(&j->map_version, m->snap.version, __ATOMIC_RELAXED);
    return 1;
}

void job_pump(struct job *j)
{
    char name[OBJNAME_MAX + 1], url[4096];
    if (j->kind == JK_LRU || j->kind == JK_REBALANCE || j->kind == JK_RESILVER)
        return;                  /* lru.c, reb.c, mpath.c run them, and see an abort themselves */
    if (j->kind == JK_FLUSH || j->kind == JK_SCRUB || j->kind == JK_ECENCODE) {
        /* wbq.c, scrub.c run them */
        if (!j->handed && !j->waiting) {
            j->handed = 1;
            (j->kind == JK_FLUSH ? wbq_flush : scrub_run)(j);
        }
        return;
    }
    if (!j->map && !pin_map(j))
        return;                  /* a turn later: the proxy's map is on its way */
    struct cmap *m = j->map;
    int looked = 0, n = 0;
    while (!__atomic_load_n(&j->aborted, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&j->waiting, __ATOMIC_RELAXED) &&
           j->inflight < j->t->conf.job_workers) {
        if (++looked > JOB_BATCH) {
            event_active(j->tick, EV_TIMEOUT, 0);   /* the rest after other work */
            return;
        }
        uint64_t i = 0;
        int dl = j->kind == JK_DOWNLOAD;
        n = next_name(j, dl ? url : name, dl ? sizeof(url) : sizeof(name), &i);
        if (n == NAME_END || n == NAME_WAIT)
            break;
        if (dl && n >= 0)
            n = job_download_name(j, i, url, name, sizeof(name));
        char err[256];
        if (n < 0)
            job_note_error(j, dl ? url : "(too long)",
                           dl ? "no object name in this URL (give \"names\")" : "name too long");
        else if (objname_valid(name, (size_t)n, err, sizeof(err)))
            job_note_error(j, name, err);
        else
            consider(j, m, name, (size_t)n, url);
    }
    if (__atomic_load_n(&j->waiting, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&j->aborted, __ATOMIC_RELAXED))
        return;                  /* job_ended of another job starts it */
    int over = n == NAME_END || (!j->listed && j->pos >= j->total) ||
               __atomic_load_n(&j->aborted, __ATOMIC_RELAXED);
    if (over && j->inflight == 0 && !j->end_ns)
        job_ended(j);
}
