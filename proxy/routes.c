/*
 * routes: the proxy's route tables (see routes.h).
 */
#include "routes.h"
#include "backends.h"
#include "batch.h"

#include "buckets.h"
#include "cluster.h"
#include "damaged.h"
#include "http.h"
#include "jobs.h"
#include "nodes.h"
#include "objects.h"
#include "proxy.h"
#include "quorum.h"
#include "s3route.h"
#include "space.h"
#include "transforms.h"
#include "util.h"

/* Everything no route serves: 404 to a client that may read the
 * cluster's data, 403 (node_authenticate's answer) to any other. */
static void no_endpoint(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    (void)rest;
    (void)rlen;
    if (!node_authenticate(&p->node, r))
        return;
    route_not_found(r);
}

/*
 * The main port, after the endpoints every node serves (node_handle). The
 * first match wins; each handler authenticates its requests: objects and
 * buckets with node_authenticate, the S3 API with its own signatures,
 * join and keepalive with the cluster's.
 */
static const struct route routes[] = {
    {RM_ANY, "/v1/objects/*", objects_route, "object"},
    {RM_ANY, "/v1/batch", batch_route, "batch"},
    {RM_ANY, "/s3", s3route, "s3"},
    {RM_ANY, "/s3/*", s3route, "s3"},
    {RM_POST, "/v1/cluster/join", cluster_join, "join"},
    {RM_POST, "/v1/cluster/keepalive", cluster_keepalive, "keepalive"},
    {RM_GET, "/v1/cluster/space", space_route, "space"},
    {RM_GET, "/v1/cluster/damaged", damaged_route, "damaged"},
    {RM_GET, "/v1/cluster/quorum", quorum_route, "quorum"},
    {RM_ANY, "/v1/cluster/nodes/*", nodes_route, "node"},
    {RM_ANY, "/v1/targets/*", nodes_targets_route, "mountpaths"},
    {RM_ANY, "/v1/backends", backends_route, "backend"},
    {RM_ANY, "/v1/backends/*", backends_route, "backend"},
    {RM_ANY, "/v1/transforms", transforms_route, "transform"},
    {RM_ANY, "/v1/transforms/*", transforms_route, "transform"},
    {RM_ANY, "/v1/buckets", buckets_route, "bucket"},
    {RM_ANY, "/v1/buckets/*", buckets_route, "bucket"},
    {RM_ANY, "/v1/jobs", jobs_route, "job"},
    {RM_ANY, "/v1/jobs/*", jobs_route, "job"},
    {RM_ANY, "*", no_endpoint, NULL},
};

static void node_endpoint(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    (void)rest;
    (void)rlen;
    node_handle(&p->node, r);
}

/* The dedicated S3 port (s3_api_port): the S3 API at the root, beside
 * health and metrics. */
static const struct route s3_port_routes[] = {
    {RM_ANY, "/v1/health", node_endpoint, "health"},
    {RM_ANY, "/metrics", node_endpoint, "metrics"},
    {RM_ANY, "/*", s3route, "s3"},
};

void routes_main(struct http_req *r)
{
    struct proxy *p = r->w->ctx;
    if (!node_handle(&p->node, r))
        route_dispatch(routes, ARRAY_LEN(routes), r);
}

void routes_s3_port(struct http_req *r)
{
    route_dispatch(s3_port_routes, ARRAY_LEN(s3_port_routes), r);
}

const struct route *routes_table(int s3_port, size_t *n)
{
    *n = s3_port ? ARRAY_LEN(s3_port_routes) : ARRAY_LEN(routes);
    return s3_port ? s3_port_routes : routes;
}
