/* fixture: what several unit tests build, header-only like check.h: a
 * cluster map of one proxy and n targets, the bucket metadata of a few
 * buckets, an object's store key in the caller's buffer, and a store in a
 * new temporary directory. */
#ifndef SHOAL_TEST_FIXTURE_H
#define SHOAL_TEST_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bmd.h"
#include "cmap.h"
#include "store.h"

/* Proxy p1 and targets t0..t<n-1>, on made-up loopback URLs. */
static inline struct cmap *fixture_map(int targets)
{
    struct cmap *m = cmap_new("uuid", "p1", 1);
    cmap_put_node(m, "p1", NODE_PROXY, "http://127.0.0.1:1");
    for (int i = 0; i < targets; i++) {
        char id[16], url[64];
        snprintf(id, sizeof(id), "t%d", i);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", 100 + i);
        cmap_put_node(m, id, NODE_TARGET, url);
    }
    return m;
}

/* Install the BMD of n buckets shoal/<names[i]>, with the properties
 * props[i] (JSON text, NULL for none), the i-th created at i + 1: 0, or
 * -1 (bad JSON, a name twice). */
static inline int fixture_bmd(int n, const char *const *names, const char *const *props)
{
    struct bmd *b = bmd_new(1);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        json_t *p = props[i] ? json_loads(props[i], 0, NULL) : NULL;
        rc = (props[i] && !p) || bmd_add(b, "shoal", names[i], p, i + 1);
        json_decref(p);
    }
    if (rc) {
        bmd_unref(b);
        return -1;
    }
    return bmd_install(b, 1) == 1 ? 0 : -1;
}

/* The store key of shoal/<bucket>/<name> into out (cap bytes, NUL-ended):
 * its length, or 0 when it does not fit. */
static inline size_t fixture_mkey(const char *bucket, const char *name, char *out, size_t cap)
{
    size_t kl;
    char *k = store_mkey("shoal", bucket, name, strlen(name), &kl);
    if (kl >= cap) {
        free(k);
        return 0;
    }
    memcpy(out, k, kl);
    out[kl] = '\0';
    free(k);
    return kl;
}

/* A store of one mountpath in a new directory made from dir (a mkdtemp
 * template, rewritten): 0, or -1. */
static inline int fixture_store_open(struct store *s, char *dir)
{
    char err[256];
    char *dirs[1] = {dir};
    return mkdtemp(dir) && store_open(s, dirs, 1, NULL, 0, 0, err, sizeof(err)) == 0 ? 0 : -1;
}

/* Close it and remove its directory: 0, or -1. */
static inline int fixture_store_close(struct store *s, const char *dir)
{
    char cmd[4200];
    store_close(s);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
