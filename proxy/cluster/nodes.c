/*
 * nodes: maintenance and decommission of targets (see nodes.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cmap.h"
#include "nodeclient.h"
#include "http.h"
#include "log.h"
#include "nodes.h"
#include "proxy.h"
#include "util.h"
#include "worker.h"

static int set_maint(struct cmap *m, const char *id)
{
    return cmap_set_flags(m, id, CMAP_FLAG_MAINT, 0);
}

static int clear_maint(struct cmap *m, const char *id)
{
    return cmap_set_flags(m, id, 0, CMAP_FLAG_MAINT);
}

static int set_decomm(struct cmap *m, const char *id)
{
    return cmap_set_flags(m, id, CMAP_FLAG_DECOMM, CMAP_FLAG_MAINT);
}

static int remove_node(struct cmap *m, const char *id)
{
    return cmap_del_node(m, id);
}

struct asked {
    struct http_req *r;
    const char *state;           /* what the node is once changed */
};

/* The answer once the proxies committed the change (cmap_version 0: it
 * was so already). */
static void node_changed(void *arg, const char *id, int64_t version, int status,
                         const char *err)
{
    struct asked *a = arg;
    if (status) {
        http_resp_header_str(a->r, "Retry-After", "1");
        http_reply_error(a->r, status, "%s", err);
    } else {
        http_reply_json(a->r, 202, json_pack("{s:s, s:s, s:I}", "node", id, "state",
                                             a->state, "cmap_version", (json_int_t)version));
    }
    http_req_unref(a->r);
    free(a);
}

void nodes_route(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    if (!node_authenticate(&p->node, r))
        return;
    if (!node_primary(&p->node)) {
        node_not_primary(&p->node, r);
        return;
    }
    char id[72];
    if (rlen == 0 || rlen >= sizeof(id) || memchr(rest, '/', rlen)) {
        http_reply_error(r, 404, "no such node");
        return;
    }
    snprintf(id, sizeof(id), "%.*s", (int)rlen, rest);
    struct cmap *m = cmap_current();
    const struct cmap_node *nd = m ? cmap_find(m, id) : NULL;
    int role = nd ? (int)nd->role : -1;
    uint32_t flags = nd ? nd->flags : 0;
    cmap_unref(m);
    if (role < 0) {
        http_reply_error(r, 404, "node %s is not in the cluster map", id);
        return;
    }
    if (role != NODE_TARGET) {
        http_reply_error(r, 409, "node %s is a proxy: only targets go into maintenance or "
                                 "are decommissioned", id);
        return;
    }
    char v[8];
    int (*fn)(struct cmap *m, const char *id);
    const char *state;
    if (r->method == HTTP_M_PUT && http_query_get(r, "maintenance", v, sizeof(v)) >= 0) {
        int on = !v[0] || !strcmp(v, "on") || !strcmp(v, "true");
        if (!on && strcmp(v, "off") && strcmp(v, "false")) {
            http_reply_error(r, 400, "maintenance is on or off");
            return;
        }
        if (on && (flags & CMAP_FLAG_DECOMM)) {
            http_reply_error(r, 409, "node %s is being decommissioned", id);
            return;
        }
        fn = on ? set_maint : clear_maint;
        state = on ? "maintenance" : "active";
    } else if (r->method == HTTP_M_DELETE) {
        int down = flags & CMAP_FLAG_DOWN;
        fn = down ? remove_node : set_decomm;
        state = down ? "removed" : "decommissioning";
        log_warn("node %s: %s", id, down ? "removed while down: what only it held is lost"
                                         : "decommissioning");
    } else {
        http_resp_header_str(r, "Allow", "PUT, DELETE");
        http_reply_error(r, 405, "PUT ?maintenance[=on|off], or DELETE to decommission");
        return;
    }
    struct asked *a = xcalloc(1, sizeof(*a));
    a->r = r;
    a->state = state;
    http_req_ref(r);
    cluster_change_map(p, r->w->q, worker_hc(r), id, fn, node_changed, a);
}

/* ---- a target's mountpaths, forwarded ---------------------------------------------------- */

static void relayed(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct http_req *r = arg;
    if (status)
        http_reply(r, status, "application/json", body, len);
    else
        http_reply_error(r, 503, "the target did not answer: %s", err ? err : "?");
    http_req_unref(r);
}

/* The target's URL of the /v1/targets/ID/mountpaths request r, or NULL
 * with r answered. */
static char *target_url(struct http_req *r, const char *rest, size_t rlen)
{
    const char *slash = memchr(rest, '/', rlen);
    if (!slash || (size_t)(rest + rlen - slash) != strlen("/mountpaths") ||
        memcmp(slash, "/mountpaths", strlen("/mountpaths")) || slash == rest) {
        http_reply_error(r, 404, "no such endpoint: /v1/targets/ID/mountpaths only");
        return NULL;
    }
    char id[72];
    snprintf(id, sizeof(id), "%.*s", (int)(slash - rest), rest);
    struct cmap *m = cmap_current();
    const struct cmap_node *nd = m ? cmap_find(m, id) : NULL;
    char *url = NULL;
    if (!nd || nd->role != NODE_TARGET)
        http_reply_error(r, 404, "no target %s in the cluster map", id);
    else if (nd->flags & CMAP_FLAG_DOWN)
        http_reply_error(r, 503, "target %s is down", id);
    else
        url = xstrdup(nd->url);
    cmap_unref(m);
    return url;
}

static void forward(struct http_req *r, const char *body)
{
    struct proxy *p = r->w->ctx;
    static const char prefix[] = "/v1/targets/";
    char *base = target_url(r, r->path + strlen(prefix), r->path_len - strlen(prefix));
    if (!base)
        return;
    char *url = node_signed_urlf(&p->node, r->method_name, base, "/v1/internal/mountpaths%s%s",
                                 r->query[0] ? "?" : "", r->query);
    free(base);
    http_req_ref(r);
    nodeclient_request(worker_hc(r), r->method_name, url, body, body ? strlen(body) : 0, NULL,
                       60000, relayed, r);
    free(url);
}

static void forward_json(struct http_req *r, json_t *j)
{
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    forward(r, body);
    free(body);
}

void nodes_targets_route(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    if (!node_authenticate(&p->node, r))
        return;
    if (r->method != HTTP_M_GET && r->method != HTTP_M_POST && r->method != HTTP_M_DELETE) {
        http_resp_header_str(r, "Allow", "GET, POST, DELETE");
        http_reply_error(r, 405, "GET, POST or DELETE");
        return;
    }
    char *url = target_url(r, rest, rlen);
    if (!url)
        return;
    free(url);                   /* checked now; forward() finds it again */
    if (r->method == HTTP_M_POST)
        node_read_json(r, forward_json);
    else
        forward(r, NULL);
}

/* ---- decommissioned targets leave once drained ---------------------------------------- */

struct drain {
    struct proxy *p;
    struct node *n;
    char id[72];
    char url[512];
    int64_t version;             /* the map's when asked */
};

static int asking;               /* the control thread's: answers still out */

static void shut_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct drain *d = arg;
    (void)body;
    (void)len;
    if (status != 202)
        log_warn("node %s did not take its shutdown: %s", d->id, status ? "refused" : err);
    free(d);
}

static void left(void *arg, const char *id, int64_t v, int status, const char *err);

static void drained(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct drain *d = arg;
    (void)err;
    asking--;
    json_t *j = status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    int done = j && json_integer_value(json_object_get(j, "version")) >= d->version &&
               json_is_false(json_object_get(j, "running")) &&
               json_integer_value(json_object_get(j, "errors")) == 0 &&
               json_is_true(json_object_get(j, "empty"));   /* nothing came in after */
    json_decref(j);
    if (!done) {
        free(d);
        return;
    }
    cluster_change_map(d->p, d->n->ctl_q, d->n->ctl_cli, d->id, remove_node, left, d);
}

/* A drained target left the map: it is told to shut down. */
static void left(void *arg, const char *id, int64_t v, int status, const char *err)
{
    struct drain *d = arg;
    (void)id;                    /* d->id, which the shutdown's answer names too */
    if (!v) {
        if (status)
            log_warn("node %s drained but not removed: %s", d->id, err);
        free(d);
        return;
    }
    log_info("node %s decommissioned: its objects moved away, it left the map (v%lld)", d->id,
             (long long)v);
    char *url = node_signed_url(d->n, "POST", d->url, "/v1/internal/shutdown", NULL);
    nodeclient_request(d->n->ctl_cli, "POST", url, NULL, 0, NULL, 5000, shut_done, d);
    free(url);
}

void nodes_tick(struct node *n)
{
    struct proxy *p = n->owner;
    if (asking)
        return;
    struct cmap *m = cmap_current();
    for (int i = 0; m && i < m->n; i++) {
        const struct cmap_node *nd = &m->nodes[i];
        if (!(nd->flags & CMAP_FLAG_DECOMM) || (nd->flags & CMAP_FLAG_DOWN))
            continue;
        struct drain *d = xcalloc(1, sizeof(*d));
        d->p = p;
        d->n = n;
        snprintf(d->id, sizeof(d->id), "%s", nd->id);
        snprintf(d->url, sizeof(d->url), "%s", nd->url);
        d->version = m->snap.version;
        char *url = node_signed_url(n, "GET", nd->url, "/v1/internal/rebalance", NULL);
        asking++;
        nodeclient_request(n->ctl_cli, "GET", url, NULL, 0, NULL, 5000, drained, d);
        free(url);
    }
    cmap_unref(m);
}
