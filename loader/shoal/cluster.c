/*
 * cluster: `shoal cluster show`, the cluster map (GET /v1/cluster) with
 * each node's health asked of the node itself (GET /v1/health on its
 * URL, a few seconds at most each), so a node the map still lists but
 * that stopped answering shows as such; and `shoal cluster space`, every
 * target's mountpaths (GET /v1/cluster/space); `shoal node maintenance`
 * and `shoal node decommission` (PUT ?maintenance and DELETE on
 * /v1/cluster/nodes/ID).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#include "cmds.h"
#include "conn.h"
#include "out.h"

#define HEALTH_TIMEOUT_MS 3000

/* The node's health: "ok", or what went wrong. */
static void health_of(const char *url, char *out, size_t n)
{
    struct gbuf u = {0};
    gbuf_str(&u, url);
    gbuf_str(&u, "/v1/health");
    struct conn_req q = {.method = "GET", .path = u.p, .timeout_ms = HEALTH_TIMEOUT_MS};
    struct conn_ans r;
    conn_do(&q, &r);
    if (r.status == 200) {
        snprintf(out, n, "ok");
    } else if (r.status == 0) {
        snprintf(out, n, "unreachable (%s)", r.err);
    } else {
        json_t *j = out_parse(&r);
        const char *why = out_str(j, "error")[0] ? out_str(j, "error") : out_str(j, "status");
        snprintf(out, n, "%d%s%s", r.status, why[0] ? " " : "", why);
        json_decref(j);
    }
    conn_ans_free(&r);
    gbuf_free(&u);
}

int cmd_cluster_show(const struct args *a)
{
    int rc;
    json_t *m = out_ask("GET", "/v1/cluster", NULL, "reading the cluster map", &rc);
    if (!m)
        return rc;
    json_t *nodes = json_object_get(m, "nodes");
    const char *primary = out_str(m, "primary");
    if (!a->json) {
        printf("cluster %s  map version %lld  primary %s\n", out_str(m, "uuid"),
               (long long)out_int(m, "version"), primary);
        printf("%-12s %-7s %-16s %-30s %s\n", "ID", "ROLE", "STATE", "URL", "HEALTH");
    }
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node) {
        char health[512];
        health_of(out_str(node, "url"), health, sizeof(health));
        json_object_set_new(node, "health", json_string(health));
        if (!a->json)
            printf("%-12s %-7s %-16s %-30s %s%s\n", out_str(node, "id"), out_str(node, "role"),
                   out_str(node, "state"), out_str(node, "url"), health,
                   !strcmp(out_str(node, "id"), primary) ? "  (primary)" : "");
    }
    if (a->json)
        out_json(m);
    json_decref(m);
    return RC_OK;
}

int cmd_cluster_space(const struct args *a)
{
    int rc;
    json_t *sp = out_ask("GET", "/v1/cluster/space", NULL, "reading the space report", &rc);
    if (!sp)
        return rc;
    if (a->json) {
        out_json(sp);
        json_decref(sp);
        return RC_OK;
    }
    char used[32], total[32];
    printf("%-12s %-40s %10s %10s %6s  %s\n", "TARGET", "MOUNTPATH", "USED", "TOTAL", "USED%",
           "STATE");
    size_t i, k;
    json_t *t, *mp;
    json_array_foreach(json_object_get(sp, "targets"), i, t) {
        if (!json_object_get(t, "mountpaths"))
            printf("%-12s unreachable: %s\n", out_str(t, "target"), out_str(t, "error"));
        json_array_foreach(json_object_get(t, "mountpaths"), k, mp) {
            out_size(used, sizeof(used), (double)out_int(mp, "used"));
            out_size(total, sizeof(total), (double)out_int(mp, "total"));
            printf("%-12s %-40s %10s %10s %5.1f%%  %s\n", out_str(t, "target"),
                   out_str(mp, "path"), used, total,
                   json_number_value(json_object_get(mp, "used_pct")), out_str(mp, "state"));
        }
    }
    out_size(used, sizeof(used), (double)out_int(sp, "used"));
    out_size(total, sizeof(total), (double)out_int(sp, "total"));
    printf("cluster: %s of %s (%.1f%%)\n", used, total,
           json_number_value(json_object_get(sp, "used_pct")));
    json_decref(sp);
    return RC_OK;
}

/* PUT or DELETE on the node; prints the state it is in now. */
static int node_do(const struct args *a, const char *method, const char *query,
                   const char *what)
{
    struct gbuf u = {0};
    char *id = http_pct_encode(a->pos[0], strlen(a->pos[0]), 0);
    gbuf_str(&u, "/v1/cluster/nodes/");
    gbuf_str(&u, id);
    gbuf_str(&u, query);
    free(id);
    char msg[128];
    snprintf(msg, sizeof(msg), "%s %s", what, a->pos[0]);
    int rc;
    json_t *j = out_ask(method, u.p, NULL, msg, &rc);
    gbuf_free(&u);
    if (j && a->json)
        out_json(j);
    else if (j)
        printf("node %s: %s (map version %lld)\n", out_str(j, "node"), out_str(j, "state"),
               (long long)out_int(j, "cmap_version"));
    json_decref(j);
    return rc;
}

int cmd_node_maintenance(const struct args *a)
{
    return node_do(a, "PUT", a->off ? "?maintenance=off" : "?maintenance=on",
                   "changing the maintenance of");
}

int cmd_node_decommission(const struct args *a)
{
    return node_do(a, "DELETE", "", "decommissioning");
}
