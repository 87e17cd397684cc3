/*
 * scrub: every copy held here read back and checked, damage repaired
 * (see scrub.h).
 */
#include "scrub.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "bmd.h"
#include "ecode.h"
#include "hc.h"
#include "http.h"
#include "iopool.h"
#include "jobint.h"
#include "log.h"
#include "mirror.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

#define SCRUB_BATCH 64           /* records read per turn of the walk */
#define READ_CHUNK (1u << 20)
#define ASK_TIMEOUT_MS (10L * 60 * 1000)
#define SCHEDULE_CHECK_S 60
#define LAST_KEY "Sscrub"        /* when the last scheduled scrub ended (ms) */

enum verdict { V_GONE, V_OK, V_BAD };

struct scrub {
    struct job *j;
    struct target *t;
    struct hc *hc;
    struct xfer_loop lp;         /* the job's loop, for rebuilds */
    char *prefix;                /* of the records walked */
    size_t plen;
    int mp_i;                    /* the mountpath walked */
    char *after;                 /* the last record read */
    size_t alen;
    char **keys;                 /* a batch of store keys (each NUL-ended) */
    size_t *lens;
    int n, next, end;
    uint64_t t0_ms, read;        /* for scrub_mbps */
    struct event *wait;
    /* the copy being checked */
    const char *mkey;
    size_t klen;
    struct ometa m;
    enum verdict v;
    const char *why;
    int rc;
    int asks;                    /* holders asked for their copy, not yet answered */
};

static void next_key(struct scrub *s);
static void next_batch(struct scrub *s);

static void batch_free(struct scrub *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->keys[i]);
    free(s->keys);
    free(s->lens);
    s->keys = NULL;
    s->lens = NULL;
    s->n = s->next = 0;
}

static void scheduled_end(struct job *j);

static void scrub_end(struct scrub *s)
{
    struct job *j = s->j;
    batch_free(s);
    event_free(s->wait);
    free(s->prefix);
    free(s->after);
    free(s);
    pthread_mutex_lock(&jobs_mu);
    uint64_t found = j->found, fixed = j->fixed, lost = j->lost, done = j->done;
    pthread_mutex_unlock(&jobs_mu);
    log_info("scrub %s: %llu copies read, %llu damaged, %llu fixed, %llu lost", j->id,
             (unsigned long long)done, (unsigned long long)found, (unsigned long long)fixed,
             (unsigned long long)lost);
    scheduled_end(j);
    job_ended(j);
}

/* ---- the walk ------------------------------------------------------------------------- */

static int scan_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct scrub *s = arg;
    (void)v;
    (void)vl;
    char *key = xmalloc(kl + 1);
    memcpy(key, k, kl);
    key[kl] = '\0';
    s->keys[s->n] = key;
    s->lens[s->n++] = kl;
    return s->n == SCRUB_BATCH;
}

static void scan_work(void *arg)
{
    struct scrub *s = arg;
    struct store *st = &s->t->store;
    s->keys = xcalloc(SCRUB_BATCH, sizeof(char *));
    s->lens = xcalloc(SCRUB_BATCH, sizeof(size_t));
    s->end = !store_kv_scan_after(st, &st->mp[s->mp_i], s->prefix, s->plen, s->after,
                                  s->alen, scan_one, s);
}

static void scanned(void *arg)
{
    struct scrub *s = arg;
    if (s->n) {                  /* the next batch starts after its last */
        free(s->after);
        s->alen = s->lens[s->n - 1];
        s->after = xmalloc(s->alen);
        memcpy(s->after, s->keys[s->n - 1], s->alen);
    }
    next_key(s);
}

static void next_batch(struct scrub *s)
{
    int end = s->end;
    batch_free(s);
    if (end) {                   /* this mountpath is walked: the next */
        s->mp_i++;
        s->end = 0;
        free(s->after);
        s->after = NULL;
        s->alen = 0;
    }
    if (__atomic_load_n(&s->j->aborted, __ATOMIC_RELAXED) ||
        s->mp_i >= __atomic_load_n(&s->t->store.n, __ATOMIC_ACQUIRE)) {
        scrub_end(s);
        return;
    }
    iopool_submit(s->t->io, s->j->q, scan_work, scanned, s);
}

/* ---- one copy read back ------------------------------------------------------------ */

static void check_work(void *arg)
{
    struct scrub *s = arg;
    struct store *st = &s->t->store;
    struct store_mp *mp = store_pick(st, s->mkey, s->klen);
    s->v = V_GONE;
    if (store_get(st, mp, s->mkey, s->klen, &s->m))
        return;                  /* deleted or moved meanwhile */
    int fd = store_data_open(mp, s->mkey, s->klen, s->m.uid);
    struct ometa now;
    if (fd < 0) {                /* rewritten meanwhile, or damage */
        int same = !store_get(st, store_pick(st, s->mkey, s->klen), s->mkey, s->klen, &now) &&
                   now.uid == s->m.uid;
        s->v = same ? V_BAD : V_GONE;
        s->why = "its data file is missing";
        return;
    }
    struct stat sb;
    s->v = V_BAD;
    if (fstat(fd, &sb) || (uint64_t)sb.st_size != s->m.size) {
        s->why = "its data file is short";
        close(fd);
        return;
    }
    XXH3_state_t *xs = XXH3_createState();
    char *buf = xmalloc(READ_CHUNK);
    XXH3_64bits_reset(xs);
    uint64_t got = 0;
    ssize_t n = 0;
    while (got < s->m.size && (n = read(fd, buf, READ_CHUNK)) > 0) {
        XXH3_64bits_update(xs, buf, (size_t)n);
        got += (uint64_t)n;
    }
    s->read += got;
    s->v = n < 0 || got != s->m.size || XXH3_64bits_digest(xs) != s->m.cksum ? V_BAD : V_OK;
    s->why = n < 0 ? "its data file cannot be read" : "its data does not match its checksum";
    XXH3_freeState(xs);
    free(buf);
    close(fd);
}

static void settled(struct scrub *s, uint64_t *counter, const char *err)
{
    const char *prov, *bucket, *name;
    size_t nl;
    if (err && !xfer_key_parts(s->mkey, s->klen, &prov, &bucket, &name, &nl)) {
        char *nm = xasprintf("%s/%.*s", bucket, (int)nl, name);
        job_note_error(s->j, nm, err);
        log_error("scrub: object %s: %s", nm, err);
        free(nm);
    }
    if (counter)
        job_add(s->j, counter, 1, 0);
    next_key(s);
}

static void present_work(void *arg)
{
    struct scrub *s = arg;
    struct store *st = &s->t->store;
    struct ometa m;
    s->rc = store_get(st, store_pick(st, s->mkey, s->klen), s->mkey, s->klen, &m);
}

static void present_done(void *arg)
{
    struct scrub *s = arg;
    if (s->rc == 0)
        settled(s, &s->j->fixed, NULL);
    else
        settled(s, &s->j->lost, "damaged, and no copy holder had a good copy: lost");
}

static void asked(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct scrub *s = arg;
    (void)status;
    (void)body;
    (void)len;
    (void)err;
    if (--s->asks == 0)
        iopool_submit(s->t->io, s->j->q, present_work, present_done, s);
}

/* The damaged copy is gone: the other holders send theirs (xfer.h). */
static void ask_holders(struct scrub *s)
{
    int copies = mirror_copies(s->mkey, s->klen, s->m.size);
    const struct cmap_node *h[CMAP_COPIES_MAX];
    struct cmap *m = cmap_current();
    int n = mirror_holders(m, s->mkey, s->klen, copies, h);
    char q[128];
    snprintf(q, sizeof(q), "newer=0&to=%s", s->t->node.id);
    s->asks = 1;
    for (int i = 0; i < n; i++) {
        if (!strcmp(h[i]->id, s->t->node.id))
            continue;
        s->asks++;
        char *url = xfer_url(s->t, "POST", h[i]->url, s->mkey, s->klen, q);
        hc_request(s->hc, "POST", url, NULL, 0, NULL, ASK_TIMEOUT_MS, asked, s);
        free(url);
    }
    cmap_unref(m);
    asked(s, 200, NULL, 0, NULL);
}

static void rebuilt(void *arg, int rc)
{
    struct scrub *s = arg;
    if (rc == 0)
        settled(s, &s->j->fixed, NULL);
    else
        settled(s, &s->j->lost, "damaged, and too few of its slices are left: lost");
}

static void drop_work(void *arg)
{
    struct scrub *s = arg;
    struct store *st = &s->t->store;
    s->rc = store_delete_if(st, store_pick(st, s->mkey, s->klen), s->mkey, s->klen, s->m.uid);
}

static void dropped(void *arg)
{
    struct scrub *s = arg;
    const char *prov, *bucket, *name;
    size_t nl;
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = NULL;
    if (!xfer_key_parts(s->mkey, s->klen, &prov, &bucket, &name, &nl) && b)
        bk = bmd_find(b, prov, bucket);
    struct bmd_ec ec;
    int copies = mirror_copies(s->mkey, s->klen, s->m.size), backed = bk && bmd_has_backend(bk);
    int sliced = bk && bmd_ec(bk, &ec) && s->m.size >= ec.limit;
    bmd_unref(b);
    if (s->rc == -ESTALE)        /* written again meanwhile: the new version stands */
        settled(s, &s->j->fixed, NULL);
    else if (s->rc == -EEXIST)
        settled(s, NULL, "damaged, and still owed to its write-back backend: kept");
    else if (s->rc && s->rc != -ENOENT)
        settled(s, NULL, "damaged, and cannot be dropped");
    else if (copies > 1)
        ask_holders(s);
    else if (sliced)
        ecode_rebuild(s->t, &s->lp, s->mkey, s->klen, rebuilt, s);
    else if (backed)             /* the next read fetches it again */
        settled(s, &s->j->fixed, NULL);
    else
        settled(s, &s->j->lost, "damaged, and no other copy: dropped");
}

static void checked(void *arg)
{
    struct scrub *s = arg;
    if (s->v == V_GONE) {
        next_key(s);
        return;
    }
    job_add(s->j, &s->j->done, 1, s->m.size);
    if (s->v == V_OK) {
        next_key(s);
        return;
    }
    job_add(s->j, &s->j->found, 1, 0);
    log_warn("scrub: object %.*s: %s: repairing", (int)(s->klen - 1), s->mkey + 1, s->why);
    iopool_submit_first(s->t->io, s->j->q, drop_work, dropped, s);
}

static void resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    next_key(arg);
}

static void next_key(struct scrub *s)
{
    if (__atomic_load_n(&s->j->aborted, __ATOMIC_RELAXED)) {
        scrub_end(s);
        return;
    }
    if (s->next == s->n) {
        next_batch(s);
        return;
    }
    /* at most scrub_mbps: what was read so far sets when the next may start */
    uint64_t due_ms = s->t0_ms + s->read * 1000 / ((uint64_t)s->t->conf.scrub_mbps << 20);
    uint64_t now = mono_ms();
    if (due_ms > now) {
        struct timeval tv = {(time_t)((due_ms - now) / 1000),
                             (suseconds_t)((due_ms - now) % 1000) * 1000};
        evtimer_add(s->wait, &tv);
        return;
    }
    s->klen = s->lens[s->next];
    s->mkey = s->keys[s->next++];
    iopool_submit(s->t->io, s->j->q, check_work, checked, s);
}

void scrub_run(struct job *j)
{
    struct scrub *s = xcalloc(1, sizeof(*s));
    s->j = j;
    s->t = j->t;
    s->hc = j->hc;
    s->lp = (struct xfer_loop){j->base, j->q, j->hc};
    size_t pl = strlen(j->provider), bl = strlen(j->bucket), xl = j->prefix ? strlen(j->prefix) : 0;
    s->prefix = xmalloc(3 + pl + bl + xl);
    s->prefix[0] = 'o';
    s->plen = 1;
    if (j->bucket[0]) {          /* 'o' provider NUL bucket NUL prefix */
        memcpy(s->prefix + 1, j->provider, pl + 1);
        memcpy(s->prefix + 2 + pl, j->bucket, bl + 1);
        memcpy(s->prefix + 3 + pl + bl, j->prefix, xl);
        s->plen = 3 + pl + bl + xl;
    }
    s->wait = evtimer_new(j->base, resume, s);
    s->t0_ms = mono_ms();
    next_batch(s);
}

/* ---- the schedule ------------------------------------------------------------------ */

static struct {
    struct target *t;
    struct http_worker *w;
    struct event *timer;
    struct job *j;               /* the scheduled scrub under way */
    uint64_t last_ms;            /* wall time the last one ended (0: none yet) */
    int loaded;
} sched;

static void last_work(void *arg)
{
    (void)arg;
    struct store *st = &sched.t->store;
    char *v = NULL;
    size_t vl = 0;
    if (!sched.loaded && store_kv_get(st, &st->mp[0], LAST_KEY, strlen(LAST_KEY), &v, &vl) == 0) {
        char num[24];
        snprintf(num, sizeof(num), "%.*s", (int)(vl < 23 ? vl : 23), v);
        sched.last_ms = strtoull(num, NULL, 10);
    } else if (sched.loaded) {
        char num[24];
        snprintf(num, sizeof(num), "%llu", (unsigned long long)sched.last_ms);
        store_kv_put(st, &st->mp[0], LAST_KEY, strlen(LAST_KEY), num, strlen(num));
    }
    free(v);
}

static void last_done(void *arg)
{
    (void)arg;
    if (!sched.loaded) {
        sched.loaded = 1;
        if (!sched.last_ms)      /* never scrubbed: the first is an interval away */
            sched.last_ms = wall_ns() / 1000000;
    }
}

/* A scrub ended: the scheduled one's end is remembered across restarts. */
static void scheduled_end(struct job *j)
{
    if (j != sched.j)
        return;
    sched.last_ms = wall_ns() / 1000000;
    sched.j = NULL;
    iopool_submit(sched.t->io, sched.w->q, last_work, NULL, NULL);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    uint64_t now = wall_ns() / 1000000;
    uint64_t every = (uint64_t)sched.t->conf.scrub_interval_h * 3600000u;
    if (sched.loaded && !sched.j && every && now >= sched.last_ms + every) {
        struct job *j = job_local_start(sched.t, sched.w, JK_SCRUB, NULL);
        j->hc = ((struct target_worker *)sched.w->local)->hc;
        j->handed = 1;
        sched.j = j;
        log_info("scrub %s: the scheduled scrub of everything begins", j->id);
        scrub_run(j);
    }
    struct timeval tv = {SCHEDULE_CHECK_S, 0};
    evtimer_add(sched.timer, &tv);
}

void scrub_start(struct target *t, struct http_worker *w)
{
    sched.t = t;
    sched.w = w;
    sched.timer = evtimer_new(w->base, tick, NULL);
    struct timeval tv = {SCHEDULE_CHECK_S, 0};
    evtimer_add(sched.timer, &tv);
    iopool_submit(t->io, w->q, last_work, last_done, NULL);
}
