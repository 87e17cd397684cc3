/*
 * nodesig: cluster signatures, the proof that a request comes from a node
 * of this cluster (a proxy's redirect to the owning target, a push from
 * the primary, a call between nodes). A signature is the hex
 * HMAC-SHA256, with the cluster secret as the key, over "METHOD\n" and the
 * request target up to and including its shoal_exp parameter; it travels
 * as the target's last parameter, shoal_sig. Any thread: the keyed states
 * are set up once and only copied afterwards.
 */
#ifndef SHOAL_NODESIG_H
#define SHOAL_NODESIG_H

#include <stddef.h>

struct http_req;
struct node;

/* Absorb n->conf->cluster_secret into n->mac_in/mac_out (aborts when out
 * of memory); node_sig_free releases them. node_init/node_stop call these. */
void node_sig_init(struct node *n);
void node_sig_free(struct node *n);

/* Sign "METHOD\n" and len bytes of a request target (path and query up to
 * and including shoal_exp) into out (65 bytes: hex and NUL). */
void node_sign(const struct node *n, const char *method, const char *target, size_t len,
               char *out);
/* base + path + "?" + query (raw; NULL or "" for none) +
 * "shoal_exp=..&shoal_sig=..", valid for conf->redirect_ttl_s: a new
 * string. HEAD is signed as GET. */
char *node_signed_url(const struct node *n, const char *method, const char *base,
                      const char *path, const char *query);
/* The same for a path and query formatted from fmt ("/v1/x?a=%s"). */
char *node_signed_urlf(const struct node *n, const char *method, const char *base,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* r's cluster signature: 1 valid, 0 missing, -1 bad or expired. */
int node_check_sig(const struct node *n, struct http_req *r);

#endif
