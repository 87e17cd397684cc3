/*
 * damaged: the damaged copies kept across the cluster (see damaged.h).
 */
#include <jansson.h>
#include <stdlib.h>

#include "authz.h"
#include "damaged.h"
#include "fan.h"
#include "http.h"
#include "node.h"
#include "nodeauth.h"
#include "proxy.h"
#include "s3auth.h"

static void gathered(struct fan *f)
{
    json_t *objects = json_array(), *unreached = json_array();
    int more = 0;
    size_t i, k;
    json_t *a, *e;
    json_array_foreach(f->answers, i, a) {
        json_t *b = json_object_get(a, "body");
        if (json_integer_value(json_object_get(a, "status")) != 200 || !b) {
            json_array_append(unreached, json_object_get(a, "target"));
            continue;
        }
        more |= json_is_true(json_object_get(b, "more"));
        json_array_foreach(json_object_get(b, "damaged"), k, e) {
            json_object_set(e, "target", json_object_get(b, "target"));
            json_array_append(objects, e);
        }
    }
    http_reply_json(f->r, 200, json_pack("{s:o, s:o, s:b}", "objects", objects, "unreached",
                                         unreached, "more", more));
    fan_free(f);
}

void damaged_route(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    (void)rest;
    (void)rlen;
    if (!node_authenticate(&p->node, r))
        return;
    /* names across every bucket: an admin key's, where there are any */
    const struct s3auth_result *a = r->auth;
    if (p->conf.n_admin_keys && a && !authz_is_admin(p->conf.admin_keys, p->conf.n_admin_keys,
                                                     a->access)) {
        http_reply_error(r, 403, "access denied: the damaged objects of every bucket are listed "
                                 "for an admin key");
        return;
    }
    fan_start(r, "GET", "/v1/internal/damaged", NULL, gathered, NULL);
}
