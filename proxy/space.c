/*
 * space: the cluster's space report (see space.h).
 */
#include <jansson.h>
#include <stdlib.h>

#include "fan.h"
#include "http.h"
#include "node.h"
#include "proxy.h"
#include "space.h"

static void gathered(struct fan *f)
{
    json_int_t used = 0, total = 0;
    int unreached = 0;
    json_t *targets = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(f->answers, i, a) {
        json_t *b = json_object_get(a, "body");
        if (json_integer_value(json_object_get(a, "status")) != 200 || !b) {
            unreached++;
            json_array_append(targets, a);   /* who, and why not */
            continue;
        }
        used += json_integer_value(json_object_get(b, "used"));
        total += json_integer_value(json_object_get(b, "total"));
        json_array_append(targets, b);
    }
    http_reply_json(f->r, 200, json_pack("{s:I, s:I, s:f, s:i, s:o}", "used", used, "total",
                                         total, "used_pct",
                                         total ? 100.0 * (double)used / (double)total : 0.0,
                                         "unreached", unreached, "targets", targets));
    fan_free(f);
}

void space_route(struct http_req *r, const char *rest, size_t rlen)
{
    struct proxy *p = r->w->ctx;
    (void)rest;
    (void)rlen;
    if (!node_authenticate(&p->node, r))
        return;
    fan_start(r, "GET", "/v1/internal/space", NULL, gathered, NULL);
}
