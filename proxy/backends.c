/*
 * backends: the profile API (see backends.h). The handlers only check
 * who asks and what they name; buckets_change makes the change.
 *
 * Thread: the request's worker.
 */
#include "backends.h"

#include <string.h>

#include "authz.h"
#include "bmd.h"
#include "bprof.h"
#include "buckets.h"
#include "http.h"
#include "httpbody.h"
#include "node.h"
#include "proxy.h"
#include "route.h"
#include "worker.h"

#define PREFIX "/v1/backends/"

/* Does who (of r) manage profiles? 1, or 0 with r answered. */
static int allowed(struct http_req *r)
{
    struct proxy *p = r->w->ctx;
    struct authz_who who;
    if (!node_identify(&p->node, r, &who))
        return 0;
    if (buckets_profile_admin(p, &who))
        return 1;
    http_reply_error(r, 403, "access denied: backend profiles need %s",
                     who.access ? "an admin key" : "a signed request");
    return 0;
}

/* The name in r's path (after PREFIX) into out, or 0 with r answered. */
static int name_of(struct http_req *r, char *out, size_t n)
{
    size_t pl = strlen(PREFIX);
    size_t len = r->path_len - pl;
    if (!bprof_valid_name(r->path + pl, len) || len >= n) {
        http_reply_error(r, 400, "invalid backend profile name '%.*s' (1..63 of A-Z a-z 0-9 "
                                 ". - _)", (int)(len > 63 ? 63 : len), r->path + pl);
        return 0;
    }
    memcpy(out, r->path + pl, len);
    out[len] = '\0';
    return 1;
}

static void put_body(struct http_req *r, json_t *profile)
{
    char name[BPROF_NAME_MAX + 1];
    if (!name_of(r, name, sizeof(name))) {
        json_decref(profile);
        return;
    }
    http_req_ref(r);
    buckets_change(r, BUCKETS_PROFILE_PUT, "", name, profile, buckets_replied, r);
}

static void list(struct http_req *r)
{
    struct bmd *b = bmd_current();
    json_t *arr = json_array();
    const char *name;
    json_t *p;
    json_object_foreach(b->profiles, name, p)
        json_array_append_new(arr, bprof_public(name, p));
    bmd_unref(b);
    http_reply_json(r, 200, json_pack("{s:o}", "backends", arr));
}

static void show(struct http_req *r, const char *name)
{
    struct bmd *b = bmd_current();
    const json_t *p = bmd_profile(b, name);
    if (p)
        http_reply_json(r, 200, bprof_public(name, p));
    else
        http_reply_error(r, 404, "backend profile '%s' not found", name);
    bmd_unref(b);
}

void backends_route(struct http_req *r, const char *rest, size_t rlen)
{
    char name[BPROF_NAME_MAX + 1];
    int whole = rlen == 0;
    int get = r->method == HTTP_M_GET || r->method == HTTP_M_HEAD;
    if ((whole && !get) ||
        (!whole && !get && r->method != HTTP_M_PUT && r->method != HTTP_M_DELETE)) {
        http_resp_header(r, "Allow", whole ? "GET, HEAD" : "GET, HEAD, PUT, DELETE");
        http_reply_error(r, 405, "method %s not allowed on backend profiles", r->method_name);
        return;
    }
    (void)rest;
    if (!allowed(r))
        return;
    if (whole) {
        list(r);
        return;
    }
    if (!name_of(r, name, sizeof(name)))
        return;
    if (get) {
        show(r, name);
    } else if (r->method == HTTP_M_PUT) {
        node_read_json(r, put_body);
    } else {
        http_req_ref(r);
        buckets_change(r, BUCKETS_PROFILE_DEL, "", name, NULL, buckets_replied, r);
    }
}
