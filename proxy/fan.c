/*
 * fan: one request to every target of the current map, the answers
 * gathered (see fan.h).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cmap.h"
#include "fan.h"
#include "nodeclient.h"
#include "http.h"
#include "nodesig.h"
#include "proxy.h"
#include "util.h"
#include "worker.h"

struct fan_slot {
    struct fan *f;
    json_t *answer;
};

static void fan_one(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct fan_slot *s = arg;
    struct fan *f = s->f;
    json_object_set_new(s->answer, "status", json_integer(status));
    json_t *j = status ? json_loadb(body, len, 0, NULL) : NULL;
    if (j)
        json_object_set_new(s->answer, "body", j);
    else
        json_object_set_new(s->answer, "error", json_string(err ? err : "not JSON"));
    free(s);
    if (--f->pending == 0)
        f->done(f);
}

void fan_start(struct http_req *r, const char *method, const char *path, const char *body,
               fan_done_fn done, void *ctx)
{
    struct proxy *p = r->w->ctx;
    struct fan *f = xcalloc(1, sizeof(*f));
    f->r = r;
    f->answers = json_array();
    f->done = done;
    f->ctx = ctx;
    http_req_ref(r);
    struct cmap *m = cmap_current();
    f->pending = 1;              /* held until every request is out */
    for (int i = 0; m && i < m->n_members; i++) {
        const struct cmap_node *n = &m->nodes[m->members[i]];
        struct fan_slot *s = xcalloc(1, sizeof(*s));
        s->f = f;
        s->answer = json_pack("{s:s}", "target", n->id);
        json_array_append_new(f->answers, s->answer);
        f->pending++;
        char *url = node_signed_urlf(&p->node, method, n->url, "%s", path);
        nodeclient_request(worker_hc(r), method, url, body, body ? strlen(body) : 0, NULL, 15000,
                           fan_one, s);
        free(url);
    }
    cmap_unref(m);
    if (--f->pending == 0)       /* no targets */
        f->done(f);
}

void fan_free(struct fan *f)
{
    http_req_unref(f->r);
    json_decref(f->answers);
    free(f);
}
