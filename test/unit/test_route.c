/* route: exact and prefix paths, method masks, first match wins, the
 * methods of a known path for 405; 404 for an unknown path, 400 for one
 * that is not UTF-8. */
#include <event2/buffer.h>
#include <string.h>

#include "check.h"
#include "route.h"

static void a(struct http_req *r, const char *rest, size_t rlen) { (void)r, (void)rest, (void)rlen; }
static void b(struct http_req *r, const char *rest, size_t rlen) { (void)r, (void)rest, (void)rlen; }
static void c(struct http_req *r, const char *rest, size_t rlen) { (void)r, (void)rest, (void)rlen; }

static const struct route table[] = {
    {RM_GET | RM_HEAD, "/v1/health", a, "health"},
    {RM_POST, "/v1/objects/special", b, "special"},
    {RM_GET | RM_PUT | RM_DELETE | RM_HEAD, "/v1/objects/*", c, "object"},
    {RM_ANY, "/any", a, "any"},
};

static const struct route *find(int method, const char *path, const char **rest, size_t *rl,
                                unsigned *allow)
{
    struct http_req r;
    memset(&r, 0, sizeof(r));
    r.method = method;
    r.path = path;
    r.path_len = strlen(path);
    return route_find(table, sizeof(table) / sizeof(table[0]), &r, rest, rl, allow);
}

/* The status route_dispatch answers method and path with (the request
 * has no connection: only its status is kept); 0 when a route took it. */
static int dispatched(int method, const char *path, size_t len)
{
    struct http_req r;
    memset(&r, 0, sizeof(r));
    r.method = method;
    r.method_name = "GET";
    r.path = path;
    r.path_len = len;
    const struct route *t = route_dispatch(table, sizeof(table) / sizeof(table[0]), &r);
    if (r.resp_hdrs)
        evbuffer_free(r.resp_hdrs);
    return t ? 0 : r.status;
}

int main(void)
{
    const char *rest;
    size_t rl;
    unsigned allow;
    const struct route *t = find(HTTP_M_GET, "/v1/health", &rest, &rl, &allow);
    CHECK(t && t->fn == a && rl == 0);
    CHECK(find(HTTP_M_GET, "/v1/healthz", &rest, &rl, &allow) == NULL && allow == 0);
    CHECK(find(HTTP_M_PUT, "/v1/health", &rest, &rl, &allow) == NULL &&
          allow == (RM_GET | RM_HEAD));
    t = find(HTTP_M_PUT, "/v1/objects/b/k", &rest, &rl, &allow);
    CHECK(t && t->fn == c && rl == 3 && !memcmp(rest, "b/k", 3));
    t = find(HTTP_M_POST, "/v1/objects/special", &rest, &rl, &allow);
    CHECK(t && t->fn == b);
    /* a POST elsewhere under the prefix: the prefix route's methods */
    CHECK(find(HTTP_M_POST, "/v1/objects/b/k", &rest, &rl, &allow) == NULL &&
          allow == (RM_GET | RM_PUT | RM_DELETE | RM_HEAD));
    t = find(HTTP_M_PATCH, "/any", &rest, &rl, &allow);
    CHECK(t && t->fn == a);
    t = find(HTTP_M_OTHER, "/any", &rest, &rl, &allow);
    CHECK(t && t->fn == a);
    CHECK(find(HTTP_M_GET, "/v1/objects", &rest, &rl, &allow) == NULL);

    CHECK(dispatched(HTTP_M_GET, "/v1/health", 10) == 0);
    CHECK(dispatched(HTTP_M_PUT, "/v1/health", 10) == 405);
    CHECK(dispatched(HTTP_M_GET, "/v1/x", 5) == 404);
    CHECK(dispatched(HTTP_M_GET, "/v1/caf\xc3\xa9", 10) == 404);
    CHECK(dispatched(HTTP_M_GET, "/v1/x\xff", 6) == 400);
    CHECK(dispatched(HTTP_M_GET, "/v1/\xc0\xaf", 6) == 400); /* overlong '/' */
    return check_done("test_route");
}
