/*
 * hcup: an upload's body from its source (nodeclient.h's on_read, on_socket,
 * on_file): a known length in pieces, a body of no known length as chunks,
 * the rest of one handed over as the socket, or over TLS as a file range.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <fcntl.h>
#include <stdio.h>

#include "nodeclient.h"
#include "nodeclient_int.h"

/* x has a body from its source (a length, or chunked). */
int nodeclient_uploads(const struct nodeclient_xfer *x)
{
    return x->up_len > 0 || x->up_len == NODECLIENT_UP_CHUNKED;
}

/* Everything of x's body is taken from its source. */
int nodeclient_upload_over(const struct nodeclient_xfer *x)
{
    if (x->up_len == NODECLIENT_UP_CHUNKED)
        return x->up_ended;
    return x->up_sent == (x->up_len < 0 ? 0 : x->up_len);
}

/* The rest of the upload goes straight into the socket, written by the
 * caller (NODECLIENT_READ_SOCKET), once what nodeclient queued is out. 0. */
int nodeclient_hand_socket(struct nodeclient_xfer *x)
{
    struct bufferevent *bev = x->conn->bev;
    if (x->up_socket != 1 || evbuffer_get_length(bufferevent_get_output(bev)) > 0)
        return 0;                /* on_write comes back when it is out */
    x->up_socket = 2;
    x->ops->on_socket(x->arg, x, bufferevent_getfd(bev));
    return 0;
}

void nodeclient_upload_moved(struct nodeclient_xfer *x, int whole)
{
    if (x->up_socket != 2 || !x->conn)
        return;
    if (!whole) {                /* up_socket stays: nothing is asked of the source again */
        x->fail = NODECLIENT_FAIL_REQUEST;
        nodeclient_fail_later(x, "the upload failed");
        return;
    }
    x->up_socket = 0;
    x->up_sent = x->up_len;
    struct timeval idle = {NODECLIENT_IDLE_S, 0};
    bufferevent_set_timeouts(x->conn->bev, NULL, &idle);
    nodeclient_read_idle(x->conn, NODECLIENT_IDLE_S);
}

/* HTTPS has no socket to hand over: the rest of the upload is the
 * source's file range (on_file), queued for OpenSSL to read (mapped, not
 * copied into the output). Returns -1 when x failed (and is gone), else 0. */
static int upload_file(struct nodeclient_xfer *x)
{
    int fd = -1, dup_fd = -1;
    uint64_t off = 0;
    if (!x->ops->on_file || x->ops->on_file(x->arg, &fd, &off) ||
        (dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0 ||
        evbuffer_add_file(bufferevent_get_output(x->conn->bev), dup_fd, (ev_off_t)off,
                          (ev_off_t)(x->up_len - x->up_sent)) < 0) {   /* closes dup_fd */
        x->fail = NODECLIENT_FAIL_REQUEST;
        nodeclient_finish(x, 0, "this upload cannot go over HTTPS");
        return -1;
    }
    /* the wait for the answer starts once it is all out (on_write, then
     * pump_upload); until then only a stuck write is no progress */
    x->up_sent = x->up_len;
    return 0;
}

/* nodeclient_pump_upload for a body of no known length: each piece as a chunk, the
 * last (empty) one when the source ends. */
static int pump_chunked(struct nodeclient_xfer *x, struct evbuffer *out)
{
    char buf[NODECLIENT_UP_PIECE];
    while (!x->up_ended && evbuffer_get_length(out) < NODECLIENT_UP_LOW) {
        ssize_t got = x->ops->on_read(x->arg, buf, sizeof(buf));
        if (got == NODECLIENT_READ_PAUSE) {
            x->up_waiting = 1;
            return 0;
        }
        if (got < 0 || (size_t)got > sizeof(buf)) {
            x->fail = NODECLIENT_FAIL_REQUEST;
            nodeclient_finish(x, 0, "the upload failed");
            return -1;
        }
        if (got == 0) {
            evbuffer_add(out, "0\r\n\r\n", 5);
            x->up_ended = 1;
            break;
        }
        evbuffer_add_printf(out, "%zx\r\n", (size_t)got);
        evbuffer_add(out, buf, (size_t)got);
        evbuffer_add(out, "\r\n", 2);
        x->up_sent += got;
    }
    if (x->up_ended)
        nodeclient_read_idle(x->conn, NODECLIENT_IDLE_S); /* the wait is for the answer */
    return 0;
}

int nodeclient_pump_upload(struct nodeclient_xfer *x)
{
    if (x->up_mem)
        return 0;                /* a memory body is queued whole (send_mem) */
    struct evbuffer *out = bufferevent_get_output(x->conn->bev);
    if (x->up_len == NODECLIENT_UP_CHUNKED)
        return pump_chunked(x, out);
    char buf[NODECLIENT_UP_PIECE];
    while (x->up_sent < x->up_len && evbuffer_get_length(out) < NODECLIENT_UP_LOW) {
        int64_t left = x->up_len - x->up_sent;
        size_t want = left < (int64_t)sizeof(buf) ? (size_t)left : sizeof(buf);
        ssize_t got = x->ops->on_read(x->arg, buf, want);
        if (got == NODECLIENT_READ_PAUSE) {
            x->up_waiting = 1;
            return 0;
        }
        if (got == NODECLIENT_READ_SOCKET && x->tls)
            return upload_file(x);
        if (got == NODECLIENT_READ_SOCKET) {
            x->up_socket = 1;    /* handed over once the output is out */
            return nodeclient_hand_socket(x);
        }
        if (got <= 0 || (size_t)got > want) {
            x->fail = NODECLIENT_FAIL_REQUEST;
            nodeclient_finish(x, 0, got == 0 ? "the upload ended short" : "the upload failed");
            return -1;
        }
        evbuffer_add(out, buf, (size_t)got);
        x->up_sent += got;
    }
    if (x->up_sent == x->up_len) {
        /* all sent: from now on the wait is for the answer */
        nodeclient_read_idle(x->conn, NODECLIENT_IDLE_S);
    }
    return 0;
}
