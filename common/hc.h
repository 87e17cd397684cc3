/*
 * hc: Shoal's own HTTP client for calls between its nodes (join,
 * keepalive, map and BMD pushes, forwards to the primary, listing
 * fan-out), on libevent and llhttp like the server. libcurl (hcli) stays
 * for remote backends only, where TLS, proxies and the variety of cloud
 * endpoints earn it its place.
 *
 * One hc per event loop. Connections are kept alive and pooled per peer
 * (host:port); a connect never blocks (numeric addresses connect at once,
 * names resolve through evdns on the loop). A request that fails on a
 * pooled connection before any of its answer arrived (the peer closed it
 * while idle) is sent again once on a fresh connection.
 *
 * This first form is buffered: the whole request body goes out, the whole
 * answer (at most HC_BODY_MAX bytes) comes back.
 *
 * Thread: an hc belongs to the loop it was made for; call it only there.
 * Contract: the callback fires exactly once, later, on the loop; never
 * from inside hc_request.
 */
#ifndef SHOAL_HC_H
#define SHOAL_HC_H

#include <stddef.h>

struct event_base;
struct hc;

#define HC_BODY_MAX (64u << 20)   /* an answer's body, at most */

/*
 * status: the HTTP status, or 0 when no answer came (err says why).
 * body/len: the answer's body, NUL-terminated; valid only during the call.
 */
typedef void (*hc_done_fn)(void *arg, int status, const char *body, size_t len,
                           const char *err);

struct hc *hc_new(struct event_base *base);
/* Drops pooled connections and fails nothing: requests in flight are
 * cancelled without their callbacks. */
void hc_free(struct hc *c);

/* method url ("http://host:port/path?query"); body may be NULL (len 0);
 * extra_hdr, when not NULL, is one more header line ("Name: value"). */
void hc_request(struct hc *c, const char *method, const char *url, const void *body,
                size_t len, const char *extra_hdr, long timeout_ms, hc_done_fn cb, void *arg);

/* Split an http:// URL: host (brackets of an IPv6 literal removed) into
 * host (hostlen bytes), the port (80 when absent) and where the path
 * starts ("/" when the URL has none). 0, or -1 when it is not such a
 * URL. */
int hc_url_split(const char *url, char *host, size_t hostlen, int *port, const char **path);

#endif
