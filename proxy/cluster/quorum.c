/*
 * quorum: the proxies' Raft group (see quorum.h).
 *
 * The state machine is the pair (map, BMD): an entry is {"cmap": ...,
 * "bmd": ...} with either or both, installed by node_accept_json on every
 * proxy when committed (an older version than the installed one is
 * ignored, so replaying the log at start is harmless). A snapshot is the
 * current pair. Changes arrive through an inbox from any thread; the
 * quorum thread edits copies of the newest versions, numbers them and
 * proposes them, so changes made at once never share a version.
 */
#include "quorum.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "bmd.h"
#include "cmap.h"
#include "hrw.h"
#include "http.h"
#include "log.h"
#include "loopq.h"
#include "proxy.h"
#include "raftnet.h"
#include "url.h"
#include "util.h"

#define TICK_MS 100

enum lead { LEAD_NO, LEAD_BARRIER, LEAD_CLAIM, LEAD_READY };

struct quorum {
    struct proxy *p;
    pthread_t thread;
    uv_loop_t loop;
    uv_async_t wake;
    uv_timer_t timer;
    struct raft raft;
    struct raft_io io;
    struct raft_uv_transport tr;
    struct raft_fsm fsm;
    raft_id id;
    char *dir;

    pthread_mutex_t mu;          /* inbox, stopping, status */
    struct quorum_change *inbox, **inbox_tail;
    int stopping;
    json_t *status;

    /* the quorum thread's */
    enum lead lead;
    raft_term lead_term;         /* the term this proxy leads in */
    int ready;                   /* a primary is known (atomic) */
    uint64_t term_gen;           /* counts leaderships: a late answer of an old one is ignored */
    struct cmap *latest_m;       /* the newest proposed, while it may be newer than current */
    struct bmd *latest_b;
    int changing;                /* a membership change is under way */
    struct raft_change chg;
};

struct pending {
    struct raft_apply req;
    struct quorum *q;
    struct quorum_change *c;
};

static raft_id id_of(const char *node_id)
{
    uint64_t h = hrw_hash(node_id, strlen(node_id));
    return h ? h : 1;
}

/* ---- the state machine ------------------------------------------------------------ */

/* j as a buffer of Raft's, padded with spaces to a multiple of 8 bytes:
 * libraft's encoding of entries assumes that length. */
static struct raft_buffer entry_of(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    size_t len = strlen(s);
    struct raft_buffer buf = {.len = (len + 7) & ~(size_t)7};
    if (!(buf.base = raft_malloc(buf.len)))
        abort();
    memcpy(buf.base, s, len);
    memset((char *)buf.base + len, ' ', buf.len - len);
    free(s);
    return buf;
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
    struct quorum *q = fsm->data;
    char err[256];
    *result = NULL;
    json_t *j = json_loadb(buf->base, buf->len, 0, NULL);
    if (!j || node_accept_json(&q->p->node, j, err, sizeof(err)))
        log_error("consensus entry not applied: %s", j ? err : "not JSON");
    json_decref(j);
    return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
    (void)fsm;
    struct cmap *m = cmap_current();
    struct bmd *b = bmd_current();
    json_t *j = json_pack("{s:o, s:o}", "cmap", m ? cmap_to_json(m) : json_null(), "bmd",
                          bmd_to_json(b));
    cmap_unref(m);
    bmd_unref(b);
    if (!(*bufs = raft_malloc(sizeof(**bufs))))
        abort();
    (*bufs)[0] = entry_of(j);
    *n_bufs = 1;
    return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct raft_buffer one = *buf;
    void *ignored;
    int rc = fsm_apply(fsm, &one, &ignored);
    raft_free(buf->base);
    return rc;
}

/* ---- changes ------------------------------------------------------------------------ */

static void deliver(void *arg)
{
    struct quorum_change *c = arg;
    c->done(c, c->status, c->status ? c->err : NULL);
}

static void finish(struct quorum_change *c, int status, const char *err)
{
    c->status = status;
    if (status && err && err != c->err)
        snprintf(c->err, sizeof(c->err), "%s", err);
    if (c->q)
        loopq_post(c->q, deliver, c);
    else
        deliver(c);              /* the quorum thread's own */
}

static void forget_latest(struct quorum *q)
{
    cmap_unref(q->latest_m);
    bmd_unref(q->latest_b);
    q->latest_m = NULL;
    q->latest_b = NULL;
}

static void applied(struct raft_apply *req, int status, void *result)
{
    struct pending *pd = req->data;
    (void)result;
    if (status) {
        char e[160];
        snprintf(e, sizeof(e), "the proxies did not commit the change: %s",
                 raft_strerror(status));
        forget_latest(pd->q);
        finish(pd->c, 503, e);
    } else {
        finish(pd->c, 0, NULL);
    }
    free(pd);
}

/* The newest map (never NULL: a new cluster's first is empty) and BMD, as
 * copies to edit. */
static void newest(struct quorum *q, struct cmap **m, struct bmd **b)
{
    struct cmap *cm = cmap_current();
    struct bmd *cb = bmd_current();
    const struct cmap *bm = q->latest_m && (!cm || q->latest_m->snap.version > cm->snap.version)
                                ? q->latest_m : cm;
    const struct bmd *bb = q->latest_b && q->latest_b->snap.version > cb->snap.version
                               ? q->latest_b : cb;
    if (bm) {
        *m = cmap_clone(bm);
    } else {
        uint8_t r[8];
        char uuid[17];
        rand_bytes(r, sizeof(r));
        hex_encode(r, sizeof(r), uuid);
        *m = cmap_new(uuid, q->p->node.id, 0);
    }
    *b = bmd_clone(bb);
    cmap_unref(cm);
    bmd_unref(cb);
}

static void propose(struct quorum *q, struct quorum_change *c, int internal)
{
    if (!internal && q->lead != LEAD_READY) {
        finish(c, 503, "this proxy is not the primary");
        return;
    }
    struct cmap *m;
    struct bmd *b;
    newest(q, &m, &b);
    int64_t mv = m->snap.version, bv = b->snap.version;
    c->changed = 0;
    int refused = c->edit(c, m, b);
    if (refused || !c->changed) {
        cmap_unref(m);
        bmd_unref(b);
        finish(c, refused, c->err);
        return;
    }
    json_t *j = json_object();
    if (c->changed & QUORUM_BMD) {
        if (b->snap.version <= bv)
            b->snap.version = bv + 1;
        c->version = b->snap.version;
        json_object_set_new(j, "bmd", bmd_to_json(b));
    }
    if (c->changed & QUORUM_CMAP) {
        if (m->snap.version <= mv)
            m->snap.version = mv + 1;
        c->version = m->snap.version;
        json_object_set_new(j, "cmap", cmap_to_json(m));
    }
    struct raft_buffer buf = entry_of(j);
    struct pending *pd = xcalloc(1, sizeof(*pd));
    pd->q = q;
    pd->c = c;
    pd->req.data = pd;
    int rc = raft_apply(&q->raft, &pd->req, &buf, 1, applied);
    if (rc) {
        raft_free(buf.base);
        free(pd);
        cmap_unref(m);
        bmd_unref(b);
        finish(c, 503, rc == RAFT_NOTLEADER ? "this proxy is not the primary"
                                            : raft_strerror(rc));
        return;
    }
    if (c->changed & QUORUM_CMAP) {
        cmap_unref(q->latest_m);
        q->latest_m = m;
    } else {
        cmap_unref(m);
    }
    if (c->changed & QUORUM_BMD) {
        bmd_unref(q->latest_b);
        q->latest_b = b;
    } else {
        bmd_unref(b);
    }
}

void quorum_propose(struct proxy *p, struct quorum_change *c)
{
    struct quorum *q = __atomic_load_n(&p->quorum, __ATOMIC_ACQUIRE);
    c->next = NULL;
    if (!q) {                    /* not started yet */
        finish(c, 503, "this proxy is not the primary");
        return;
    }
    pthread_mutex_lock(&q->mu);
    int stopping = q->stopping;
    if (!stopping) {
        *q->inbox_tail = c;
        q->inbox_tail = &c->next;
        uv_async_send(&q->wake);     /* under mu: wake is closed only once stopping is set */
    }
    pthread_mutex_unlock(&q->mu);
    if (stopping)
        finish(c, 503, "this proxy is shutting down");
}

/* ---- leadership -------------------------------------------------------------------- */

/* A new leader's barrier, then its claim: the first commit of its term,
 * a map naming it primary. */
struct claim {
    struct quorum_change c;      /* first */
    struct raft_barrier barrier;
    struct quorum *q;
    uint64_t gen;
};

/* The profiles of this proxy's backends_file into b, where they differ:
 * the cluster's configuration, applied by each new primary (a profile
 * that no longer fits a bucket naming it is left as it was, with a
 * warning). 1 when b changed. */
static int claim_profiles(struct quorum *q, struct bmd *b)
{
    const char *name;
    json_t *p;
    int ch = 0;
    char err[200];
    json_object_foreach(q->p->conf.backends, name, p) {
        json_t *was = (json_t *)bmd_profile(b, name);
        if (json_equal(was, p))
            continue;
        json_incref(was);        /* NULL-safe */
        bmd_profile_set(b, name, p);
        if (bmd_buckets_check(b, err, sizeof(err))) {
            log_warn("backend profile %s of backends_file not applied: %s", name, err);
            if (was)
                bmd_profile_set(b, name, was);
            else
                bmd_profile_del(b, name);
        } else {
            log_info("backend profile %s set from backends_file", name);
            ch = 1;
        }
        json_decref(was);
    }
    return ch;
}

static int claim_edit(struct quorum_change *c, struct cmap *m, struct bmd *b)
{
    struct quorum *q = ((struct claim *)c)->q;
    struct node *n = &q->p->node;
    int chb = claim_profiles(q, b);
    int ch = cmap_put_node(m, n->id, NODE_PROXY, q->p->conf.public_url);
    ch |= cmap_set_raft(m, n->id, n->raft_addr);
    if (strcmp(m->primary, n->id)) {
        free(m->primary);
        m->primary = xstrdup(n->id);
        ch = 1;
    }
    c->changed = (ch ? QUORUM_CMAP : 0) | (chb ? QUORUM_BMD : 0);
    return 0;
}

static void claimed(struct quorum_change *c, int status, const char *err)
{
    struct claim *cl = (struct claim *)c;
    struct quorum *q = cl->q;
    int current = cl->gen == q->term_gen && q->lead == LEAD_CLAIM;
    free(cl);
    if (!current)
        return;
    if (status) {
        log_warn("consensus: could not claim the primary role: %s", err);
        q->lead = LEAD_NO;
        return;
    }
    q->lead = LEAD_READY;
    __atomic_store_n(&q->p->node.is_primary, 1, __ATOMIC_RELEASE);
    log_info("this proxy is the primary (term %llu)", (unsigned long long)q->raft.current_term);
}

static void barrier_done(struct raft_barrier *req, int status)
{
    struct claim *cl = req->data;
    struct quorum *q = cl->q;
    if (cl->gen != q->term_gen || q->lead != LEAD_BARRIER) {
        free(cl);
        return;
    }
    if (status || raft_state(&q->raft) != RAFT_LEADER) {
        q->lead = LEAD_NO;       /* tried again at the next tick */
        free(cl);
        return;
    }
    /* everything committed before this term is applied: claim on top */
    q->lead = LEAD_CLAIM;
    cl->c.edit = claim_edit;
    cl->c.done = claimed;
    cl->c.q = NULL;
    propose(q, &cl->c, 1);
}

static void lead_start(struct quorum *q)
{
    struct claim *cl = xcalloc(1, sizeof(*cl));
    cl->q = q;
    cl->gen = ++q->term_gen;
    cl->barrier.data = cl;
    q->lead = LEAD_BARRIER;
    q->lead_term = q->raft.current_term;
    if (raft_barrier(&q->raft, &cl->barrier, barrier_done)) {
        q->lead = LEAD_NO;
        free(cl);
    }
}

static void lose_lead(struct quorum *q)
{
    if (q->lead == LEAD_READY)
        log_warn("this proxy is no longer the primary");
    q->lead = LEAD_NO;
    q->term_gen++;
    __atomic_store_n(&q->p->node.is_primary, 0, __ATOMIC_RELEASE);
    forget_latest(q);
}

static void member_changed(struct raft_change *req, int status)
{
    struct quorum *q = req->data;
    q->changing = 0;
    if (status)
        log_warn("consensus membership change: %s", raft_strerror(status));
}

/* The primary makes every proxy of the map that gave its address a voter,
 * one change at a time. */
static void reconcile(struct quorum *q)
{
    if (q->changing || q->raft.configuration_uncommitted_index)
        return;
    struct cmap *m = cmap_current();
    for (int i = 0; m && i < m->n && !q->changing; i++) {
        const struct cmap_node *nd = &m->nodes[i];
        if (nd->role != NODE_PROXY || !nd->raft || (nd->flags & CMAP_FLAG_DOWN))
            continue;
        raft_id id = id_of(nd->id);
        const struct raft_server *sv = NULL, *same_addr = NULL;
        for (unsigned k = 0; k < q->raft.configuration.n; k++) {
            const struct raft_server *x = &q->raft.configuration.servers[k];
            if (x->id == id)
                sv = x;
            else if (!strcmp(x->address, nd->raft) && x->id != q->id)
                same_addr = x;
        }
        int rc = 0;
        q->chg.data = q;
        if (same_addr || (sv && id != q->id && strcmp(sv->address, nd->raft))) {
            /* a proxy took another's address, or moved: the old entry goes
             * (and the proxy comes back at its new address next time) */
            const struct raft_server *old = same_addr ? same_addr : sv;
            log_info("consensus: removing %s (proxy %s is there now)", old->address, nd->id);
            rc = raft_remove(&q->raft, &q->chg, old->id, member_changed);
        } else if (!sv) {
            log_info("consensus: adding proxy %s (%s)", nd->id, nd->raft);
            rc = raft_add(&q->raft, &q->chg, id, nd->raft, member_changed);
        } else if (sv->role != RAFT_VOTER) {
            log_info("consensus: proxy %s votes", nd->id);
            rc = raft_assign(&q->raft, &q->chg, id, RAFT_VOTER, member_changed);
        } else {
            continue;
        }
        if (rc)
            log_warn("consensus membership change: %s", raft_strerror(rc));
        else
            q->changing = 1;
    }
    cmap_unref(m);
}

static const char *const state_names[] = {"unavailable", "follower", "candidate", "leader"};

/* What GET /v1/cluster/quorum shows, refreshed every tick. */
static void publish(struct quorum *q)
{
    struct cmap *m = cmap_current();
    raft_id lid;
    const char *laddr;
    raft_leader(&q->raft, &lid, &laddr);
    json_t *voters = json_array();
    const char *leader = NULL;
    for (unsigned k = 0; k < q->raft.configuration.n; k++) {
        const struct raft_server *sv = &q->raft.configuration.servers[k];
        const char *name = sv->address;
        for (int i = 0; m && i < m->n; i++)
            if (m->nodes[i].role == NODE_PROXY && id_of(m->nodes[i].id) == sv->id)
                name = m->nodes[i].id;
        if (sv->id == lid)
            leader = name;
        if (sv->role == RAFT_VOTER)
            json_array_append_new(voters, json_string(name));
    }
    /* ready: this proxy is the primary, or the map names the leader */
    const struct cmap_node *pr = m ? cmap_find(m, m->primary) : NULL;
    int ready = q->lead == LEAD_READY || (lid && pr && id_of(pr->id) == lid);
    __atomic_store_n(&q->ready, ready, __ATOMIC_RELEASE);
    unsigned st = raft_state(&q->raft);
    json_t *j = json_pack("{s:s, s:s, s:b, s:s?, s:I, s:I, s:o}", "id", q->p->node.id, "state",
                          st < 4 ? state_names[st] : "?", "primary", q->lead == LEAD_READY,
                          "leader", leader, "term", (json_int_t)q->raft.current_term,
                          "applied", (json_int_t)raft_last_applied(&q->raft), "voters", voters);
    cmap_unref(m);
    pthread_mutex_lock(&q->mu);
    json_decref(q->status);
    q->status = j;
    pthread_mutex_unlock(&q->mu);
}

static void tick(uv_timer_t *t)
{
    struct quorum *q = t->data;
    int leader = raft_state(&q->raft) == RAFT_LEADER;
    if (q->lead != LEAD_NO && (!leader || q->raft.current_term != q->lead_term)) {
        lose_lead(q);            /* lost, or lost and won again between two ticks: */
    } else if (leader && q->lead == LEAD_NO) {
        lead_start(q);
    }
    if (q->lead == LEAD_READY)
        reconcile(q);
    publish(q);
}

/* ---- the thread ---------------------------------------------------------------------- */

static void raft_closed(struct raft *r)
{
    struct quorum *q = r->data;
    raft_uv_close(&q->io);
    raftnet_free(&q->tr);
    uv_close((uv_handle_t *)&q->timer, NULL);
    uv_close((uv_handle_t *)&q->wake, NULL);
}

static void woken(uv_async_t *a)
{
    struct quorum *q = a->data;
    pthread_mutex_lock(&q->mu);
    struct quorum_change *c = q->inbox;
    q->inbox = NULL;
    q->inbox_tail = &q->inbox;
    int stopping = q->stopping;
    pthread_mutex_unlock(&q->mu);
    while (c) {
        struct quorum_change *next = c->next;
        if (stopping)
            finish(c, 503, "this proxy is shutting down");
        else
            propose(q, c, 0);
        c = next;
    }
    if (stopping == 1) {
        pthread_mutex_lock(&q->mu);
        q->stopping = 2;         /* once */
        pthread_mutex_unlock(&q->mu);
        uv_timer_stop(&q->timer);
        lose_lead(q);
        raft_close(&q->raft, raft_closed);
    }
}

static void *quorum_main(void *arg)
{
    struct quorum *q = arg;
    uv_run(&q->loop, UV_RUN_DEFAULT);
    return NULL;
}

char *quorum_address(const struct conf *c, char *err, size_t errlen)
{
    char host[256], ip[INET_ADDRSTRLEN];
    int port;
    const char *path;
    if (url_split(c->public_url, host, sizeof(host), &port, &path))
        snprintf(host, sizeof(host), "%s", c->host);
    /* libraft dials IPv4 addresses only: a name is resolved once, here */
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc || !ai) {
        snprintf(err, errlen, "the consensus needs an IPv4 address for %s: %s", host,
                 rc ? gai_strerror(rc) : "none");
        return NULL;
    }
    inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, ip, sizeof(ip));
    freeaddrinfo(ai);
    return xasprintf("%s:%d", ip, c->raft_port ? c->raft_port : c->port + 1000);
}

static int start_raft(struct quorum *q, char *err, size_t errlen)
{
    struct proxy *p = q->p;
    char *bind = xasprintf("%s:%d", p->conf.host,
                           p->conf.raft_port ? p->conf.raft_port : p->conf.port + 1000);
    int rc = raftnet_init(&q->tr, &q->loop, bind, p->conf.cluster_secret, err, errlen);
    free(bind);
    if (rc)
        return -1;
    if ((rc = raft_uv_init(&q->io, &q->loop, q->dir, &q->tr))) {
        snprintf(err, errlen, "consensus log in %s: %s", q->dir, q->io.errmsg);
        raftnet_free(&q->tr);
        return -1;
    }
    q->fsm.version = 1;
    q->fsm.data = q;
    q->fsm.apply = fsm_apply;
    q->fsm.snapshot = fsm_snapshot;
    q->fsm.restore = fsm_restore;
    q->id = id_of(p->node.id);
    if ((rc = raft_init(&q->raft, &q->io, &q->fsm, q->id, p->node.raft_addr))) {
        snprintf(err, errlen, "consensus: %s", raft_errmsg(&q->raft));
        raft_uv_close(&q->io);
        raftnet_free(&q->tr);
        return -1;
    }
    q->raft.data = q;
    raft_set_snapshot_threshold(&q->raft, 256);
    raft_set_snapshot_trailing(&q->raft, 64);
    raft_set_pre_vote(&q->raft, true);
    if (p->node.founder) {       /* a group of one, unless it exists already */
        struct raft_configuration conf;
        raft_configuration_init(&conf);
        raft_configuration_add(&conf, q->id, p->node.raft_addr, RAFT_VOTER);
        rc = raft_bootstrap(&q->raft, &conf);
        raft_configuration_close(&conf);
        if (rc && rc != RAFT_CANTBOOTSTRAP) {
            snprintf(err, errlen, "consensus bootstrap: %s", raft_errmsg(&q->raft));
            return -1;
        }
    }
    if ((rc = raft_start(&q->raft))) {
        snprintf(err, errlen, "consensus start: %s", raft_errmsg(&q->raft));
        return -1;
    }
    return 0;
}

int quorum_start(struct proxy *p, char *err, size_t errlen)
{
    struct quorum *q = xcalloc(1, sizeof(*q));
    q->p = p;
    q->inbox_tail = &q->inbox;
    pthread_mutex_init(&q->mu, NULL);
    q->dir = xasprintf("%s/raft", p->conf.state_dir);
    int rc = mkdir_p(q->dir, 0700);
    if (rc) {
        snprintf(err, errlen, "cannot create %s: %s", q->dir, strerror(-rc));
        free(q->dir);
        free(q);
        return -1;
    }
    uv_loop_init(&q->loop);
    if (start_raft(q, err, errlen)) {
        uv_loop_close(&q->loop);
        free(q->dir);
        free(q);
        return -1;
    }
    uv_async_init(&q->loop, &q->wake, woken);
    q->wake.data = q;
    uv_timer_init(&q->loop, &q->timer);
    q->timer.data = q;
    uv_timer_start(&q->timer, tick, TICK_MS, TICK_MS);
    __atomic_store_n(&p->quorum, q, __ATOMIC_RELEASE);   /* workers may look now */
    if (pthread_create(&q->thread, NULL, quorum_main, q))
        abort();
    log_info("consensus on %s (%s)", p->node.raft_addr,
             p->node.founder ? "founding proxy" : "joins through primary_url");
    return 0;
}

void quorum_stop(struct proxy *p)
{
    struct quorum *q = p->quorum;
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stopping = 1;
    uv_async_send(&q->wake);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    uv_loop_close(&q->loop);
}

void quorum_free(struct proxy *p)
{
    struct quorum *q = p->quorum;
    if (!q)
        return;
    json_decref(q->status);
    pthread_mutex_destroy(&q->mu);
    free(q->dir);
    free(q);
    p->quorum = NULL;
}

int quorum_ready(struct node *n)
{
    struct quorum *q = __atomic_load_n(&((struct proxy *)n->owner)->quorum, __ATOMIC_ACQUIRE);
    return q && __atomic_load_n(&q->ready, __ATOMIC_ACQUIRE);
}

void quorum_route(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    struct quorum *q = __atomic_load_n(&p->quorum, __ATOMIC_ACQUIRE);
    (void)rest;
    (void)rlen;
    if (!node_authenticate(&p->node, r))
        return;
    json_t *j = NULL;
    if (q) {
        pthread_mutex_lock(&q->mu);
        j = q->status ? json_deep_copy(q->status) : NULL;
        pthread_mutex_unlock(&q->mu);
    }
    if (j)
        http_reply_json(r, 200, j);
    else
        http_reply_error(r, 503, "the consensus has not started yet");
}
