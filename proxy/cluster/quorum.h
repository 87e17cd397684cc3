/*
 * quorum: the proxies' consensus. The proxies form one Raft group
 * (Debian's libraft, on a thread of its own with a libuv loop) that
 * commits every cluster map and BMD version and elects the primary: the
 * leader, once it has applied everything before its term, commits a map
 * naming itself primary and only then acts as primary. A change is
 * installed on a proxy when the group has committed it, so a proxy cut
 * off from the majority can never install a map or a bucket change.
 *
 * The first proxy (no primary_url) founds the group; the primary adds
 * every proxy of the map that gave its consensus address as a voter.
 * Peers reach each other over raftnet's authenticated connections.
 *
 * Thread: quorum_propose from any thread; done runs on the caller's loop.
 */
#ifndef SHOAL_PROXY_QUORUM_H
#define SHOAL_PROXY_QUORUM_H

#include <stddef.h>
#include <stdint.h>

struct bmd;
struct conf;
struct cmap;
struct http_req;
struct loopq;
struct node;
struct proxy;

#define QUORUM_CMAP 0x1
#define QUORUM_BMD 0x2

/* A change of the map and/or BMD, embedded first in the caller's state. */
struct quorum_change {
    /* On the quorum thread, against copies of the newest versions (the
     * ones committed or still being committed): edit them and set
     * changed (QUORUM_CMAP | QUORUM_BMD; 0: nothing to commit), then
     * return 0; or return the HTTP status refusing the change, with err
     * set. New versions are numbered after edit. */
    int (*edit)(struct quorum_change *c, struct cmap *m, struct bmd *b);
    /* On loop q once committed (status 0, version set), found needless
     * (status 0, changed 0) or refused (edit's status, or 503 when this
     * proxy is not the primary or lost the majority). */
    void (*done)(struct quorum_change *c, int status, const char *err);
    struct loopq *q;
    int changed;
    int64_t version;             /* committed: the map's (or the BMD's) new version */
    int status;
    char err[200];
    struct quorum_change *next;  /* quorum's */
};

/* This proxy's consensus address: IPv4:raft_port, the host being
 * public_url's (resolved). Set as node.raft_addr before node_start, so
 * that the first join carries it. NULL with err when it has no IPv4
 * address. */
char *quorum_address(const struct conf *c, char *err, size_t errlen);
/* Start the consensus of this proxy (after node_start). 0 or -1 with err. */
int quorum_start(struct proxy *p, char *err, size_t errlen);
/* Stop it: changes not yet committed, and any proposed after, get 503. */
void quorum_stop(struct proxy *p);
/* Release it, once no thread can propose (after node_stop). */
void quorum_free(struct proxy *p);
void quorum_propose(struct proxy *p, struct quorum_change *c);

/* node's ready hook: a primary is known (this proxy, or the leader the
 * map names). */
int quorum_ready(struct node *n);

/* GET /v1/cluster/quorum: this proxy's view of the group. */
void quorum_route(struct http_req *r, const char *rest, size_t rlen);

#endif
