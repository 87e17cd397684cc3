/*
 * hcbuf: nodeclient's buffered form, nodeclient_request (see nodeclient.h): the body goes out with
 * the request's head (so that a retry sends it again), the answer's body
 * is gathered, at most NODECLIENT_BODY_MAX bytes.
 */
#include "nodeclient.h"
#include "nodeclient_int.h"
#include "util.h"

static int buf_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    (void)arg;
    if (x->body.n + n > NODECLIENT_BODY_MAX)
        return -1;
    gbuf_add(&x->body, p, n);
    return 0;
}

static void buf_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    if (status == 0 && x->stopped)
        err = "answer too large";
    x->cb(arg, status, status && x->body.p ? x->body.p : "", status ? x->body.n : 0, err);
}

static const struct nodeclient_ops buf_ops = {
    .on_data = buf_data,
    .on_done = buf_done,
};

void nodeclient_request(struct nodeclient *c, const char *method, const char *url, const void *body,
                        size_t len, const char *extra_hdr, long timeout_ms, nodeclient_done_fn cb,
                        void *arg)
{
    /* the body goes out with the head, so that a retry can send it again */
    const char *hdrs[1] = {extra_hdr};
    struct nodeclient_xfer *x = nodeclient_xfer_new(c, method, url, hdrs, extra_hdr ? 1 : 0,
                                                    (int64_t)len, timeout_ms, &buf_ops, arg);
    x->cb = cb;
    if (x->err[0])
        return;
    if (len)
        gbuf_add(&x->out, body, len);
    nodeclient_send_on(x, 0);
}

