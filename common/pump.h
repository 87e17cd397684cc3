/*
 * pump: moves a known number of bytes from one socket to another without
 * copying them through user space: in -> pipe -> out with splice(2), on a
 * libevent loop, waiting on whichever side is not ready (backpressure
 * both ways). The proxy's S3 relay uses it for object bodies in both
 * directions: a target's answer to the client, a client's upload to the
 * target; a target's copy job sends a held object's file to another
 * target the same way.
 *
 * Thread: a pump belongs to the loop it was started on.
 * Contract: done fires exactly once, later, on the loop (never inside
 * pump_start), unless pump_free comes first. The sockets stay the
 * caller's: the pump never closes them.
 */
#ifndef SHOAL_PUMP_H
#define SHOAL_PUMP_H

#include <stdint.h>

struct event_base;
struct pump;

enum pump_side { PUMP_IN, PUMP_OUT };

/* err: NULL when all n bytes moved, else why not, and side the socket
 * that failed (the input ended early or stalled, or a socket's error). */
typedef void (*pump_done_fn)(void *arg, const char *err, enum pump_side side);

/* Move n (> 0) bytes from in to out (both non-blocking); idle_s seconds
 * without progress fail it. NULL when no pipe can be made (errno says
 * why). */
struct pump *pump_start(struct event_base *base, int in, int out, uint64_t n, int idle_s,
                        pump_done_fn done, void *arg);
/* The same from a regular file: n bytes of it from off (its reads never
 * wait on the loop; a file shorter than that fails on PUMP_IN). */
struct pump *pump_start_file(struct event_base *base, int file, uint64_t off, int out,
                             uint64_t n, int idle_s, pump_done_fn done, void *arg);
/* Stop (if still running) and free, without calling done. */
void pump_free(struct pump *p);

#endif
