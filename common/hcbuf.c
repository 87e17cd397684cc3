/*
 * hcbuf: hc's buffered form, hc_request (see hc.h): the body goes out with
 * the request's head (so that a retry sends it again), the answer's body
 * is gathered, at most HC_BODY_MAX bytes.
 */
#include "hc.h"
#include "hc_int.h"
#include "util.h"

static int buf_data(void *arg, struct hc_xfer *x, const char *p, size_t n)
{
    (void)arg;
    if (x->body.n + n > HC_BODY_MAX)
        return -1;
    gbuf_add(&x->body, p, n);
    return 0;
}

static void buf_done(void *arg, struct hc_xfer *x, int status, const char *err)
{
    if (status == 0 && x->stopped)
        err = "answer too large";
    x->cb(arg, status, status && x->body.p ? x->body.p : "", status ? x->body.n : 0, err);
}

static const struct hc_ops buf_ops = {
    .on_data = buf_data,
    .on_done = buf_done,
};

void hc_request(struct hc *c, const char *method, const char *url, const void *body,
                size_t len, const char *extra_hdr, long timeout_ms, hc_done_fn cb, void *arg)
{
    /* the body goes out with the head, so that a retry can send it again */
    const char *hdrs[1] = {extra_hdr};
    struct hc_xfer *x = hc_xfer_new(c, method, url, hdrs, extra_hdr ? 1 : 0, (int64_t)len,
                                 timeout_ms, &buf_ops, arg);
    x->cb = cb;
    if (x->err[0])
        return;
    if (len)
        gbuf_add(&x->out, body, len);
    hc_send_on(x, 0);
}

