/*
 * cluster: membership on the primary proxy.
 *
 * Joins and keepalives arrive signed with the cluster secret. A join adds or
 * updates the node and, when that changed the map, installs a new version
 * and pushes it to every node; the joiner gets the map and BMD in the
 * answer. A keepalive refreshes the node's last-seen time and carries back
 * whatever newer map or BMD the node is missing. The control thread's tick
 * marks targets silent longer than node_timeout_ms down (they stay in the
 * map, owning nothing, until they join again or are removed) and drops
 * silent proxies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "hc.h"
#include "http.h"
#include "log.h"
#include "nodes.h"
#include "proxy.h"
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

void cluster_init_primary(struct proxy *p)
{
    struct node *n = &p->node;
    struct cmap *cur = cmap_current();
    struct cmap *m;
    if (cur) {
        m = cmap_clone(cur);
        free(m->primary);
        m->primary = xstrdup(n->id);
        m->snap.version++;
    } else {
        uint8_t r[8];
        char uuid[17];
        rand_bytes(r, sizeof(r));
        hex_encode(r, sizeof(r), uuid);
        m = cmap_new(uuid, n->id, 1);
    }
    cmap_put_node(m, n->id, NODE_PROXY, p->conf.public_url);
    /* Every node of a persisted map gets a full timeout to come back. */
    for (int i = 0; i < m->n; i++)
        seen_touch(p, m->nodes[i].id);
    cmap_unref(cur);
    node_set_cmap(n, m);
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

void cluster_broadcast(struct proxy *p, struct hc *cli, json_t *j,
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
        hc_request(cli, "PUT", url, body, strlen(body), NULL, 5000, bcast_one, b);
        free(url);
    }
    cmap_unref(m);
    free(body);
    bcast_one(b, 204, "", 0, NULL);
}

static int not_primary(struct proxy *p, struct http_req *r)
{
    if (p->node.is_primary)
        return 0;
    http_reply_error(r, 503, "this proxy is not the primary; the primary is at %s",
                     p->conf.primary_url);
    return 1;
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

static void join_body(struct http_req *r, json_t *j)
{
    struct proxy *p = r->w->ctx;
    const char *id, *role, *url;
    json_int_t their_version = 0;
    if (json_unpack(j, "{s:s, s:s, s:s, s?I}", "id", &id, "role", &role, "url", &url,
                    "cmap_version", &their_version) ||
        (strcmp(role, "proxy") && strcmp(role, "target")) || !id[0] || !url[0] ||
        !plain_token(id) || !plain_token(url)) {
        json_decref(j);
        http_reply_error(r, 400, "join needs id, role (proxy|target) and url, without "
                                 "spaces, quotes or backslashes");
        return;
    }
    pthread_mutex_lock(&p->mu);
    struct cmap *cur = cmap_current();
    struct cmap *m = cmap_clone(cur);
    int changed = cmap_put_node(m, id, strcmp(role, "proxy") ? NODE_TARGET : NODE_PROXY, url);
    if (changed) {
        int64_t v = cur->snap.version > their_version ? cur->snap.version : their_version;
        m->snap.version = v + 1;
        snap_ref(&m->snap);
        node_set_cmap(&p->node, m);
        log_info("node %s (%s) joined at %s: map v%lld", id, role, url,
                 (long long)m->snap.version);
    }
    seen_touch(p, id);
    pthread_mutex_unlock(&p->mu);
    cmap_unref(cur);
    if (changed) {
        cmap_unref(m);
        m = cmap_current();
    }
    struct bmd *b = bmd_current();
    json_t *answer = json_pack("{s:o, s:o}", "cmap", cmap_to_json(m), "bmd", bmd_to_json(b));
    if (changed)
        cluster_broadcast(p, worker_hc(r), json_pack("{s:o}", "cmap", cmap_to_json(m)), NULL,
                          NULL);
    cmap_unref(m);
    bmd_unref(b);
    json_decref(j);
    http_reply_json(r, 200, answer);
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

/* Control thread, every keepalive period: drop silent nodes. */
void cluster_tick(struct node *n)
{
    struct proxy *p = n->owner;
    uint64_t now = mono_ms();
    pthread_mutex_lock(&p->mu);
    struct cmap *cur = cmap_current();
    struct cmap *m = NULL;
    for (int i = 0; i < p->n_seen; i++) {
        if (!strcmp(p->seen[i].id, n->id))
            continue;
        if (now - p->seen[i].at_ms <= (uint64_t)p->conf.node_timeout_ms)
            continue;
        const struct cmap_node *nd = cmap_find(cur, p->seen[i].id);
        if (nd && !(nd->flags & CMAP_FLAG_DOWN)) {
            if (!m)
                m = cmap_clone(cur);
            /* A target stays in the map, down: the names it holds are
             * unavailable, not gone, until it returns or is removed. */
            if (nd->role == NODE_TARGET)
                cmap_set_flags(m, nd->id, CMAP_FLAG_DOWN, 0);
            else
                cmap_del_node(m, nd->id);
            log_warn("node %s silent for %llu ms: %s", p->seen[i].id,
                     (unsigned long long)(now - p->seen[i].at_ms),
                     nd->role == NODE_TARGET ? "down" : "removed from the map");
        }
        free(p->seen[i].id);
        p->seen[i--] = p->seen[--p->n_seen];
    }
    if (m) {
        m->snap.version = cur->snap.version + 1;
        node_set_cmap(n, m);
    }
    pthread_mutex_unlock(&p->mu);
    cmap_unref(cur);
    if (m) {
        struct cmap *now_map = cmap_current();
        cluster_broadcast(p, n->ctl_cli, json_pack("{s:o}", "cmap", cmap_to_json(now_map)),
                          NULL, NULL);
        cmap_unref(now_map);
    }
    nodes_tick(n);               /* decommissioned targets that are drained leave */
}
