/*
 * pump: socket (or file) -> pipe -> socket with splice(2) (see pump.h).
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pump.h"
#include "util.h"

#define PUMP_PIPE (1 << 20)      /* the pipe's size asked for */

struct pump {
    int in, out;
    off_t in_off;               /* the file's offset; -1: in is a socket */
    uint64_t left;               /* bytes still to take from in */
    size_t in_pipe;              /* bytes in the pipe */
    size_t cap;                  /* the pipe's size */
    int pipefd[2];
    struct event *in_ev, *out_ev;
    struct event *idle_ev;       /* no progress for idle_s */
    struct timeval idle;
    pump_done_fn done;
    void *arg;
};

/* Report; the callback may free p, so nothing touches p after this. */
static void pump_end(struct pump *p, const char *why, enum pump_side side)
{
    event_del(p->in_ev);
    event_del(p->out_ev);
    event_del(p->idle_ev);
    p->done(p->arg, why, side);
}

/* Move what can move without blocking; arm the event of the side that is
 * not ready. */
static void step(struct pump *p)
{
    for (;;) {
        int in_wait = 0, out_wait = 0;
        if (p->left > 0 && p->in_pipe < p->cap) {
            size_t room = p->cap - p->in_pipe;
            size_t want = p->left < room ? (size_t)p->left : room;
            /* a file is read as sendfile reads it: SPLICE_F_NONBLOCK would
             * fail on pages not in the page cache, with nothing to wait on */
            int file = p->in_off >= 0;
            ssize_t n = splice(p->in, file ? &p->in_off : NULL, p->pipefd[1], NULL, want,
                               SPLICE_F_MOVE | (file ? 0 : SPLICE_F_NONBLOCK));
            if (n > 0) {
                p->in_pipe += (size_t)n;
                p->left -= (uint64_t)n;
            } else if (n == 0) {
                pump_end(p, p->in_off >= 0 ? "the file ended before its size"
                                           : "the sending side closed before the end",
                         PUMP_IN);
                return;
            } else if (errno == EAGAIN) {
                in_wait = 1;
            } else if (errno != EINTR) {
                pump_end(p, strerror(errno), PUMP_IN);
                return;
            }
        }
        int out_moved = 0;
        if (p->in_pipe > 0) {
            ssize_t n = splice(p->pipefd[0], NULL, p->out, NULL, p->in_pipe,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                p->in_pipe -= (size_t)n;
                out_moved = 1;
            } else if (n < 0 && errno == EAGAIN) {
                out_wait = 1;
            } else if (n < 0 && errno != EINTR) {
                pump_end(p, strerror(errno), PUMP_OUT);
                return;
            }
        }
        if (p->left == 0 && p->in_pipe == 0) {
            pump_end(p, NULL, PUMP_IN);
            return;
        }
        /* an input that found the pipe full may go on once it drained */
        int can_in = p->left > 0 && p->in_pipe < p->cap && (!in_wait || out_moved);
        int can_out = p->in_pipe > 0 && !out_wait;
        if (can_in || can_out)
            continue;
        /* splice-in's EAGAIN means "socket empty" only with an empty pipe
         * (a pipe fills by page slots, before cap bytes): wait on the
         * input then, else on the output */
        if (out_wait)
            event_add(p->out_ev, NULL);
        if (in_wait && p->in_pipe == 0)
            event_add(p->in_ev, NULL);
        event_add(p->idle_ev, &p->idle);   /* from the last step on */
        return;
    }
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    step(arg);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    struct pump *p = arg;
    (void)fd;
    (void)what;
    /* waiting on the output with a full pipe is the receiver's stall */
    pump_end(p, "no progress", p->in_pipe > 0 ? PUMP_OUT : PUMP_IN);
}

static struct pump *start(struct event_base *base, int in, off_t off, int out, uint64_t n,
                          int idle_s, pump_done_fn done, void *arg)
{
    struct pump *p = xcalloc(1, sizeof(*p));
    if (pipe2(p->pipefd, O_CLOEXEC | O_NONBLOCK)) {
        free(p);
        return NULL;
    }
    fcntl(p->pipefd[1], F_SETPIPE_SZ, PUMP_PIPE);
    int cap = fcntl(p->pipefd[1], F_GETPIPE_SZ);
    p->cap = cap > 0 ? (size_t)cap : 65536;
    p->in = in;
    p->in_off = off;
    p->out = out;
    p->left = n;
    p->done = done;
    p->arg = arg;
    /* a file is always ready: its event only ever fires by event_active */
    p->in_ev = event_new(base, off >= 0 ? -1 : in, off >= 0 ? 0 : EV_READ, on_ready, p);
    p->out_ev = event_new(base, out, EV_WRITE, on_ready, p);
    p->idle_ev = evtimer_new(base, on_idle, p);
    p->idle.tv_sec = idle_s;
    event_active(p->in_ev, EV_READ, 0);   /* the first step, from the loop */
    return p;
}

struct pump *pump_start(struct event_base *base, int in, int out, uint64_t n, int idle_s,
                        pump_done_fn done, void *arg)
{
    return start(base, in, -1, out, n, idle_s, done, arg);
}

struct pump *pump_start_file(struct event_base *base, int file, uint64_t off, int out,
                             uint64_t n, int idle_s, pump_done_fn done, void *arg)
{
    return start(base, file, (off_t)off, out, n, idle_s, done, arg);
}

void pump_free(struct pump *p)
{
    if (!p)
        return;
    event_free(p->in_ev);
    event_free(p->out_ev);
    event_free(p->idle_ev);
    close(p->pipefd[0]);
    close(p->pipefd[1]);
    free(p);
}
