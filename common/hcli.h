/*
 * hcli: the HTTP client of Shoal's daemons: libcurl's multi-socket API
 * driven by one event loop (no call here ever blocks the loop), with
 * connections to each host kept alive and reused. Two forms:
 *   hcli_start: streaming, with callbacks for the response headers, each
 *               body piece (with pause/resume for backpressure) and an
 *               upload source; used for backend object data.
 *   hcli_request: a buffered body in and out; control-plane messages and
 *               listing pages.
 *
 * Thread: an hcli belongs to the loop it was made for; call it only there.
 * Contract: on_done (or the buffered callback) fires exactly once, later, on the loop; never from inside hcli_start/request.
 */
#ifndef SHOAL_HCLI_H
#define SHOAL_HCLI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;
struct hcli;
struct hcli_xfer;

#define HCLI_READ_PAUSE (-2)

struct hcli_ops {
    /* The final response's headers are in (status >= 200). Return 0 to go
     * on, -1 to stop the transfer (on_done then reports "cancelled"). */
    int (*on_headers)(void *arg, struct hcli_xfer *x, int status);
    /* A piece of the body; it is consumed. Call hcli_pause() from here to
     * stop further pieces until hcli_resume(). Return 0, or -1 to stop. */
    int (*on_data)(void *arg, struct hcli_xfer *x, const char *p, size_t n);
    /* Upload source: up to n bytes into buf; returns the count, 0 at the
     * end, -1 to fail the transfer, or HCLI_READ_PAUSE when nothing is
     * ready yet (then call hcli_resume_upload once there is). */
    ssize_t (*on_read)(void *arg, char *buf, size_t n);
    /* status: the HTTP status, or 0 when the transfer failed (err says why). */
    void (*on_done)(void *arg, struct hcli_xfer *x, int status, const char *err);
};

struct hcli *hcli_new(struct event_base *base);
struct event_base *hcli_base(const struct hcli *c);
/* Cancels transfers in flight without calling their callbacks. */
void hcli_free(struct hcli *c);

/*
 * Start a transfer. hdrs: n full header lines ("Name: value"), copied.
 * upload_len >= 0 uploads that many bytes from on_read. Returns the
 * transfer, valid until on_done returns.
 */
struct hcli_xfer *hcli_start(struct hcli *c, const char *method, const char *url,
                             const char *const *hdrs, int n, int64_t upload_len,
                             long timeout_ms, const struct hcli_ops *ops, void *arg);
/* A response header's value (trimmed), or NULL. Valid from on_headers on. */
const char *hcli_header(const struct hcli_xfer *x, const char *name);
/* Stop a transfer without calling its callbacks (not from inside them). */
void hcli_cancel(struct hcli_xfer *x);
/* All response headers: name and value of the i-th (0 <= i < count). */
int hcli_header_count(const struct hcli_xfer *x);
const char *hcli_header_at(const struct hcli_xfer *x, int i, const char **value);
/* Stop and restart the delivery of body pieces (on_data). */
void hcli_pause(struct hcli_xfer *x);
void hcli_resume(struct hcli_xfer *x);
/* The upload source has bytes again after HCLI_READ_PAUSE. */
void hcli_resume_upload(struct hcli_xfer *x);

/*
 * status: the HTTP status, or 0 when no response came (err says why).
 * body/len: the response body (NUL-terminated; owned by hcli, valid only
 * during the call).
 */
typedef void (*hcli_done_fn)(void *arg, int status, const char *body, size_t len,
                             const char *err);

/* A buffered request; body may be NULL; extra_hdr is an optional header
 * line. The callback fires exactly once, later, on the loop. */
void hcli_request(struct hcli *c, const char *method, const char *url, const void *body,
                  size_t len, const char *extra_hdr, long timeout_ms, hcli_done_fn cb,
                  void *arg);

#endif
