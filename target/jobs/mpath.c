/*
 * mpath: mountpaths added and removed at run time, and the resilver that
 * moves objects to where HRW places them now (see mpath.h).
 */
#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http.h"
#include "httpbody.h"
#include "iopool.h"
#include "job.h"
#include "log.h"
#include "loopq.h"
#include "mpath.h"
#include "reb.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xxh.h"

/* Run by this file: no hook of the framework's. */
const struct job_kind mpath_resilver_kind = {.name = "resilver"};

#define BATCH 32                 /* objects moved per turn on the I/O pool */
#define SCAN_MAX 4096            /* records looked at per turn */
#define RETRY_S 10               /* after a resilver with errors */
#define COPY_CHUNK (1u << 20)

/* What was changed at run time, as kept in state_dir/mountpaths.json. */
static struct {
    pthread_mutex_t mu;
    json_t *added, *removed, *emptying;   /* arrays of paths */
    char *path;
} kept = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL, NULL};

/* The resilver's state, made by mpath_start (t->resilver), handed to
 * its callbacks and turns. */
struct resilver {
    struct target *t;
    struct http_worker *w;
    struct event *retry;
    int running;                 /* the loop's */
    int again;                   /* atomic: a change came while it ran */
    int gen;                     /* the store's placement generation the walk began with */
    struct job *j;
};

static int in_list(json_t *a, const char *dir)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (!strcmp(json_string_value(v), dir))
            return (int)i + 1;
    return 0;
}

static void list_set(json_t *a, const char *dir, int on)
{
    int at = in_list(a, dir);
    if (on && !at)
        json_array_append_new(a, json_string(dir));
    else if (!on && at)
        json_array_remove(a, (size_t)at - 1);
}

/* Write mountpaths.json (the I/O pool, or start-up). */
static void save(void)
{
    pthread_mutex_lock(&kept.mu);
    json_t *j = json_pack("{s:O, s:O, s:O}", "added", kept.added, "removed", kept.removed,
                          "emptying", kept.emptying);
    char *text = json_dumps(j, JSON_INDENT(1));
    pthread_mutex_unlock(&kept.mu);
    int rc = file_write_atomic(kept.path, text, strlen(text), 1);
    if (rc)
        log_error("cannot write %s: %s", kept.path, strerror(-rc));
    free(text);
    json_decref(j);
}

static void save_work(void *arg)
{
    (void)arg;
    save();
}

static void push(char ***v, int *n, const char *s)
{
    *v = xrealloc(*v, sizeof(char *) * (size_t)(*n + 1));
    (*v)[(*n)++] = xstrdup(s);
}

void mpath_load(struct target *t, char ***placed, int *np, char ***off, int *noff)
{
    kept.path = xasprintf("%s/mountpaths.json", t->conf.state_dir);
    json_t *j = json_load_file(kept.path, 0, NULL);
    kept.added = json_incref(json_object_get(j, "added"));
    kept.removed = json_incref(json_object_get(j, "removed"));
    kept.emptying = json_incref(json_object_get(j, "emptying"));
    json_decref(j);
    if (!json_is_array(kept.added))
        kept.added = json_array();
    if (!json_is_array(kept.removed))
        kept.removed = json_array();
    if (!json_is_array(kept.emptying))
        kept.emptying = json_array();
    *placed = *off = NULL;
    *np = *noff = 0;
    for (int i = 0; i < t->conf.n_mountpaths; i++)
        if (i == 0 || !in_list(kept.removed, t->conf.mountpaths[i]))
            push(placed, np, t->conf.mountpaths[i]);
    size_t i;
    json_t *v;
    json_array_foreach(kept.added, i, v) {
        int dup = 0;
        for (int k = 0; k < *np; k++)
            dup |= !strcmp((*placed)[k], json_string_value(v));
        if (!dup)
            push(placed, np, json_string_value(v));
    }
    json_array_foreach(kept.emptying, i, v)
        push(off, noff, json_string_value(v));
}

/* ---- the resilver ------------------------------------------------------------------------ */

/* Copy mkey's object (record m) from src to dst, checked against m's
 * checksum; then drop it on src. 0, or -errno. The I/O pool. */
static int move_object(struct resilver *rs, struct store_mp *src, struct store_mp *dst,
                       const char *mkey, size_t klen, struct objmeta *m)
{
    struct store *s = &rs->t->store;
    int in = store_data_open(src, mkey, klen, m);
    if (in < 0) {
        store_note_error(src, in);
        return in == -ENOENT ? 0 : in;   /* replaced or gone meanwhile */
    }
    uint64_t uid;
    char work[PATH_MAX];
    int out = store_work_open(dst, &uid, work, sizeof(work));
    if (out < 0) {
        close(in);
        store_note_error(dst, out);
        return out;
    }
    char *buf = xmalloc(COPY_CHUNK);
    XXH3_state_t *xs = XXH3_createState();
    XXH3_64bits_reset(xs);
    uint64_t got = 0;
    int rc = 0;
    for (;;) {
        ssize_t r = read(in, buf, COPY_CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : 0;
            if (r < 0)
                store_note_error(src, rc);
            break;
        }
        XXH3_64bits_update(xs, buf, (size_t)r);
        got += (uint64_t)r;
        for (ssize_t w = 0, k; w < r; w += k) {
            k = write(out, buf + w, (size_t)(r - w));
            if (k < 0 && errno == EINTR) {
                k = 0;
                continue;
            }
            if (k < 0) {
                rc = -errno;
                store_note_error(dst, rc);
                break;
            }
        }
        if (rc)
            break;
    }
    if (!rc && (got != m->size || XXH3_64bits_digest(xs) != m->cksum)) {
        log_error("mountpath %s: the object in %s does not match its checksum: not moved",
                  src->dir, mkey + 1);
        rc = -EIO;
    }
    XXH3_freeState(xs);
    free(buf);
    close(in);
    if (rc) {
        close(out);
        unlink(work);
        return rc;
    }
    /* a copy owed to its write-back backend takes its record along */
    char *w = store_side_key('w', mkey, klen), *wv = NULL;
    size_t wl = 0;
    int owed = store_kv_get(s, src, w, klen, &wv, &wl) == 0;
    struct objmeta nm = *m;
    nm.uid = uid;
    struct store_x x = {.keep_version = m->version};
    if (owed) {
        x.key = w;
        x.key_len = klen;
        x.val = wv;
        x.val_len = wl;
    }
    rc = store_commit_x(s, dst, mkey, klen, work, out, &nm, &x);
    if (rc == 0 || rc == -EALREADY) {
        struct store_x dx = {.drop = owed ? w : NULL, .drop_len = owed ? klen : 0};
        int d = store_delete_x(s, src, mkey, klen, m->uid, &dx);
        if (d == -ESTALE)        /* written there again meanwhile: the walk goes again */
            __atomic_store_n(&rs->again, 1, __ATOMIC_RELAXED);
        /* a failed drive may refuse even that: reads find the newest copy */
        rc = d == -ESTALE || d == -ENOENT || __atomic_load_n(&src->failed, __ATOMIC_RELAXED)
                 ? 0 : d;
    }
    free(wv);
    free(w);
    return rc;
}

struct turn {
    struct resilver *rs;
    int mp_i;
    int phase;                   /* 0 objects, 1 tombstones, 2 slices (moved as objects) */
    char *after;                 /* the walk goes on after this key */
    size_t after_len;
    char *last;                  /* the last key this turn looked at */
    size_t last_len;
    char *keys[BATCH];
    size_t lens[BATCH];
    int n, scanned, end;
    uint64_t moved, bytes, errors;
};

static int collect(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct turn *u = arg;
    struct resilver *rs = u->rs;
    (void)v;
    (void)vl;
    free(u->last);               /* not after: the scan compares against it */
    u->last = xmalloc(kl);
    memcpy(u->last, k, kl);
    u->last_len = kl;
    char *mkey = xmalloc(kl);
    memcpy(mkey, k, kl);
    if (u->phase == 1)
        mkey[0] = 'o';           /* a tombstone's name */
    if (store_place(&rs->t->store, mkey, kl) != &rs->t->store.mp[u->mp_i]) {
        u->keys[u->n] = mkey;
        u->lens[u->n++] = kl;
    } else {
        free(mkey);
    }
    return u->n == BATCH || ++u->scanned >= SCAN_MAX;
}

static void turn_work(void *arg)
{
    struct turn *u = arg;
    struct resilver *rs = u->rs;
    struct store *s = &rs->t->store;
    struct store_mp *src = &s->mp[u->mp_i];
    static const char *const prefix[] = {"o", "t", "s"};   /* objects, tombstones, slices */
    u->end = !store_kv_scan_after(s, src, prefix[u->phase], 1, u->after, u->after_len,
                                  collect, u);
    if (u->last) {
        free(u->after);
        u->after = u->last;
        u->after_len = u->last_len;
        u->last = NULL;
    }
    for (int i = 0; i < u->n; i++) {
        struct store_mp *dst = store_place(s, u->keys[i], u->lens[i]);
        struct objmeta m;
        uint64_t tv;
        int rc = 0;
        if (u->phase != 1 && store_get(s, src, u->keys[i], u->lens[i], &m) == 0) {
            rc = move_object(rs, src, dst, u->keys[i], u->lens[i], &m);
            if (!rc) {
                u->moved++;
                u->bytes += m.size;
            }
        } else if (u->phase == 1 && store_tomb_get(s, src, u->keys[i], u->lens[i], &tv) == 0) {
            struct store_x x = {.keep_version = tv};
            rc = store_delete_x(s, dst, u->keys[i], u->lens[i], 0, &x);
            rc = rc == -ENOENT || rc == -EALREADY ? 0 : rc;
            char *tk = store_side_key('t', u->keys[i], u->lens[i]);
            if (!rc && store_kv_del(s, src, tk, u->lens[i]) && !src->failed)
                rc = -EIO;
            free(tk);
        }
        u->errors += rc != 0;
        free(u->keys[i]);
    }
}

static void turn_next(struct resilver *rs, struct turn *u);

static void rs_end(struct resilver *rs, uint64_t errors)
{
    job_ended(rs->j);
    rs->j = NULL;
    rs->running = 0;
    struct store *s = &rs->t->store;
    if (__atomic_exchange_n(&rs->again, 0, __ATOMIC_RELAXED)) {
        turn_next(rs, NULL);     /* a change came meanwhile: walk again */
        return;
    }
    if (errors) {
        struct timeval tv = {RETRY_S, 0};
        evtimer_add(rs->retry, &tv);
        return;
    }
    if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != rs->gen) {
        turn_next(rs, NULL);     /* the placement changed under the walk: again */
        return;
    }
    /* everything sits where HRW places it: removed mountpaths are empty,
     * which each confirms under its lock before it is closed */
    int n = __atomic_load_n(&s->n, __ATOMIC_ACQUIRE);
    int changed = 0, left = 0;
    for (int i = 1; i < n; i++) {
        struct store_mp *mp = &s->mp[i];
        if (mp->enabled || mp->failed || mp->gone)
            continue;
        if (!store_mp_retire(s, i)) {
            left = 1;            /* a write landed after the walk passed */
            continue;
        }
        pthread_mutex_lock(&kept.mu);
        list_set(kept.emptying, mp->dir, 0);
        pthread_mutex_unlock(&kept.mu);
        changed = 1;
        log_info("mountpath %s is empty: closed for good", mp->dir);
    }
    if (changed)
        iopool_submit(rs->t->io, NULL, save_work, NULL, NULL);
    if (left) {                  /* walk again, a while later */
        struct timeval tv = {RETRY_S, 0};
        evtimer_add(rs->retry, &tv);
        return;
    }
    __atomic_store_n(&s->moving, 0, __ATOMIC_RELEASE);
    reb_stray(rs->t);            /* copies on other drives follow the objects (localcopy.h) */
}

static void turn_done(void *arg)
{
    struct turn *u = arg;
    struct resilver *rs = u->rs;
    job_add(rs->j, JC_MOVED, u->moved, u->bytes);
    job_add(rs->j, JC_DONE, (uint64_t)u->n, 0);
    __atomic_add_fetch(&rs->j->pos, (uint64_t)u->scanned + (uint64_t)u->n, __ATOMIC_RELAXED);
    if (u->errors)
        job_note_error(rs->j, "", "objects could not be moved (see the log)");
    u->n = u->scanned = 0;
    u->moved = u->bytes = u->errors = 0;
    if (u->end) {
        free(u->after);
        u->after = NULL;
        u->after_len = 0;
        if (++u->phase == 3) {
            u->phase = 0;
            u->mp_i++;
        }
    }
    turn_next(rs, u);
}

/* The next turn of the walk (u NULL: a new walk). On rs's loop. */
static void turn_next(struct resilver *rs, struct turn *u)
{
    struct store *s = &rs->t->store;
    if (!u) {
        rs->running = 1;
        rs->gen = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
        rs->j = job_local_start(rs->t, rs->w, &mpath_resilver_kind, NULL);
        u = xcalloc(1, sizeof(*u));
        u->rs = rs;
        log_info("resilver begins: objects move to the mountpaths HRW places them on");
    }
    while (u->mp_i < __atomic_load_n(&s->n, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&s->mp[u->mp_i].gone, __ATOMIC_RELAXED))
        u->mp_i++;
    if (u->mp_i >= __atomic_load_n(&s->n, __ATOMIC_ACQUIRE) ||
        job_aborted(rs->j)) {
        uint64_t errors = job_counter(rs->j, JC_ERRORS), moved = job_counter(rs->j, JC_MOVED);
        log_info("resilver ends: %llu objects moved, %llu errors", (unsigned long long)moved,
                 (unsigned long long)errors);
        free(u->after);
        free(u);
        rs_end(rs, errors + (uint64_t)job_aborted(rs->j));
        return;
    }
    iopool_submit(rs->t->io, rs->w->q, turn_work, turn_done, u);
}

/* A resilver is due (changed: a change was made, so whatever the store
 * says), or maybe (start-up, a retry). On rs's loop. */
static void kick_now(struct resilver *rs, int changed)
{
    if (changed)
        __atomic_store_n(&rs->t->store.moving, 1, __ATOMIC_RELEASE);
    if (rs->running)
        __atomic_store_n(&rs->again, 1, __ATOMIC_RELAXED);
    else if (__atomic_load_n(&rs->t->store.moving, __ATOMIC_ACQUIRE))
        turn_next(rs, NULL);
}

static void kick_changed(void *arg)
{
    kick_now(arg, 1);
}

static void kick_maybe(void *arg)
{
    kick_now(arg, 0);
}

/* A change was made (any thread). */
static void kick(struct resilver *rs)
{
    if (rs)
        loopq_post(rs->w->q, kick_changed, rs);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    kick_now(arg, 0);
}

/* The store disabled a failing mountpath (any thread). */
static void failed(void *arg, struct store_mp *mp)
{
    (void)mp;
    kick(arg);
}

void mpath_start(struct target *t, struct http_worker *w)
{
    struct resilver *rs = xcalloc(1, sizeof(*rs));   /* lives as long as t */
    rs->t = t;
    rs->w = w;
    rs->retry = evtimer_new(w->base, retry_cb, rs);
    t->resilver = rs;
    t->store.on_failed_arg = rs;
    __atomic_store_n(&t->store.on_failed, failed, __ATOMIC_RELEASE);
    loopq_post(w->q, kick_maybe, rs);   /* removed before a restart, not yet empty */
}

/* ---- the internal API ------------------------------------------------------------------- */

struct change {
    struct target *t;
    struct http_req *r;
    char *dir;
    int rc;
    char err[512];
};

static void add_work(void *arg)
{
    struct change *c = arg;
    if (store_mp_add(&c->t->store, c->dir, c->err, sizeof(c->err)) < 0) {
        c->rc = -EINVAL;
        return;
    }
    pthread_mutex_lock(&kept.mu);
    list_set(kept.added, c->dir, 1);
    list_set(kept.removed, c->dir, 0);
    list_set(kept.emptying, c->dir, 0);
    pthread_mutex_unlock(&kept.mu);
    save();
}

static void add_done(void *arg)
{
    struct change *c = arg;
    if (c->rc)
        http_reply_error(c->r, 409, "%s", c->err);
    else
        http_reply_json(c->r, 201, json_pack("{s:s, s:s}", "path", c->dir, "state", "enabled"));
    if (!c->rc)
        kick(c->t->resilver);
    http_req_unref(c->r);
    free(c->dir);
    free(c);
}

static void add_body(struct http_req *r, json_t *j)
{
    struct target *t = r->w->ctx;
    const char *dir = json_string_value(json_object_get(j, "path"));
    if (!dir || dir[0] != '/' || strlen(dir) >= PATH_MAX / 2 || strstr(dir, "/../") ||
        strchr(dir, ',')) {
        json_decref(j);
        http_reply_error(r, 400, "the body is {\"path\": \"/an/absolute/directory\"}");
        return;
    }
    struct change *c = xcalloc(1, sizeof(*c));
    c->t = t;
    c->r = r;
    c->dir = xstrdup(dir);
    json_decref(j);
    http_req_ref(r);
    iopool_submit(t->io, r->w->q, add_work, add_done, c);
}

static void remove_one(struct http_req *r)
{
    struct target *t = r->w->ctx;
    char dir[PATH_MAX];
    if (http_query_get(r, "path", dir, sizeof(dir)) <= 0) {
        http_reply_error(r, 400, "which mountpath: ?path=/the/directory");
        return;
    }
    int i = store_mp_index(&t->store, dir);
    if (i < 0) {
        http_reply_error(r, 404, "no mountpath %s on this target", dir);
        return;
    }
    if (i == 0) {
        http_reply_error(r, 409, "mountpath %s keeps this target's own records (jobs, pins): "
                                 "it cannot be removed", dir);
        return;
    }
    if (store_mp_enable(&t->store, i, 0)) {
        http_reply_error(r, 409, "mountpath %s is the last one objects can go to", dir);
        return;
    }
    pthread_mutex_lock(&kept.mu);
    list_set(kept.added, dir, 0);
    list_set(kept.removed, dir, 1);
    list_set(kept.emptying, dir, 1);
    pthread_mutex_unlock(&kept.mu);
    iopool_submit(t->io, NULL, save_work, NULL, NULL);
    kick(t->resilver);
    log_info("mountpath %s removed: its objects move to the others", dir);
    http_reply_json(r, 202, json_pack("{s:s, s:s}", "path", dir, "state", "emptying"));
}

void mpath_handle(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    (void)rest;
    if (rlen) {
        http_reply_error(r, 404, "no such endpoint");
        return;
    }
    if (r->method == HTTP_M_POST) {
        node_read_json(r, add_body);
    } else if (r->method == HTTP_M_DELETE) {
        remove_one(r);
    } else if (r->method == HTTP_M_GET) {
        json_t *a = json_array();
        int n = __atomic_load_n(&t->store.n, __ATOMIC_ACQUIRE);
        for (int i = 0; i < n; i++) {
            const struct store_mp *mp = &t->store.mp[i];
            if (mp->gone)
                continue;
            const char *st = mp->failed ? "failed" : mp->enabled ? "enabled" : "emptying";
            json_array_append_new(a, json_pack("{s:s, s:s, s:i}", "path", mp->dir, "state", st,
                                               "io_errors", mp->io_errors));
        }
        http_reply_json(r, 200, json_pack("{s:s, s:o, s:b}", "target", t->node.id,
                                          "mountpaths", a, "resilvering",
                                          __atomic_load_n(&t->store.moving, __ATOMIC_ACQUIRE)));
    } else {
        http_resp_header_str(r, "Allow", "GET, POST, DELETE");
        http_reply_error(r, 405, "GET, POST or DELETE");
    }
}
