/*
 * nodes: an operator's changes to the targets of the cluster, on the
 * primary (nodes.c):
 *
 *   PUT    /v1/cluster/nodes/ID?maintenance[=on|off]
 *          maintenance: the target owns no names (its objects move to
 *          their new owners, and stay readable meanwhile); off: back.
 *   DELETE /v1/cluster/nodes/ID
 *          decommission: the target owns no names; once its objects
 *          have moved away (its rebalance is done without errors) it
 *          leaves the map and shuts down. A target that is down leaves
 *          at once: what only it held is lost.
 *
 * Both answer 202 with the new map version; 404 for an unknown id, 409
 * for a proxy.
 *
 *   GET, POST, DELETE /v1/targets/ID/mountpaths[?path=P]
 *          forwarded to the target (target/jobs/mpath.h): list, add ({"path"}),
 *          remove a mountpath.
 *
 * Thread: handlers on any worker; the decommission's follow-up on the
 * control thread's tick.
 */
#ifndef SHOAL_PROXY_NODES_H
#define SHOAL_PROXY_NODES_H

#include <stddef.h>

struct http_req;
struct node;

void nodes_route(struct http_req *r, const char *rest, size_t rlen);
void nodes_targets_route(struct http_req *r, const char *rest, size_t rlen);
/* The control thread, every period on the primary: decommissioned
 * targets whose objects have moved leave. */
void nodes_tick(struct node *n);

#endif
