/*
 * hcli: the intra-cluster HTTP client. libcurl's multi-socket API driven by
 * one event loop (no call here ever blocks the loop), with connections to
 * each node kept alive and reused. Bodies in both directions are buffered:
 * hcli carries control-plane messages and listing pages, not object data.
 *
 * Thread: an hcli belongs to the loop it was made for; call it only there.
 */
#ifndef SHOAL_HCLI_H
#define SHOAL_HCLI_H

#include <stddef.h>

struct event_base;
struct hcli;

/*
 * status: the HTTP status, or 0 when no response came (err says why).
 * body/len: the response body (NUL-terminated; owned by hcli, valid only
 * during the call).
 */
typedef void (*hcli_done_fn)(void *arg, int status, const char *body, size_t len,
                             const char *err);

struct hcli *hcli_new(struct event_base *base);
/* Cancels requests in flight without calling their callbacks. */
void hcli_free(struct hcli *c);

/*
 * Start a request. body may be NULL. extra_hdr is an optional full header
 * line ("Name: value"). The callback always fires exactly once, later, on
 * the loop (never from inside this call).
 */
void hcli_request(struct hcli *c, const char *method, const char *url, const void *body,
                  size_t len, const char *extra_hdr, long timeout_ms, hcli_done_fn cb,
                  void *arg);

#endif
