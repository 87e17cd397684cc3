/*
 * reach: which targets this proxy can reach, found by probing them (see
 * reach.h).
 *
 * A thread of its own, with its own loop and nodeclient (common/nodeclient.h), sends each
 * target of the current map GET /v1/health every REACH_PERIOD_MS. nodeclient keeps
 * the connection alive, so a probe is one short request, no connect. What
 * a probe meets decides:
 *
 *   an answer, of any status       reachable: the failures are forgotten,
 *                                  and a target marked unreachable is
 *                                  used again at once
 *   no connection (refused, the    a failure; the next probe follows in
 *   connect's deadline passed,     REACH_RETRY_MS, and REACH_FAILS in a
 *   broken before the answer)      row mark the target unreachable (it
 *                                  is probed as often until it answers)
 *   a connection, no answer in     nothing: a process that is slow or
 *   REACH_TIMEOUT_MS               stopped still takes connections, and
 *                                  one slow answer is not a lost target
 *                                  (the primary's node_timeout_ms decides)
 *
 * A target killed (its port refuses at once) is avoided within about
 * REACH_PERIOD_MS + REACH_RETRY_MS (0.6 s); a host gone without a word,
 * whose connects time out, within PERIOD + 2 * TIMEOUT + RETRY (1.6 s).
 * A connection refused is not taken as final on its own: a target
 * restarting on its port refuses for a moment too.
 *
 * A target is used again as soon as anything shows it is back: a probe
 * answered, its join or keepalive on this proxy (the primary:
 * reach_heard, which comes before the target serves, since it serves
 * only once in the map), or a map that no longer has it down.
 *
 * The view lives in a table keyed by the target's id hash (cmap_node.hash)
 * to which only the probing thread adds entries, each published with a
 * release store of its key, so a redirect's look (reach_down) is a few
 * atomic loads. Entries are never removed (a target that leaves the map
 * keeps its slot, for when it comes back); past REACH_SLOTS targets the
 * rest are never marked. A flag is an atomic any thread may clear
 * (reach_heard); a probe that failed before it was cleared does not count.
 *
 * Thread: the probing thread, but for reach_down and reach_heard (any
 * thread) and reach_start/reach_stop (the main thread).
 */
#include "reach.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cmap.h"
#include "nodeclient.h"
#include "hrw.h"
#include "log.h"
#include "util.h"

#define REACH_SLOTS 1024         /* targets tracked, at most */
#define REACH_PERIOD_MS 500      /* between a target's probes while it answers */
#define REACH_RETRY_MS 100       /* the next probe after a failure */
#define REACH_TIMEOUT_MS 500     /* a probe's deadline */
#define REACH_FAILS 2            /* failures in a row that mark a target unreachable */
#define REACH_TICK_MS 50         /* the map looked at for probes due */

struct slot {
    uint64_t key;                /* atomic: key_of the target's id hash; 0: empty */
    int down;                    /* atomic: unreachable from this proxy */
    /* the probing thread's own */
    char id[72];
    char *url;                   /* its /v1/health */
    struct nodeclient_xfer *x;   /* the probe in flight, or NULL */
    int fails;                   /* probes failed in a row */
    uint64_t last_ms;            /* when the last probe ended */
    uint32_t map_flags;          /* its flags in the map last looked at */
    int heard;                   /* atomic: it joined or kept alive (reach_heard) */
};

static struct slot slots[REACH_SLOTS];

static struct {
    pthread_t thread;
    struct event_base *base;
    struct nodeclient *hc;
    struct event *tick;
    int full;                    /* the table filled up: said once */
} rs;

/* The slot of the target whose id hashes to h (cmap_node.hash), or NULL;
 * add (the probing thread only): make one, for id, when there is none. */
static struct slot *slot_of(uint64_t h, const char *id, int add)
{
    uint64_t k = h ? h : 1;
    for (unsigned i = 0, at = (unsigned)(k % REACH_SLOTS); i < REACH_SLOTS;
         i++, at = (at + 1) % REACH_SLOTS) {
        struct slot *s = &slots[at];
        uint64_t here = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
        if (here == k)
            return s;
        if (here)
            continue;
        if (!add)
            return NULL;
        snprintf(s->id, sizeof(s->id), "%s", id);
        __atomic_store_n(&s->key, k, __ATOMIC_RELEASE);
        return s;
    }
    if (add && !rs.full) {
        rs.full = 1;
        log_warn("reach: more than %d targets: the rest are never taken for unreachable",
                 REACH_SLOTS);
    }
    return NULL;
}

int reach_down(const struct cmap_node *t)
{
    struct slot *s = slot_of(t->hash, NULL, 0);
    return s && __atomic_load_n(&s->down, __ATOMIC_RELAXED);
}

/* Any thread. */
static void mark(struct slot *s, int down, const char *why)
{
    if (__atomic_exchange_n(&s->down, down, __ATOMIC_RELAXED) == down)
        return;
    if (down)
        log_warn("target %s is unreachable from this proxy (%s): its objects go to another "
                 "holder, or get 503, until it answers", s->id, why);
    else
        log_info("target %s answers this proxy again", s->id);
}

void reach_heard(const char *id)
{
    struct slot *s = slot_of(hrw_hash(id, strlen(id)), NULL, 0);
    if (!s)
        return;
    __atomic_store_n(&s->heard, 1, __ATOMIC_RELEASE);   /* before: see probed */
    mark(s, 0, NULL);
}

static void probed(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct slot *s = arg;
    s->x = NULL;
    s->last_ms = mono_ms();
    if (__atomic_exchange_n(&s->heard, 0, __ATOMIC_ACQ_REL))
        s->fails = 0;            /* it spoke since: a failure of this probe is older */
    else if (status)
        s->fails = 0;
    else if ((!nodeclient_reached(x) || nodeclient_failure(x) != NODECLIENT_FAIL_TIMEOUT) &&
             ++s->fails >= REACH_FAILS)
        mark(s, 1, err ? err : "no connection");
    if (status)
        mark(s, 0, NULL);
}

/* When s's next probe is due. One that failed goes again soon, so that a
 * lost target is marked, and one back used again, within a fraction of a
 * second; but not for a target the map has down: it owns no names. */
static uint64_t due(const struct slot *s, const struct cmap_node *t)
{
    int soon = s->fails && !(t->flags & CMAP_FLAG_DOWN);
    return s->last_ms + (soon ? REACH_RETRY_MS : REACH_PERIOD_MS);
}

static const struct nodeclient_ops probe_ops = {
    .on_done = probed,
};

/* Probe each target of the map whose probe is due. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    struct cmap *m = cmap_current();
    uint64_t now = mono_ms();
    for (int i = 0; m && i < m->n; i++) {
        const struct cmap_node *t = &m->nodes[i];
        struct slot *s = t->role == NODE_TARGET ? slot_of(t->hash, t->id, 1) : NULL;
        if (!s)
            continue;
        if ((s->map_flags & CMAP_FLAG_DOWN) && !(t->flags & CMAP_FLAG_DOWN)) {
            s->fails = 0;        /* back in the map: the primary heard from it */
            mark(s, 0, NULL);
        }
        s->map_flags = t->flags;
        if (s->x || now < due(s, t))
            continue;
        free(s->url);
        s->url = xasprintf("%s/v1/health", t->url);   /* the map may move it */
        s->x = nodeclient_start(rs.hc, "GET", s->url, NULL, 0, -1, REACH_TIMEOUT_MS, &probe_ops, s);
    }
    cmap_unref(m);
}

static void *reach_main(void *arg)
{
    (void)arg;
    event_base_dispatch(rs.base);
    return NULL;
}

void reach_start(void)
{
    rs.base = event_base_new();
    rs.hc = nodeclient_new(rs.base);
    rs.tick = event_new(rs.base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, REACH_TICK_MS * 1000};
    event_add(rs.tick, &tv);
    if (pthread_create(&rs.thread, NULL, reach_main, NULL))
        abort();
}

void reach_stop(void)
{
    if (!rs.base)
        return;
    event_base_loopbreak(rs.base);
    pthread_join(rs.thread, NULL);
    nodeclient_free(rs.hc);      /* probes in flight go without their callbacks */
    event_free(rs.tick);
    event_base_free(rs.base);
    rs.base = NULL;
    for (int i = 0; i < REACH_SLOTS; i++) {
        free(slots[i].url);
        memset(&slots[i], 0, sizeof(slots[i]));
    }
}
