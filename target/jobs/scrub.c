/*
 * scrub: every copy held here read back and checked, damage repaired
 * (see scrub.h).
 */
#include "place.h"
#include "scrub.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bmd.h"
#include "ecode.h"
#include "nodeclient.h"
#include "http.h"
#include "iopool.h"
#include "job.h"
#include "localcopy.h"
#include "log.h"
#include "mirror.h"
#include "slice.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"
#include "xxh.h"

#define SCRUB_BATCH 64           /* records read per turn of the walk */
#define READ_CHUNK (1u << 20)
#define TURN (8u << 20)          /* bytes read per job on the I/O pool */
#define ASK_TIMEOUT_MS (10L * 60 * 1000)
#define SCHEDULE_CHECK_S 60
#define LAST_KEY "Sscrub"        /* when the last scheduled scrub ended (ms) */

/* What reading a copy back found: gone meanwhile, more to read, whole
 * and right, damaged, or an error that says nothing of its bytes. */
enum verdict { V_GONE, V_MORE, V_OK, V_BAD, V_ERR };

struct scrub {
    struct job *j;
    int encode;                  /* an ec-encode: no reading back, objects sent to holders */
    struct target *t;
    struct nodeclient *hc;
    struct xfer_loop lp;         /* the job's loop, for rebuilds */
    char *prefix;                /* of the records walked */
    size_t plen;
    int mp_i;                    /* the mountpath walked */
    char *after;                 /* the last record read */
    size_t alen;
    char **keys;                 /* a batch of store keys (each NUL-ended) */
    size_t *lens;
    int n, next, end;
    struct event *wait;
    /* the copy being checked */
    const char *mkey;
    size_t klen;
    struct objmeta m;
    int fd;                      /* its data file, while read */
    XXH3_state_t *xs;
    uint64_t got, turn;          /* read so far, and in the last turn */
    enum verdict v;
    const char *why;
    int rc;
    int asks, unasked;           /* holders asked for their copy; those that failed */
    int marking;                 /* its bytes here, wrong, nothing else has them: marked */
    uint64_t on_disk;            /* bytes its data file holds (0: none, or no file) */
    int slices;                  /* the walk is on slices now (objects first), */
    int copies;                  /* then on copies on other drives (localcopy.h) */
    char *okey;                  /* a damaged slice's object key, while it is made again */
    size_t oklen;
};

/* scrub_mbps holds for a target's scrubs together: no read turn starts
 * before this (mono ms), and time left idle is not saved up. */
static uint64_t pace_ms;

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
    XXH3_freeState(s->xs);
    free(s->prefix);
    free(s->after);
    free(s);
    uint64_t found = job_counter(j, JC_FOUND), fixed = job_counter(j, JC_FIXED),
             lost = job_counter(j, JC_LOST), done = job_counter(j, JC_DONE);
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
    int walked = s->mp_i >= __atomic_load_n(&s->t->store.n, __ATOMIC_ACQUIRE);
    if (walked && !s->copies && !s->encode) {   /* slices, then copies */
        s->copies = s->slices;
        s->slices = !s->slices;
        s->mp_i = 0;
        if (s->copies) {         /* 'c' and the object's whole key */
            memmove(s->prefix + 1, s->prefix, s->plen);
            s->prefix[0] = 'c';
            s->prefix[1] = 'o';
            s->plen++;
        } else {
            s->prefix[0] = 's';
        }
        walked = 0;
    }
    if (job_aborted(s->j) || walked) {
        scrub_end(s);
        return;
    }
    iopool_submit(s->t->io, s->j->q, scan_work, scanned, s);
}

/* ---- one copy read back, a turn at a time ---------------------------------------------- */

/* The mountpath the copy being read is on: a copy on another drive is on
 * the one walked; anything else where its key is found. */
static struct store_mp *where(struct scrub *s)
{
    struct store *st = &s->t->store;
    return s->copies ? &st->mp[s->mp_i] : store_pick(st, s->mkey, s->klen);
}

/* The copy's record and open data file, or the verdict. */
static enum verdict check_open(struct scrub *s)
{
    struct store *st = &s->t->store;
    struct store_mp *mp = where(s);
    s->got = 0;
    s->on_disk = 0;
    if (store_get(st, mp, s->mkey, s->klen, &s->m))
        return V_GONE;           /* deleted or moved meanwhile */
    s->fd = store_data_open(mp, s->mkey, s->klen, &s->m);
    struct objmeta now;
    if (s->fd == -ENOENT) {      /* rewritten meanwhile, or damage */
        int same = !store_get(st, where(s), s->mkey, s->klen, &now) &&
                   now.uid == s->m.uid;
        s->why = "its data file is missing";
        return same ? V_BAD : V_GONE;
    }
    if (s->fd < 0) {             /* out of descriptors, a permission: says nothing of it */
        s->rc = s->fd;
        s->why = "its data file cannot be opened";
        return V_ERR;
    }
    struct stat sb;
    int st_rc = fstat(s->fd, &sb);
    s->on_disk = st_rc == 0 ? (uint64_t)sb.st_size : 0;
    if (st_rc || (uint64_t)sb.st_size != s->m.size) {
        s->why = "its data file is short";
        return V_BAD;
    }
    if (!s->xs)
        s->xs = XXH3_createState();
    XXH3_64bits_reset(s->xs);
    return V_MORE;
}

static void check_work(void *arg)
{
    struct scrub *s = arg;
    s->turn = 0;
    if (s->fd < 0 && (s->v = check_open(s)) != V_MORE)
        return;
    char *buf = xmalloc(READ_CHUNK);
    ssize_t n = 1;
    while (s->got < s->m.size && s->turn < TURN) {
        n = read(s->fd, buf, READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        XXH3_64bits_update(s->xs, buf, (size_t)n);
        s->got += (uint64_t)n;
        s->turn += (uint64_t)n;
    }
    free(buf);
    if (n < 0) {                 /* an I/O error is the drive's: damage, and noted */
        s->rc = -errno;
        store_note_error(where(s), s->rc);
        s->why = "its data file cannot be read";
        s->v = s->rc == -EIO ? V_BAD : V_ERR;
    } else if (s->got < s->m.size) {
        s->v = n == 0 ? V_BAD : V_MORE;   /* shorter than it was at the start: damage */
        s->why = "its data file is short";
    } else {
        s->v = XXH3_64bits_digest(s->xs) == s->m.cksum ? V_OK : V_BAD;
        s->why = "its data does not match its checksum";
    }
}

static void settled(struct scrub *s, int counter, const char *err)
{
    if (err) {                   /* (a copy on another drive: 'c' + the object's key) */
        char *nm = s->copies ? xfer_key_show(s->mkey + 1, s->klen - 1)
                             : xfer_key_show(s->mkey, s->klen);
        job_note_error(s->j, nm, err);
        log_error("scrub: object %s: %s", nm, err);
        free(nm);
    }
    if (counter >= 0)
        job_add(s->j, (enum job_ctr)counter, 1, 0);
    next_key(s);
}

/* Is a good copy here now (a holder's replaced the damaged one)? */
static void present_work(void *arg)
{
    struct scrub *s = arg;
    struct store *st = &s->t->store;
    struct objmeta m;
    s->rc = store_get(st, store_pick(st, s->mkey, s->klen), s->mkey, s->klen, &m);
    if (!s->rc && (m.flags & OBJMETA_F_DAMAGED))
        s->rc = -EBADMSG;
}

static void present_done(void *arg)
{
    struct scrub *s = arg;
    if (s->rc == 0)
        settled(s, JC_FIXED, NULL);
    else if (s->unasked)         /* a holder did not answer: it may have it still */
        settled(s, -1, s->marking ? "damaged, kept marked; a copy holder could not be "
                                      "asked: the next walk brings its copy"
                                    : "damaged and dropped; a copy holder could not be "
                                      "asked: the next walk brings its copy");
    else if (s->marking)
        settled(s, JC_LOST, "damaged, and no copy holder had a good copy: kept, marked "
                                "damaged (reads answer 500) until a good copy replaces it");
    else
        settled(s, JC_LOST, "damaged, and no copy holder had a good copy: lost");
}

static void asked(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct scrub *s = arg;
    (void)body;
    (void)len;
    (void)err;
    s->unasked += status != 200;
    if (--s->asks == 0)
        iopool_submit(s->t->io, s->j->q, present_work, present_done, s);
}

/* The damaged copy is gone: the other holders send theirs (xfer.h), if
 * as new as it was. */
static void ask_holders(struct scrub *s)
{
    int copies = place_copies(s->mkey, s->klen, s->m.size);
    const struct cmap_node *h[CMAP_COPIES_MAX];
    struct cmap *m = cmap_current();
    int n = place_holders(m, s->mkey, s->klen, copies, h);
    char q[128];
    snprintf(q, sizeof(q), "newer=%llu&to=%s", (unsigned long long)(s->m.version - 1),
             s->t->node.id);
    s->asks = 1;
    s->unasked = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(h[i]->id, s->t->node.id))
            continue;
        s->asks++;
        char *url = xfer_url(s->t, "POST", h[i]->url, s->mkey, s->klen, q);
        nodeclient_request(s->hc, "POST", url, NULL, 0, NULL, ASK_TIMEOUT_MS, asked, s);
        free(url);
    }
    cmap_unref(m);
    asked(s, 200, NULL, 0, NULL);
}

static void local_restored(void *arg, int rc)
{
    struct scrub *s = arg;
    if (rc)
        ask_holders(s);
    else
        settled(s, JC_FIXED, NULL);
}

static void rebuilt(void *arg, int rc)
{
    struct scrub *s = arg;
    if (rc == 0)
        settled(s, JC_FIXED, NULL);
    else if (rc == -EIO)
        settled(s, JC_LOST, "damaged, and too few of its slices are left: lost");
    else
        settled(s, -1, "damaged and dropped; its slices could not be read: try again");
}

static void repair_work(void *arg)
{
    struct scrub *s = arg;
    struct store *st = &s->t->store;
    if (s->marking)              /* its bytes here, wrong: kept, marked (objmeta.h) */
        s->rc = store_mark_damaged(st, s->mkey, s->klen, s->m.uid);
    else
        s->rc = store_delete_if(st, store_pick(st, s->mkey, s->klen), s->mkey, s->klen,
                                s->m.uid);
}

static void repaired(void *arg)
{
    struct scrub *s = arg;
    struct bmd *b;
    const struct bmd_bucket *bk = xfer_key_bucket(s->mkey, s->klen, &b);
    struct bmd_ec ec;
    int copies = place_copies(s->mkey, s->klen, s->m.size), backed = bk && bmd_has_backend(bk);
    int sliced = bk && bmd_ec(bk, &ec) && s->m.size >= ec.limit;
    bmd_unref(b);
    if (s->rc == -ESTALE || s->rc == -ENOENT)   /* written again, or deleted, meanwhile */
        settled(s, -1, NULL);
    else if (s->rc == -EEXIST)
        settled(s, -1, "damaged, and still owed to its write-back backend: kept");
    else if (s->rc)
        settled(s, -1, "damaged, and cannot be marked or dropped");
    else if (copies > 1)         /* a copy on another drive first (localcopy.h), then holders */
        localcopy_restore(s->t, &s->lp, s->mkey, s->klen, s->m.version, local_restored, s);
    else if (sliced)
        ecode_rebuild(s->t, &s->lp, s->mkey, s->klen, rebuilt, s);
    else if (backed)             /* the next read fetches it again */
        settled(s, JC_FIXED, NULL);
    else if (s->marking)
        settled(s, JC_LOST, "its bytes do not match its checksum and it has no other "
                                "copy: kept, marked damaged (reads answer 500)");
    else
        settled(s, JC_LOST, "its data is gone, and it has no other copy: dropped");
}

/* A damaged copy: kept and marked while its bytes are here and neither a
 * backend nor slices hold the object (the last bytes of an object are
 * never dropped; a good copy of its version from another drive or a copy
 * holder replaces it: store_held_version), else dropped to be brought
 * again from redundancy; with its data gone and nothing to bring it
 * from, dropped (no ghost in the listing). */
static void repair(struct scrub *s)
{
    struct bmd *b;
    const struct bmd_bucket *bk = xfer_key_bucket(s->mkey, s->klen, &b);
    struct bmd_ec ec;
    int elsewhere = !bk || bmd_ec(bk, &ec) || bmd_has_backend(bk);
    bmd_unref(b);
    s->marking = !elsewhere && s->on_disk > 0;   /* its bytes are there, only wrong */
    iopool_submit_first(s->t->io, s->j->q, repair_work, repaired, s);
}

/* ---- a damaged slice: dropped, made again by its object's owner (ecode.h) -------------- */

static void slice_made(void *arg, int rc)
{
    struct scrub *s = arg;
    free(s->okey);
    s->okey = NULL;
    if (rc)
        settled(s, -1, "a damaged slice, dropped; its owner could not make it again now "
                         "(its next walk does)");
    else
        settled(s, JC_FIXED, NULL);
}

static void slice_remade(void *arg, int failed)
{
    slice_made(arg, failed ? -EIO : 0);
}

static void drop_slice_work(void *arg)   /* (or a copy on another drive) */
{
    struct scrub *s = arg;
    struct store *st = &s->t->store;
    s->rc = store_delete_if(st, where(s), s->mkey, s->klen, s->m.uid);
}

static void copy_made(void *arg, int failed)
{
    struct scrub *s = arg;
    if (failed)
        settled(s, -1, "a damaged copy on another drive, dropped; not made again now (the "
                         "next walk does)");
    else
        settled(s, JC_FIXED, NULL);
}

/* A damaged copy on another drive is gone: the object's copies are made
 * again (localcopy.h). */
static void copy_dropped(void *arg)
{
    struct scrub *s = arg;
    if (s->rc) {                 /* written again or gone meanwhile */
        settled(s, -1, NULL);
        return;
    }
    const char *okey = s->mkey + 1;   /* 'c' + the object's key */
    size_t oklen = s->klen - 1;
    struct cmap *m = cmap_current();
    int want = m ? place_local_copies(s->t, m, okey, oklen, s->m.size) : 0;
    cmap_unref(m);
    localcopy_sync(s->t, &s->lp, okey, oklen, want, copy_made, s);
}

static void slice_dropped(void *arg)
{
    struct scrub *s = arg;
    int idx;
    s->okey = s->rc ? NULL : slice_obj_key(s->mkey, s->klen, &s->oklen, &idx);
    if (!s->okey) {              /* written again or gone meanwhile */
        settled(s, -1, NULL);
        return;
    }
    const struct cmap_node *h[1];
    struct cmap *m = cmap_current();
    int k = place_holders(m, s->okey, s->oklen, 1, h);
    char *owner = k && strcmp(h[0]->id, s->t->node.id) ? xstrdup(h[0]->url) : NULL;
    cmap_unref(m);
    if (!k)
        slice_made(s, -EIO);
    else if (owner)
        slice_ask_ensure(s->t, &s->lp, owner, s->okey, s->oklen, slice_made, s);
    else
        ecode_ensure(s->t, &s->lp, s->okey, s->oklen, slice_remade, s);
    free(owner);
}

static void pace(struct scrub *s, uint64_t bytes)
{
    uint64_t now = mono_ms(), was = __atomic_load_n(&pace_ms, __ATOMIC_RELAXED), next;
    do                           /* scrubs on other workers move it too */
        next = (was > now ? was : now) + bytes * 1000 / ((uint64_t)s->t->conf.scrub_mbps << 20);
    while (!__atomic_compare_exchange_n(&pace_ms, &was, next, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
}

static void checked(void *arg)
{
    struct scrub *s = arg;
    pace(s, s->turn);
    if (s->v == V_MORE) {        /* the next turn, when the pace allows */
        next_key(s);
        return;
    }
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    if (s->v == V_GONE) {
        next_key(s);
        return;
    }
    job_add(s->j, JC_DONE, 1, s->got);
    if (s->v == V_ERR) {
        settled(s, -1, s->why);
        return;
    }
    if (s->v == V_OK) {
        next_key(s);
        return;
    }
    job_add(s->j, JC_FOUND, 1, 0);
    char *shown = s->copies ? xfer_key_show(s->mkey + 1, s->klen - 1)
                            : xfer_key_show(s->mkey, s->klen);
    log_warn("scrub: %s %s: %s: repairing",
             s->slices ? "a slice of" : s->copies ? "a copy on another drive of" : "object",
             shown, s->why);
    free(shown);
    if (s->slices || s->copies)
        iopool_submit_first(s->t->io, s->j->q, drop_slice_work,
                            s->slices ? slice_dropped : copy_dropped, s);
    else
        repair(s);
}

/* ---- ec-encode: an object owned here brought to its bucket's settings ---------------- */

static void spread_done(void *arg, int failed)
{
    struct scrub *s = arg;
    if (failed)
        settled(s, -1, "not every copy or slice was taken (the next walk tries again)");
    else
        settled(s, JC_DONE, NULL);
}

static void record_work(void *arg)
{
    struct scrub *s = arg;
    struct store *st = &s->t->store;
    s->v = store_get(st, store_pick(st, s->mkey, s->klen), s->mkey, s->klen, &s->m) ? V_GONE
                                                                                 : V_OK;
}

static void record_in(void *arg)
{
    struct scrub *s = arg;
    const struct cmap_node *h[1];
    struct cmap *m = cmap_current();
    int mine = s->v == V_OK && place_holders(m, s->mkey, s->klen, 1, h) == 1 &&
               !strcmp(h[0]->id, s->t->node.id);
    cmap_unref(m);
    if (!mine) {                 /* its owner brings it */
        next_key(s);
        return;
    }
    job_add(s->j, JC_OWNED, 1, 0);
    job_add(s->j, JC_BYTES, 0, s->m.size);
    mirror_spread(s->t, &s->lp, s->mkey, s->klen, s->m.size, 0, spread_done, s);
}

static void resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    next_key(arg);
}

/* The next turn of the copy being read, or the next copy. */
static void next_key(struct scrub *s)
{
    if (job_aborted(s->j)) {
        if (s->fd >= 0)
            close(s->fd);
        s->fd = -1;
        scrub_end(s);
        return;
    }
    if (s->fd < 0 && s->next == s->n) {
        next_batch(s);
        return;
    }
    uint64_t now = mono_ms(), due = __atomic_load_n(&pace_ms, __ATOMIC_RELAXED);
    if (due > now && !s->encode) {   /* (ec-encode reads nothing back) */
        struct timeval tv = {(time_t)((due - now) / 1000),
                             (suseconds_t)((due - now) % 1000) * 1000};
        evtimer_add(s->wait, &tv);
        return;
    }
    if (s->fd < 0) {
        s->klen = s->lens[s->next];
        s->mkey = s->keys[s->next++];
    }
    if (s->encode)
        iopool_submit(s->t->io, s->j->q, record_work, record_in, s);
    else
        iopool_submit(s->t->io, s->j->q, check_work, checked, s);
}

/* Run j (its bucket, "" for every one, and the prefix in j->kd, NULL for
 * none); it ends itself (job_ended). On j's loop. */
static void run(struct job *j, int encode)
{
    struct scrub *s = xcalloc(1, sizeof(*s));
    s->j = j;
    s->encode = encode;
    const char *prefix = j->kd;
    s->t = j->t;
    s->hc = j->hc;
    s->fd = -1;
    s->lp = (struct xfer_loop){j->base, j->q, j->hc};
    size_t pl = strlen(j->provider), bl = strlen(j->bucket), xl = prefix ? strlen(prefix) : 0;
    s->prefix = xmalloc(4 + pl + bl + xl);   /* (room for a copy's 'c') */
    s->prefix[0] = 'o';
    s->plen = 1;
    if (j->bucket[0]) {          /* 'o' provider NUL bucket NUL prefix */
        memcpy(s->prefix + 1, j->provider, pl + 1);
        memcpy(s->prefix + 2 + pl, j->bucket, bl + 1);
        memcpy(s->prefix + 3 + pl + bl, prefix, xl);
        s->plen = 3 + pl + bl + xl;
    }
    s->wait = evtimer_new(j->base, resume, s);
    next_batch(s);
}

static void scrub_run(struct job *j)
{
    run(j, 0);
}

static void encode_run(struct job *j)
{
    run(j, 1);
}

/* A scrub's or ec-encode's prefix ("prefix", "" for none) as j->kd. */
static int scrub_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const char *prefix = json_string_value(json_object_get(spec, "prefix"));
    j->kd = xstrdup(prefix ? prefix : "");
    return 0;
}

/* An ec-encode's bucket is erasure coded or mirrored. */
static int encode_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    struct bmd *bm = bmd_current();
    const struct bmd_bucket *bk = bmd_find(bm, j->provider, j->bucket);
    struct bmd_ec ec;
    int plain = bk && !bmd_ec(bk, &ec) && bmd_copies(bk) == 1;
    bmd_unref(bm);
    if (plain) {
        snprintf(err, errlen, "bucket %s is neither erasure coded nor mirrored", j->bucket);
        return -1;
    }
    return scrub_init(j, spec, err, errlen);
}

static void prefix_free(struct job *j)
{
    free(j->kd);
    j->kd = NULL;
}

const struct job_kind scrub_kind = {
    .name = "scrub",
    .init = scrub_init,
    .start = scrub_run,
    .free = prefix_free,
};

const struct job_kind scrub_encode_kind = {
    .name = "ec-encode",
    .init = encode_init,
    .start = encode_run,
    .free = prefix_free,
};

/* ---- the schedule ------------------------------------------------------------------ */

/* The schedule's state, made by scrub_start (t->scrub), handed to its
 * callbacks. */
struct scrub_sched {
    struct target *t;
    struct http_worker *w;
    struct event *timer;
    struct job *j;               /* the scheduled scrub under way */
    uint64_t last_ms;            /* wall time the last one ended (0: none yet) */
    int loaded;
};

static void last_work(void *arg)
{
    struct scrub_sched *sched = arg;
    struct store *st = &sched->t->store;
    char *v = NULL;
    size_t vl = 0;
    if (!sched->loaded && store_kv_get(st, &st->mp[0], LAST_KEY, strlen(LAST_KEY), &v, &vl) == 0) {
        char num[24];
        snprintf(num, sizeof(num), "%.*s", (int)(vl < 23 ? vl : 23), v);
        sched->last_ms = strtoull(num, NULL, 10);
    } else if (sched->loaded) {
        char num[24];
        snprintf(num, sizeof(num), "%llu", (unsigned long long)sched->last_ms);
        store_kv_put(st, &st->mp[0], LAST_KEY, strlen(LAST_KEY), num, strlen(num));
    }
    free(v);
}

static void last_done(void *arg)
{
    struct scrub_sched *sched = arg;
    if (sched->loaded)
        return;
    sched->loaded = 1;
    if (!sched->last_ms) {        /* never scrubbed: the first is an interval from now */
        sched->last_ms = wall_ns() / 1000000;
        iopool_submit(sched->t->io, sched->w->q, last_work, NULL, sched);
    }
}

/* A scrub ended: the scheduled one's end is remembered across restarts. */
static void scheduled_end(struct job *j)
{
    struct scrub_sched *sched = j->t->scrub;
    if (!sched || j != sched->j)
        return;
    sched->j = NULL;
    if (job_aborted(j))
        return;                  /* not a whole scrub: the next tick starts another */
    sched->last_ms = wall_ns() / 1000000;
    iopool_submit(sched->t->io, sched->w->q, last_work, NULL, sched);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct scrub_sched *sched = arg;
    uint64_t now = wall_ns() / 1000000;
    uint64_t every = (uint64_t)sched->t->conf.scrub_interval_h * 3600000u;
    if (sched->loaded && !sched->j && every && now >= sched->last_ms + every) {
        struct job *j = job_local_start(sched->t, sched->w, &scrub_kind, NULL);
        j->hc = ((struct target_worker *)sched->w->local)->hc;
        sched->j = j;
        log_info("scrub %s: the scheduled scrub of everything begins", j->id);
        scrub_run(j);
    }
    struct timeval tv = {SCHEDULE_CHECK_S, 0};
    evtimer_add(sched->timer, &tv);
}

void scrub_start(struct target *t, struct http_worker *w)
{
    struct scrub_sched *sched = xcalloc(1, sizeof(*sched));   /* lives as long as t */
    sched->t = t;
    sched->w = w;
    sched->timer = evtimer_new(w->base, tick, sched);
    struct timeval tv = {SCHEDULE_CHECK_S, 0};
    evtimer_add(sched->timer, &tv);
    t->scrub = sched;
    iopool_submit(t->io, w->q, last_work, last_done, sched);
}

/* ---- the copies kept marked damaged, for an operator -------------------------------- */

struct damaged {
    struct target *t;
    struct http_req *r;
    json_t *list;
    int more;                    /* past SCRUB_DAMAGED_MAX */
};

static int damaged_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct damaged *d = arg;
    struct objmeta m;
    const char *prov, *bucket, *name;
    size_t nl;
    if (objmeta_decode(v, vl, &m) || !(m.flags & OBJMETA_F_DAMAGED))
        return 0;
    if (json_array_size(d->list) >= SCRUB_DAMAGED_MAX) {
        d->more = 1;
        return 1;
    }
    char *key = xfer_key_dup(k, kl);
    if (!xfer_key_parts(key, kl, &prov, &bucket, &name, &nl))
        json_array_append_new(d->list, json_pack("{s:s, s:s, s:s%, s:I, s:I}", "provider", prov,
                                                 "bucket", bucket, "name", name, nl, "size",
                                                 (json_int_t)m.size, "version",
                                                 (json_int_t)m.version));
    free(key);
    return 0;
}

static void damaged_work(void *arg)
{
    struct damaged *d = arg;
    struct store *st = &d->t->store;
    int n = __atomic_load_n(&st->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && !d->more; i++)
        if (!st->mp[i].gone)
            store_kv_scan(st, &st->mp[i], "o", 1, damaged_one, d);
}

static void damaged_done(void *arg)
{
    struct damaged *d = arg;
    http_reply_json(d->r, 200, json_pack("{s:s, s:o, s:b}", "target", d->t->node.id, "damaged",
                                         d->list, "more", d->more));
    http_req_unref(d->r);
    free(d);
}

void scrub_damaged_report(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    (void)rest;
    (void)rlen;
    struct damaged *d = xcalloc(1, sizeof(*d));
    d->t = t;
    d->r = r;
    d->list = json_array();
    http_req_ref(r);
    iopool_submit(t->io, r->w->q, damaged_work, damaged_done, d);
}
