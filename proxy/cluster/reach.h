/*
 * reach: this proxy's own view of which targets it can reach (reach.c),
 * so that it stops sending clients to a target that is gone within a
 * second or two, long before the primary marks it down by
 * node_timeout_ms. The view steers this proxy's requests only; the
 * cluster map is not changed.
 */
#ifndef SHOAL_PROXY_REACH_H
#define SHOAL_PROXY_REACH_H

struct cmap_node;

/* Start the probing thread (after node_start: it reads the current map);
 * stop it and drop the view. */
void reach_start(void);
void reach_stop(void);

/* Has this proxy found target t unreachable: its probes got no
 * connection, REACH_FAILS in a row? 0 for a target not probed yet. Any
 * thread; a few atomic loads, no lock. */
int reach_down(const struct cmap_node *t);

/* Node id joined or kept alive on this proxy (the primary): if it is a
 * target taken for unreachable, it is used again at once. Any thread. */
void reach_heard(const char *id);

#endif
