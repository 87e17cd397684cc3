/*
 * transforms: the transform API (see transforms.h), one registry entry.
 *
 * Thread: the request's worker.
 */
#include "transforms.h"

#include "bmd.h"
#include "registry.h"
#include "xform.h"

static const json_t *all(const struct bmd *b)
{
    return b->transforms;
}

static void put_body(struct http_req *r, json_t *spec);

static const struct registry transforms = {
    "/v1/transforms/", "transform", "transforms", BUCKETS_TRANSFORM_PUT, BUCKETS_TRANSFORM_DEL,
    0, all, xform_public, put_body, "/v1/internal/transforms",
};

static void put_body(struct http_req *r, json_t *spec)
{
    registry_put(&transforms, r, spec);
}

void transforms_route(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    registry_route(&transforms, r, rlen);
}
