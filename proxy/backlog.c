/*
 * owed: write-back debts over the targets (see backlog.h).
 */
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "fan.h"
#include "http.h"
#include "backlog.h"
#include "util.h"

struct ask {
    void (*done)(struct http_req *r, json_t *owed, void *arg);
    void *arg;
};

int backlog_write_back(const char *provider, const char *bucket)
{
    struct bmd *bm = bmd_current();
    const struct bmd_bucket *bk = bm ? bmd_find(bm, provider, bucket) : NULL;
    const char *wp = bk ? json_string_value(json_object_get(bk->props, "write_policy")) : NULL;
    int wb = wp && !strcmp(wp, "write-back");
    bmd_unref(bm);
    return wb;
}

static void added(struct fan *f)
{
    struct ask *a = f->ctx;
    json_int_t objects = 0, bytes = 0, oldest = 0;
    int unreached = 0;
    size_t i;
    json_t *t;
    json_array_foreach(f->answers, i, t) {
        json_t *b = json_object_get(t, "body");
        if (json_integer_value(json_object_get(t, "status")) != 200 || !b) {
            unreached++;
            continue;
        }
        objects += json_integer_value(json_object_get(b, "objects"));
        bytes += json_integer_value(json_object_get(b, "bytes"));
        json_int_t o = json_integer_value(json_object_get(b, "oldest_ns"));
        oldest = o && (!oldest || o < oldest) ? o : oldest;
    }
    double age = oldest ? (double)(wall_ns() - (uint64_t)oldest) / 1e9 : 0;
    a->done(f->r, json_pack("{s:I, s:I, s:f, s:i}", "objects", objects, "bytes", bytes,
                            "oldest_age_s", age > 0 ? age : 0.0, "unreached", unreached),
            a->arg);
    free(a);
    fan_free(f);
}

void backlog_ask(struct http_req *r, const char *provider, const char *bucket,
                 void (*done)(struct http_req *r, json_t *owed, void *arg), void *arg)
{
    struct ask *a = xcalloc(1, sizeof(*a));
    a->done = done;
    a->arg = arg;
    char *pp = http_pct_encode(provider, strlen(provider), 0);
    char *bp = http_pct_encode(bucket, strlen(bucket), 0);
    char *path = xasprintf("/v1/internal/wbq?provider=%s&bucket=%s", pp, bp);
    fan_start(r, "GET", path, NULL, added, a);
    free(path);
    free(pp);
    free(bp);
}
