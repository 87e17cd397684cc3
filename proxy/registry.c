/*
 * registry: the handlers check who asks and what they name;
 * buckets_change makes the change. Names are as buckets' (bmd_valid_name).
 */
#include "registry.h"

#include <string.h>

#include "authz.h"
#include "bmd.h"
#include "fan.h"
#include "http.h"
#include "httpbody.h"
#include "node.h"
#include "proxy.h"
#include "worker.h"

#define NAME_MAX_LEN 63

/* May r's caller do this? 1, or 0 with r answered. */
static int allowed(const struct registry *g, struct http_req *r, int change)
{
    struct proxy *p = r->w->ctx;
    struct authz_who who;
    if (!node_identify(&p->node, r, &who))
        return 0;
    int admin = change || g->read_admin;
    if (admin ? buckets_profile_admin(p, &who) : !who.enforced || who.access || who.node)
        return 1;
    http_reply_error(r, 403, "access denied: %ss need %s", g->what,
                     admin && who.access ? "an admin key" : "a signed request");
    return 0;
}

/* The name in r's path (after the prefix) into out, or 0 with r answered. */
static int name_of(const struct registry *g, struct http_req *r, char *out, size_t n)
{
    size_t pl = strlen(g->prefix);
    size_t len = r->path_len - pl;
    if (!bmd_valid_name(r->path + pl, len) || len >= n) {
        http_reply_error(r, 400, "invalid %s name '%.*s' (1..63 of A-Z a-z 0-9 . - _)", g->what,
                         (int)(len > 63 ? 63 : len), r->path + pl);
        return 0;
    }
    memcpy(out, r->path + pl, len);
    out[len] = '\0';
    return 1;
}

void registry_put(const struct registry *g, struct http_req *r, json_t *spec)
{
    char name[NAME_MAX_LEN + 1];
    if (!name_of(g, r, name, sizeof(name))) {
        json_decref(spec);
        return;
    }
    http_req_ref(r);
    buckets_change(r, g->put, "", name, spec, buckets_replied, r);
}

/* The list, each with its state on every target that answered (states
 * NULL: none asked); a target that did not answer is named in
 * "unreached". */
static void answer_list(const struct registry *g, struct http_req *r, const json_t *states)
{
    struct bmd *b = bmd_current();
    json_t *arr = json_array(), *unreached = json_array();
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)g->all(b), name, v) {
        json_t *o = g->public_view(name, v);
        if (states) {
            json_t *per = json_object();
            size_t i;
            json_t *a;
            json_array_foreach(states, i, a) {
                json_t *st = json_object_get(json_object_get(json_object_get(a, "body"),
                                                             g->list_key), name);
                json_object_set(per, json_string_value(json_object_get(a, "target")) ?: "?",
                                st ? st : json_null());
            }
            json_object_set_new(o, "targets", per);
        }
        json_array_append_new(arr, o);
    }
    bmd_unref(b);
    size_t i;
    json_t *a;
    json_array_foreach(states, i, a)
        if (json_integer_value(json_object_get(a, "status")) != 200)
            json_array_append(unreached, json_object_get(a, "target"));
    json_t *ans = json_pack("{s:o}", g->list_key, arr);
    if (json_array_size(unreached))
        json_object_set(ans, "unreached", unreached);
    json_decref(unreached);
    http_reply_json(r, 200, ans);
}

static void gathered(struct fan *f)
{
    answer_list(f->ctx, f->r, f->answers);
    fan_free(f);
}

static void list(const struct registry *g, struct http_req *r)
{
    if (g->state_path)
        fan_start(r, "GET", g->state_path, NULL, gathered, (void *)g);
    else
        answer_list(g, r, NULL);
}

static void show(const struct registry *g, struct http_req *r, const char *name)
{
    struct bmd *b = bmd_current();
    const json_t *v = json_object_get(g->all(b), name);
    if (v)
        http_reply_json(r, 200, g->public_view(name, v));
    else
        http_reply_error(r, 404, "%s '%s' not found", g->what, name);
    bmd_unref(b);
}

void registry_route(const struct registry *g, struct http_req *r, size_t rlen)
{
    char name[NAME_MAX_LEN + 1];
    int whole = rlen == 0;
    int get = r->method == HTTP_M_GET || r->method == HTTP_M_HEAD;
    if ((whole && !get) ||
        (!whole && !get && r->method != HTTP_M_PUT && r->method != HTTP_M_DELETE)) {
        http_resp_header(r, "Allow", whole ? "GET, HEAD" : "GET, HEAD, PUT, DELETE");
        http_reply_error(r, 405, "method %s not allowed on %ss", r->method_name, g->what);
        return;
    }
    if (!allowed(g, r, !get))
        return;
    if (whole) {
        list(g, r);
    } else if (!name_of(g, r, name, sizeof(name))) {
        return;
    } else if (get) {
        show(g, r, name);
    } else if (r->method == HTTP_M_PUT) {
        node_read_json(r, g->put_body);
    } else {
        http_req_ref(r);
        buckets_change(r, g->del, "", name, NULL, buckets_replied, r);
    }
}
