/*
 * fan: a request to every target of the current cluster map (the job API,
 * the space report), signed with the cluster's signature, the answers
 * gathered in one array.
 *
 * Thread: the request's worker (its nodeclient).
 */
#ifndef SHOAL_PROXY_FAN_H
#define SHOAL_PROXY_FAN_H

#include <jansson.h>

struct http_req;
struct fan;
typedef void (*fan_done_fn)(struct fan *f);

struct fan {
    struct http_req *r;          /* referenced until fan_free */
    int pending;
    json_t *answers;             /* per target: {"target", "status", "body" or "error"} */
    fan_done_fn done;
    void *ctx;                   /* the caller's */
};

/* method path (with body, or NULL) to every target; done once all have
 * answered (or failed): later, or before fan_start returns when the map
 * has no targets. */
void fan_start(struct http_req *r, const char *method, const char *path, const char *body,
               fan_done_fn done, void *ctx);
void fan_free(struct fan *f);

#endif
