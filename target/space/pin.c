/*
 * pin: the live pins, each a job's selection (see pin.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "node.h"
#include "pin.h"
#include "store.h"
#include "target.h"
#include "tmpl.h"
#include "util.h"

struct pin {
    struct pin *next;
    char id[64];
    char provider[16];
    char bucket[64];
    char *prefix;                /* or NULL; "" for the whole bucket */
    json_t *names;               /* an object used as a set, or NULL */
    struct tmpl tm;
    int has_tmpl;
    uint64_t until_ns;           /* 0: until unpinned */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct pin *pins;

static void pin_free(struct pin *p)
{
    free(p->prefix);
    json_decref(p->names);
    if (p->has_tmpl)
        tmpl_free(&p->tm);
    free(p);
}

char *pin_record(const json_t *spec, uint64_t start_ns)
{
    if (!json_is_true(json_object_get(spec, "pin")))
        return NULL;
    json_int_t ttl = json_integer_value(json_object_get(spec, "pin_ttl_s"));
    json_t *r = json_pack("{s:O, s:O, s:I}", "provider", json_object_get(spec, "provider"),
                          "bucket", json_object_get(spec, "bucket"), "until_ns",
                          ttl > 0 ? (json_int_t)(start_ns + (uint64_t)ttl * 1000000000u) : 0);
    static const char *const sel[] = {"names", "template", "prefix"};
    for (int i = 0; i < 3; i++)
        if (json_object_get(spec, sel[i]))
            json_object_set(r, sel[i], json_object_get(spec, sel[i]));
    char *s = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    return s;
}

void pin_add(const char *id, const char *record)
{
    json_t *r = json_loads(record, 0, NULL);
    const char *prov = json_string_value(json_object_get(r, "provider"));
    const char *bucket = json_string_value(json_object_get(r, "bucket"));
    const char *tm = json_string_value(json_object_get(r, "template"));
    const char *prefix = json_string_value(json_object_get(r, "prefix"));
    json_t *names = json_object_get(r, "names");
    char err[256];
    if (!prov || !bucket) {
        json_decref(r);
        return;
    }
    struct pin *p = xcalloc(1, sizeof(*p));
    snprintf(p->id, sizeof(p->id), "%s", id);
    snprintf(p->provider, sizeof(p->provider), "%s", prov);
    snprintf(p->bucket, sizeof(p->bucket), "%s", bucket);
    p->until_ns = (uint64_t)json_integer_value(json_object_get(r, "until_ns"));
    if (tm && tmpl_parse(&p->tm, tm, err, sizeof(err)) == 0) {
        p->has_tmpl = 1;
    } else if (json_is_array(names)) {
        p->names = json_object();
        size_t i;
        json_t *v;
        json_array_foreach(names, i, v)
            if (json_is_string(v))
                json_object_set_new(p->names, json_string_value(v), json_true());
    } else {
        p->prefix = xstrdup(prefix ? prefix : "");
    }
    json_decref(r);
    pthread_mutex_lock(&mu);
    p->next = pins;
    pins = p;
    pthread_mutex_unlock(&mu);
}

static int selects(const struct pin *p, const char *name, size_t n)
{
    if (p->has_tmpl)
        return tmpl_match(&p->tm, name, n);
    if (p->names) {
        char *s = xstrndup(name, n);
        int in = json_object_get(p->names, s) != NULL;
        free(s);
        return in;
    }
    return strlen(p->prefix) <= n && !memcmp(name, p->prefix, strlen(p->prefix));
}

int pin_holds(const char *provider, const char *bucket, const char *name, size_t n)
{
    uint64_t now = wall_ns();
    int held = 0;
    pthread_mutex_lock(&mu);
    for (struct pin *p = pins; p && !held; p = p->next)
        held = (!p->until_ns || now < p->until_ns) && !strcmp(p->provider, provider) &&
               !strcmp(p->bucket, bucket) && selects(p, name, n);
    pthread_mutex_unlock(&mu);
    return held;
}

int pin_drop(const char *id)
{
    struct pin *gone = NULL;
    pthread_mutex_lock(&mu);
    for (struct pin **pp = &pins; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->id, id)) {
            gone = *pp;
            *pp = gone->next;
            break;
        }
    pthread_mutex_unlock(&mu);
    if (!gone)
        return -ENOENT;
    pin_free(gone);
    return 0;
}

static int load_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    (void)arg;
    char id[64], *rec = xstrndup(v, vl);
    snprintf(id, sizeof(id), "%.*s", (int)(kl - 1), k + 1);
    pin_add(id, rec);
    free(rec);
    return 0;
}

void pin_load(struct store *s)
{
    store_kv_scan(s, &s->mp[0], "n", 1, load_one, NULL);
}

/* PATCH /v1/internal/jobs/ID {"pin": false}: the job's pin goes (its
 * record too); the objects may be evicted from now on. */
static void patch_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct target *t = r->w->ctx;
    char *id = arg;
    json_t *j = json_loadb(body, len, 0, NULL);   /* body stays the reader's */
    if (!json_is_false(json_object_get(j, "pin")) || json_object_size(j) != 1) {
        http_reply_error(r, 400, "a job is changed with {\"pin\": false} only");
    } else if (pin_drop(id) == 0) {
        char *nk = xasprintf("n%s", id);
        store_kv_del(&t->store, &t->store.mp[0], nk, strlen(nk));
        free(nk);
        http_reply_json(r, 200, json_pack("{s:s, s:b}", "id", id, "pinned", 0));
    } else {
        http_reply_error(r, 404, "no pin of job %s here", id);
    }
    json_decref(j);
    free(id);
}

void pin_patch(struct http_req *r, const char *rest, size_t rlen)
{
    node_read_body(r, 4096, patch_body, free, xstrndup(rest, rlen > 63 ? 63 : rlen));
}
