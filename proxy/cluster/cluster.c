/*
 * cluster: membership on the primary proxy.
 *
 * Joins and keepalives arrive signed with the cluster secret. A join adds or
 * updates the node and, when that changes the map, has the proxies commit
 * the new version (quorum.c) and pushes it to every node; the joiner gets
 * the map and BMD in the answer. A keepalive refreshes the node's
 * last-seen time and carries back whatever newer map or BMD the node is
 * missing. The control thread's tick marks targets silent longer than
 * node_timeout_ms down (they stay in the map, owning nothing, until they
 * join again or are removed) and drops silent proxies. A proxy that is not
 * the primary answers members with its map, which names the primary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "nodeclient.h"
#include "http.h"
#include "log.h"
#include "nodes.h"
#include "proxy.h"
#include "quorum.h"
#include "reach.h"
#include "util.h"
#include "worker.h"

static void seen_touch(struct proxy *p, const char *id)
{
    for (int i = 0; i < p->n_seen; i++) {
        if (!strcmp(p->seen[i].id, id)) {
            p->seen[i].at_ms = mono_ms();
            return;
        }
    }
    p->seen = xrealloc(p->seen, sizeof(*p->seen) * (size_t)(p->n_seen + 1));
    p->seen[p->n_seen].id = xstrdup(id);
    p->seen[p->n_seen++].at_ms = mono_ms();
}

void cluster_fini(struct proxy *p)
{
    for (int i = 0; i < p->n_seen; i++)
        free(p->seen[i].id);
    free(p->seen);
    p->seen = NULL;
    p->n_seen = 0;
}

struct bcast {
    int pending, failures;
    void (*done)(void *arg, int failures);
    void *arg;
};

static void bcast_one(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct bcast *b = arg;
    (void)len;
    if (status != 204) {
        b->failures++;
        log_warn("push to a node failed: %s", status ? body : (err ? err : "?"));
    }
    if (--b->pending == 0) {
        if (b->done)
            b->done(b->arg, b->failures);
        free(b);
    }
}

void cluster_broadcast(struct proxy *p, struct nodeclient *cli, json_t *j,
                       void (*done)(void *arg, int failures), void *arg)
{
    struct node *n = &p->node;
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    struct cmap *m = cmap_current();
    struct bcast *b = xcalloc(1, sizeof(*b));
    b->done = done;
    b->arg = arg;
    b->pending = 1; /* held until every request is out */
    for (int i = 0; m && i < m->n; i++) {
        if (!strcmp(m->nodes[i].id, n->id))
            continue;
        char *url = node_signed_url(n, "PUT", m->nodes[i].url, "/v1/internal/push", NULL);
        b->pending++;
        nodeclient_request(cli, "PUT", url, body, strlen(body), NULL, 5000, bcast_one, b);
        free(url);
    }
    cmap_unref(m);
    free(body);
    bcast_one(b, 204, "", 0, NULL);
}

static int not_primary(struct proxy *p, struct http_req *r)
{
    if (node_primary(&p->node))
        return 0;
    node_not_primary(&p->node, r);
    return 1;
}

/* ---- map changes ------------------------------------------------------------------ */

struct mapchg {
    struct quorum_change c;      /* first */
    struct proxy *p;
    struct nodeclient *cli;
    char id[72];
    int (*fn)(struct cmap *m, const char *id);
    cluster_done_fn done;
    void *arg;
};

static int mapchg_edit(struct quorum_change *c, struct cmap *m, struct bmd *b)
{
    struct mapchg *mc = (struct mapchg *)c;
    (void)b;
    c->changed = mc->fn(m, mc->id) ? QUORUM_CMAP : 0;
    return 0;
}

/* Push the current map to every other node (once a change committed). */
static void push_map(struct proxy *p, struct nodeclient *cli)
{
    struct cmap *now = cmap_current();
    cluster_broadcast(p, cli, json_pack("{s:o}", "cmap", cmap_to_json(now)), NULL, NULL);
    cmap_unref(now);
}

static void mapchg_done(struct quorum_change *c, int status, const char *err)
{
    struct mapchg *mc = (struct mapchg *)c;
    int64_t v = !status && c->changed ? c->version : 0;
    if (v)
        push_map(mc->p, mc->cli);
    if (mc->done)
        mc->done(mc->arg, mc->id, v, status, err);
    free(mc);
}

void cluster_change_map(struct proxy *p, struct loopq *q, struct nodeclient *cli, const char *id,
                        int (*fn)(struct cmap *m, const char *id), cluster_done_fn done,
                        void *arg)
{
    struct mapchg *mc = xcalloc(1, sizeof(*mc));
    mc->c.edit = mapchg_edit;
    mc->c.done = mapchg_done;
    mc->c.q = q;
    mc->p = p;
    mc->cli = cli;
    snprintf(mc->id, sizeof(mc->id), "%s", id);
    mc->fn = fn;
    mc->done = done;
    mc->arg = arg;
    quorum_propose(p, &mc->c);
}

/* A member's request to the primary (what: "join", "keepalive"), signed
 * with the cluster secret: its JSON body goes to done. */
static void from_member(struct http_req *r, const char *what,
                        void (*done)(struct http_req *r, json_t *j))
{
    struct proxy *p = r->w->ctx;
    if (not_primary(p, r))
        return;
    if (node_check_sig(&p->node, r) != 1) {
        http_reply_error(r, 403, "%s must be signed with the cluster secret", what);
        return;
    }
    node_read_json(r, done);
}

/* Ids and URLs end up in headers and replies as they are. */
static int plain_token(const char *s)
{
    for (; *s; s++)
        if (*s <= ' ' || *s == '"' || *s == '\\' || *s == 0x7f)
            return 0;
    return 1;
}

struct join {
    struct quorum_change c;      /* first */
    struct http_req *r;
    json_t *j;                   /* the request: id, role, url, raft */
    json_int_t their_version;
};

static int join_edit(struct quorum_change *c, struct cmap *m, struct bmd *b)
{
    struct join *jn = (struct join *)c;
    const char *id = json_string_value(json_object_get(jn->j, "id"));
    const char *role = json_string_value(json_object_get(jn->j, "role"));
    const char *url = json_string_value(json_object_get(jn->j, "url"));
    const char *raft = json_string_value(json_object_get(jn->j, "raft"));
    (void)b;
    int ch = cmap_put_node(m, id, strcmp(role, "proxy") ? NODE_TARGET : NODE_PROXY, url);
    if (raft && !strcmp(role, "proxy"))
        ch |= cmap_set_raft(m, id, raft);
    if (ch && jn->their_version >= m->snap.version)
        m->snap.version = jn->their_version + 1;   /* above what the joiner had */
    c->changed = ch ? QUORUM_CMAP : 0;
    return 0;
}

static void join_done(struct quorum_change *c, int status, const char *err)
{
    struct join *jn = (struct join *)c;
    struct http_req *r = jn->r;
    struct proxy *p = r->w->ctx;
    const char *id = json_string_value(json_object_get(jn->j, "id"));
    if (status) {
        http_resp_header_str(r, "Retry-After", "1");
        http_reply_error(r, status, "%s", err);
    } else {
        pthread_mutex_lock(&p->mu);
        seen_touch(p, id);
        pthread_mutex_unlock(&p->mu);
        if (c->changed) {
            log_info("node %s joined: map v%lld", id, (long long)c->version);
            push_map(p, worker_hc(r));
        }
        struct cmap *m = cmap_current();
        struct bmd *b = bmd_current();
        http_reply_json(r, 200,
                        json_pack("{s:o, s:o}", "cmap", cmap_to_json(m), "bmd", bmd_to_json(b)));
        cmap_unref(m);
        bmd_unref(b);
    }
    json_decref(jn->j);
    http_req_unref(r);
    free(jn);
}

static void join_body(struct http_req *r, json_t *j)
{
    struct proxy *p = r->w->ctx;
    const char *id, *role, *url, *raft = NULL;
    json_int_t their_version = 0;
    if (json_unpack(j, "{s:s, s:s, s:s, s?I, s?s}", "id", &id, "role", &role, "url", &url,
                    "cmap_version", &their_version, "raft", &raft) ||
        (strcmp(role, "proxy") && strcmp(role, "target")) || !id[0] || !url[0] ||
        !plain_token(id) || !plain_token(url) || (raft && !plain_token(raft))) {
        json_decref(j);
        http_reply_error(r, 400, "join needs id, role (proxy|target) and url, without "
                                 "spaces, quotes or backslashes");
        return;
    }
    pthread_mutex_lock(&p->mu);
    seen_touch(p, id);           /* not dropped while its join is committed */
    pthread_mutex_unlock(&p->mu);
    reach_heard(id);
    struct join *jn = xcalloc(1, sizeof(*jn));
    jn->c.edit = join_edit;
    jn->c.done = join_done;
    jn->c.q = r->w->q;
    jn->r = r;
    jn->j = j;
    jn->their_version = their_version;
    http_req_ref(r);
    quorum_propose(p, &jn->c);
}

void cluster_join(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    from_member(r, "join", join_body);
}

static void keepalive_body(struct http_req *r, json_t *j)
{
    struct proxy *p = r->w->ctx;
    const char *id;
    json_int_t mv = 0, bv = 0;
    if (json_unpack(j, "{s:s, s?I, s?I}", "id", &id, "cmap_version", &mv, "bmd_version", &bv)) {
        json_decref(j);
        http_reply_error(r, 400, "keepalive needs an id");
        return;
    }
    struct cmap *m = cmap_current();
    struct bmd *b = bmd_current();
    const struct cmap_node *nd = cmap_find(m, id);
    if (!nd || (nd->flags & CMAP_FLAG_DOWN)) {   /* it joins again */
        http_reply_error(r, 404, "node %s is not in the cluster map", id);
    } else {
        pthread_mutex_lock(&p->mu);
        seen_touch(p, id);
        pthread_mutex_unlock(&p->mu);
        reach_heard(id);
        json_t *a = json_object();
        if (m->snap.version > mv)
            json_object_set_new(a, "cmap", cmap_to_json(m));
        if (b->snap.version > bv)
            json_object_set_new(a, "bmd", bmd_to_json(b));
        http_reply_json(r, 200, a);
    }
    cmap_unref(m);
    bmd_unref(b);
    json_decref(j);
}

void cluster_keepalive(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    from_member(r, "keepalive", keepalive_body);
}

/* A silent node: a target goes down (it stays, owning nothing), a
 * proxy leaves the map. */
static int mark_silent(struct cmap *m, const char *id)
{
    const struct cmap_node *nd = cmap_find(m, id);
    if (!nd || (nd->flags & CMAP_FLAG_DOWN))
        return 0;
    if (nd->role == NODE_TARGET)
        return cmap_set_flags(m, id, CMAP_FLAG_DOWN, 0);
    return cmap_del_node(m, id);
}

/* Not committed (this proxy lost the primary role, or the majority): the
 * node is watched again, so the next try comes a timeout later. */
static void silent_done(void *arg, const char *id, int64_t version, int status,
                        const char *err)
{
    struct proxy *p = arg;
    (void)version;
    if (status) {
        log_warn("node %s stays as it is for now: %s", id, err);
        pthread_mutex_lock(&p->mu);
        seen_touch(p, id);
        pthread_mutex_unlock(&p->mu);
    }
}

/* Control thread, every keepalive period, on the primary: drop silent
 * nodes. A new primary first gives every node of the map a full
 * timeout. */
void cluster_tick(struct node *n)
{
    struct proxy *p = n->owner;
    if (!node_primary(n)) {
        p->was_primary = 0;
        return;
    }
    pthread_mutex_lock(&p->mu);
    struct cmap *cur = cmap_current();
    if (!p->was_primary) {
        p->was_primary = 1;
        for (int i = 0; cur && i < cur->n; i++)
            seen_touch(p, cur->nodes[i].id);
    }
    /* read after every touch above and under the lock: a time read
     * before a keepalive's touch is older than it, and the difference
     * would wrap to a silence of centuries */
    uint64_t now = mono_ms();
    for (int i = 0; i < p->n_seen; i++) {
        if (!strcmp(p->seen[i].id, n->id))
            continue;
        if (now - p->seen[i].at_ms <= (uint64_t)p->conf.node_timeout_ms)
            continue;
        const struct cmap_node *nd = cmap_find(cur, p->seen[i].id);
        if (nd && !(nd->flags & CMAP_FLAG_DOWN)) {
            log_warn("node %s silent for %llu ms: %s", p->seen[i].id,
                     (unsigned long long)(now - p->seen[i].at_ms),
                     nd->role == NODE_TARGET ? "down" : "removed from the map");
            cluster_change_map(p, n->ctl_q, n->ctl_cli, nd->id, mark_silent, silent_done, p);
        }
        free(p->seen[i].id);
        p->seen[i--] = p->seen[--p->n_seen];
    }
    pthread_mutex_unlock(&p->mu);
    cmap_unref(cur);
    nodes_tick(n);               /* decommissioned targets that are drained leave */
}
