/*
 * backends: the profile API (see backends.h), one registry entry; reads
 * need an admin key too, as the profiles hand out credentials.
 *
 * Thread: the request's worker.
 */
#include "backends.h"

#include "bmd.h"
#include "bprof.h"
#include "registry.h"

static const json_t *all(const struct bmd *b)
{
    return b->profiles;
}

static void put_body(struct http_req *r, json_t *profile);

static const struct registry profiles = {
    "/v1/backends/", "backend profile", "backends", BUCKETS_PROFILE_PUT, BUCKETS_PROFILE_DEL,
    1, all, bprof_public, put_body, NULL,
};

static void put_body(struct http_req *r, json_t *profile)
{
    registry_put(&profiles, r, profile);
}

void backends_route(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    registry_route(&profiles, r, rlen);
}
