/*
 * setup: the loader's blocking requests before a run (through nodeclient on a loop
 * of their own, signed like the run's requests when a key is set): that the endpoint answers
 * and the bucket exists, and in direct mode the cluster map that places
 * each name on its target. Failures end the program with a message that
 * says what to fix.
 *
 * Threads: main thread, before any loop thread starts.
 */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmap.h"
#include "nodeclient.h"
#include "loader.h"

#define SETUP_ERR_MAX 256

struct cmap *cmap;

struct fetch {
    struct event_base *base;
    struct gbuf *body;
    long status;
    char *err;
    size_t errlen;
};

static int fetch_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct fetch *f = arg;
    (void)x;
    gbuf_add(f->body, p, n);
    return 0;
}

static void fetch_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct fetch *f = arg;
    (void)x;
    f->status = status;
    if (!status)
        snprintf(f->err, f->errlen, "%s", err ? err : "no answer");
    event_base_loopbreak(f->base);
}

static const struct nodeclient_ops fetch_ops = {
    .on_data = fetch_data,
    .on_done = fetch_done,
};

long setup_fetch(const char *method, const char *url, struct gbuf *body, char *err,
                 size_t errlen)
{
    struct fetch f = {event_base_new(), body, 0, err, errlen};
    struct nodeclient *c = nodeclient_new(f.base);
    char *lines[3] = {NULL, NULL, NULL};
    const char *hdrs[3];
    int n = 0;
    if (opt.access_key && !client_sign_native(method, url, 0, lines))
        for (; n < 3; n++)
            hdrs[n] = lines[n];
    nodeclient_start(c, method, url, hdrs, n, -1, 10000, &fetch_ops, &f);
    event_base_dispatch(f.base);
    nodeclient_free(c);
    event_base_free(f.base);
    for (int i = 0; i < 3; i++)
        free(lines[i]);
    return f.status;
}

void setup_check_target(void)
{
    char err[SETUP_ERR_MAX];
    struct gbuf b = {0};
    char *url;
    if (opt.mode == M_SHOAL || opt.mode == M_DIRECT) {
        url = xasprintf("%s/v1/buckets/%s%s%s", opt.endpoint, opt.bucket,
                        opt.provider ? "?provider=" : "", opt.provider ? opt.provider : "");
        long st = setup_fetch("HEAD", url, &b, err, sizeof(err));
        if (st == 0)
            die("cannot reach %s: %s", opt.endpoint, err);
        if (st == 404 && !opt.provider)
            die("bucket '%s' not found at %s (create it with PUT /v1/buckets/%s)", opt.bucket,
                opt.endpoint, opt.bucket);
        if (st >= 400 && st != 404)
            die("%s answered %ld for bucket '%s'", opt.endpoint, st, opt.bucket);
        free(url);
        if (opt.mode == M_DIRECT) {
            gbuf_free(&b);
            url = xasprintf("%s/v1/cluster", opt.endpoint);
            if (setup_fetch("GET", url, &b, err, sizeof(err)) != 200)
                die("cannot read the cluster map from %s", opt.endpoint);
            json_t *j = json_loadb(b.p, b.n, 0, NULL);
            char e2[256];
            cmap = j ? cmap_from_json(j, e2, sizeof(e2)) : NULL;
            json_decref(j);
            if (!cmap || cmap->n_targets == 0)
                die("the cluster map from %s has no targets", opt.endpoint);
            free(url);
        }
    } else {
        url = xasprintf("%s/", opt.endpoint);
        if (setup_fetch("GET", url, &b, err, sizeof(err)) == 0)
            die("cannot reach %s: %s", opt.endpoint, err);
        free(url);
    }
    gbuf_free(&b);
}
