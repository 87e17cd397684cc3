/*
 * registry: the API of a set of named things the BMD keeps besides
 * buckets (backend profiles, transforms), one table entry each:
 *
 *   GET    PREFIX          {"LIST_KEY": [public view, ...]}
 *   GET    PREFIX/NAME     the public view, or 404
 *   PUT    PREFIX/NAME     the body: 201 new, 200 replaced (buckets_change)
 *   DELETE PREFIX/NAME     204, 404, or the entry's own refusal
 *
 * A change needs an admin key where there are any (buckets_profile_admin);
 * a read needs the same where the entry says so, else a signed request
 * where keys are configured.
 *
 * Thread: the request's worker.
 */
#ifndef SHOAL_PROXY_REGISTRY_H
#define SHOAL_PROXY_REGISTRY_H

#include <jansson.h>
#include <stddef.h>

#include "buckets.h"

struct bmd;
struct http_req;

struct registry {
    const char *prefix;          /* "/v1/backends/" */
    const char *what;            /* "backend profile", for messages */
    const char *list_key;        /* "backends" */
    enum buckets_op put, del;
    int read_admin;              /* reads need what changes need (secrets nearby) */
    const json_t *(*all)(const struct bmd *b);   /* name -> spec */
    json_t *(*public_view)(const char *name, const json_t *spec);
    /* a PUT's parsed body: the entry's wrapper of registry_put */
    void (*put_body)(struct http_req *r, json_t *spec);
    /* where each target reports its state of them ({LIST_KEY: {NAME:
     * state}}), given in the list as "targets": {ID: state}; or NULL */
    const char *state_path;
};

/* Route r for g; rlen is the length of what follows g->prefix (0: the list). */
void registry_route(const struct registry *g, struct http_req *r, size_t rlen);
/* A PUT's parsed body (put_body's work): the change, or r answered. */
void registry_put(const struct registry *g, struct http_req *r, json_t *spec);

#endif
