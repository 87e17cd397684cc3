/* routes: which of the proxy's operations a method and path reach, on
 * its main port and on its dedicated S3 port. Each prefix route takes
 * only what lies under its folder ("/v1/jobsx" is no job route), a
 * method a route does not serve falls through to the catch-all (404 or
 * 403, never another operation), and a handler gets the rest of the path
 * after its prefix. */
#include <string.h>

#include "check.h"
#include "routes.h"

/* The op name of the route method and path reach on a port ("" for the
 * catch-all, "(none)" when nothing matches), and whether the rest of the
 * path it hands on is rest. */
static const char *op_of(int s3_port, int method, const char *path, const char *rest)
{
    size_t n, rl;
    const struct route *t = routes_table(s3_port, &n);
    struct http_req r;
    memset(&r, 0, sizeof(r));
    r.method = method;
    r.path = path;
    r.path_len = strlen(path);
    const char *got;
    const struct route *rt = route_find(t, n, &r, &got, &rl, NULL);
    if (!rt)
        return "(none)";
    if (rest && (rl != strlen(rest) || memcmp(got, rest, rl)))
        return "(another rest)";
    return rt->op ? rt->op : "";
}

#define MAIN(m, path, rest, op) CHECK(!strcmp(op_of(0, HTTP_M_##m, path, rest), op))
#define S3PORT(m, path, rest, op) CHECK(!strcmp(op_of(1, HTTP_M_##m, path, rest), op))

int main(void)
{
    MAIN(GET, "/v1/objects/b/k/x.tar", "b/k/x.tar", "object");
    MAIN(PUT, "/v1/objects/b/k", "b/k", "object");
    MAIN(GET, "/v1/objectsb/k", NULL, "");
    MAIN(GET, "/s3", "", "s3");
    MAIN(PUT, "/s3/bucket/key", "bucket/key", "s3");
    MAIN(GET, "/s3x/bucket", NULL, "");
    MAIN(POST, "/v1/cluster/join", "", "join");
    MAIN(GET, "/v1/cluster/join", NULL, "");          /* a method it does not serve */
    MAIN(POST, "/v1/cluster/keepalive", "", "keepalive");
    MAIN(GET, "/v1/cluster/space", "", "space");
    MAIN(DELETE, "/v1/cluster/space", NULL, "");
    MAIN(GET, "/v1/cluster/damaged", "", "damaged");
    MAIN(GET, "/v1/cluster/quorum", "", "quorum");
    MAIN(DELETE, "/v1/cluster/nodes/t1", "t1", "node");
    MAIN(GET, "/v1/cluster/nodes", NULL, "");         /* the folder itself is no node */
    MAIN(GET, "/v1/targets/t1/mountpaths", "t1/mountpaths", "mountpaths");
    MAIN(GET, "/v1/buckets", "", "bucket");
    MAIN(DELETE, "/v1/buckets/b1", "b1", "bucket");
    MAIN(GET, "/v1/backends", "", "backend");
    MAIN(PUT, "/v1/backends/alpha", "alpha", "backend");
    MAIN(GET, "/v1/backendsx", NULL, "");
    MAIN(GET, "/v1/transforms", "", "transform");
    MAIN(DELETE, "/v1/transforms/resize", "resize", "transform");
    MAIN(POST, "/v1/jobs", "", "job");
    MAIN(POST, "/v1/batch", "", "batch");
    MAIN(GET, "/v1/batchx", NULL, "");
    MAIN(GET, "/v1/jobs/abc", "abc", "job");
    MAIN(GET, "/v1/jobsx", NULL, "");
    MAIN(GET, "/", NULL, "");
    MAIN(GET, "/bucket/key", NULL, "");               /* S3 at the root: the S3 port's only */
    S3PORT(GET, "/v1/health", "", "health");
    S3PORT(GET, "/metrics", "", "metrics");
    S3PORT(GET, "/bucket/key", "bucket/key", "s3");
    S3PORT(PUT, "/", "", "s3");
    S3PORT(GET, "/v1/jobs/abc", "v1/jobs/abc", "s3");   /* a bucket named v1, there */
    size_t n;
    routes_table(0, &n);
    CHECK(n == 20);
    CHECK(!routes_table(0, &n)[n - 1].op);              /* the catch-all comes last */
    return check_done("test_proxy_routes");
}
