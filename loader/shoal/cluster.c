/*
 * cluster: `shoal cluster show`, the cluster map (GET /v1/cluster) with
 * each node's health asked of the node itself (GET /v1/health on its
 * URL, a few seconds at most each), so a node the map still lists but
 * that stopped answering shows as such.
 */
#include <stdio.h>
#include <string.h>

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
        printf("%-12s %-7s %-30s %s\n", "ID", "ROLE", "URL", "HEALTH");
    }
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node) {
        char health[512];
        health_of(out_str(node, "url"), health, sizeof(health));
        json_object_set_new(node, "health", json_string(health));
        if (!a->json)
            printf("%-12s %-7s %-30s %s%s\n", out_str(node, "id"), out_str(node, "role"),
                   out_str(node, "url"), health,
                   !strcmp(out_str(node, "id"), primary) ? "  (primary)" : "");
    }
    if (a->json)
        out_json(m);
    json_decref(m);
    return RC_OK;
}
