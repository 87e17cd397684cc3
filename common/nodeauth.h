/*
 * nodeauth: the gate every node puts before its data, and the bearer
 * tokens it issues. A request passes with a valid cluster signature
 * (nodesig.h), a verified client credential (auth.h), or when no
 * auth_keys are configured. Loop thread of the request.
 */
#ifndef SHOAL_NODEAUTH_H
#define SHOAL_NODEAUTH_H

struct authz_who;
struct http_req;
struct node;

/* May r read or change data: a valid cluster signature, a verified client
 * credential (kept in r->auth), or no auth_keys configured. Returns 1, or
 * 0 with r answered (403 and the reason). */
int node_authenticate(struct node *n, struct http_req *r);
/* Who asks r on a native route that serves public data too (objects,
 * buckets): a node (the cluster's signature: who->node), a
 * verified client credential (kept in r->auth), or, when r presents no
 * credential at all, nobody (who->access NULL), for whom authz.h decides.
 * Returns 1 with who set, or 0 with r answered (403: a bad credential). */
int node_identify(struct node *n, struct http_req *r, struct authz_who *who);
/* POST /v1/tokens[?ttl_s=N]: answer r with a bearer token for the access
 * key that signed it (a token cannot renew itself). */
void node_token_issue(struct node *n, struct http_req *r);

#endif
