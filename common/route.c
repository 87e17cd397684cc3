#include "route.h"

#include <string.h>

#include "util.h"

static int path_match(const char *p, const struct http_req *r, const char **rest, size_t *rlen)
{
    size_t pl = strlen(p);
    if (pl && p[pl - 1] == '*') {
        pl--;
        if (r->path_len < pl || memcmp(r->path, p, pl))
            return 0;
        *rest = r->path + pl;
        *rlen = r->path_len - pl;
        return 1;
    }
    if (r->path_len != pl || memcmp(r->path, p, pl))
        return 0;
    *rest = r->path + pl;
    *rlen = 0;
    return 1;
}

const struct route *route_find(const struct route *t, size_t n, const struct http_req *r,
                               const char **rest, size_t *rlen, unsigned *allow)
{
    unsigned seen = 0;
    unsigned m = r->method >= 0 && r->method < 32 ? RM(r->method) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *rs;
        size_t rl;
        if (!path_match(t[i].path, r, &rs, &rl))
            continue;
        if (t[i].methods == RM_ANY || (t[i].methods & m)) {
            *rest = rs;
            *rlen = rl;
            return &t[i];
        }
        seen |= t[i].methods;
    }
    if (allow)
        *allow = seen;
    return NULL;
}

static void allow_header(struct http_req *r, unsigned allow)
{
    static const struct {
        int m;
        const char *name;
    } names[] = {{HTTP_M_GET, "GET"},       {HTTP_M_HEAD, "HEAD"},   {HTTP_M_PUT, "PUT"},
                 {HTTP_M_POST, "POST"},     {HTTP_M_DELETE, "DELETE"}, {HTTP_M_PATCH, "PATCH"},
                 {HTTP_M_OPTIONS, "OPTIONS"}};
    char buf[64] = "";
    size_t len = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!(allow & RM(names[i].m)))
            continue;
        size_t nl = strlen(names[i].name);
        if (len + nl + 3 > sizeof(buf))
            break;
        if (len) {
            memcpy(buf + len, ", ", 2);
            len += 2;
        }
        memcpy(buf + len, names[i].name, nl + 1);
        len += nl;
    }
    http_resp_header_str(r, "Allow", buf);
}

const struct route *route_dispatch(const struct route *t, size_t n, struct http_req *r)
{
    const char *rest;
    size_t rlen;
    unsigned allow = 0;
    const struct route *rt = route_find(t, n, r, &rest, &rlen, &allow);
    if (rt) {
        if (!r->op)
            r->op = rt->op;
        rt->fn(r, rest, rlen);
        return rt;
    }
    if (allow) {
        allow_header(r, allow);
        http_reply_error(r, 405, "method %s not allowed on %.*s", r->method_name,
                         (int)(r->path_len > 200 ? 200 : r->path_len), r->path);
        return NULL;
    }
    route_not_found(r);
    return NULL;
}

void route_not_found(struct http_req *r)
{
    if (utf8_valid_prefix(r->path, r->path_len) != r->path_len)
        http_reply_error(r, 400, "path is not valid UTF-8");
    else
        http_reply_error(r, 404, "no such endpoint: %s %.*s", r->method_name,
                         (int)(r->path_len > 200 ? 200 : r->path_len), r->path);
}
