/*
 * raftnet: the proxies' consensus connections, authenticated. It wraps
 * libraft's TCP transport: once a connection is up (libraft's own
 * handshake names the dialing server), the accepting side sends a fresh
 * 32-byte nonce and the dialer answers HMAC-SHA256(cluster secret,
 * "shoal-raft" | nonce | dialer's raft id). Only then is the connection
 * handed to Raft; a wrong or late answer (5 s) closes it. Raft's
 * connections carry messages one way, from the dialer, so authenticating
 * the dialer covers everything Raft accepts.
 *
 * Thread: the quorum thread's loop only.
 */
#ifndef SHOAL_PROXY_RAFTNET_H
#define SHOAL_PROXY_RAFTNET_H

#include <stddef.h>

struct raft_uv_transport;
struct uv_loop_s;

/* Set up t (to pass to raft_uv_init) listening on bind_addr ("host:port").
 * 0 or -1 with err. */
int raftnet_init(struct raft_uv_transport *t, struct uv_loop_s *loop, const char *bind_addr,
                 const char *secret, char *err, size_t errlen);
/* Release t's memory once Raft has closed it. */
void raftnet_free(struct raft_uv_transport *t);

#endif
