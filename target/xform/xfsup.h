/*
 * xfsup: the target's supervisor of transforms (xform.h). A transform
 * registered with a command runs here as a child process: its own
 * working directory (state_dir/transforms/NAME), the port to listen on
 * (127.0.0.1) in $PORT, its output to the target's log line by line with
 * the transform's name, restarted with backoff when it dies (0.5 s
 * doubling to 30 s), stopped (SIGTERM, then SIGKILL after 3 s) when it is
 * deleted or changed or the target stops, and killed with the target
 * should the target die (PR_SET_PDEATHSIG). A transform registered with
 * a url is the operator's service: nothing runs here.
 *
 * One supervisor per process, on its own thread, which follows the BMD
 * (bmd_current) every 100 ms; the calls below are for any thread.
 */
#ifndef SHOAL_TARGET_XFSUP_H
#define SHOAL_TARGET_XFSUP_H

#include <jansson.h>
#include <stddef.h>

/* Start the supervisor: 0, or -1 with err. */
int xfsup_start(const char *state_dir, char *err, size_t errlen);
/* Stop every child and the thread (at the target's stop). */
void xfsup_stop(void);
/* Where transform name answers: 0 with its base URL in url
 * ("http://127.0.0.1:PORT/" or the registered one), -ENOENT when there is
 * no such transform, -EAGAIN while its command is not listening (starting,
 * or waiting to be restarted). */
int xfsup_url(const char *name, char *url, size_t n);
/* Whether transform name is a command whose child has died (reaped here
 * at once, or no longer listening): a request it dropped before
 * answering is then "restarting, try again", not the transform's error. */
int xfsup_down(const char *name);
/* A new object: each transform's state here, {"NAME": {"kind", "state",
 * "pid", "port", "restarts", "last_exit"}}; state is "running",
 * "starting", "backoff" (dead, restarted later) or "remote" (a url). */
json_t *xfsup_state(void);
/* GET /v1/internal/transforms: xfsup_state as the answer (the proxy's
 * GET /v1/transforms gathers every target's). */
struct http_req;
void xfsup_report(struct http_req *r, const char *rest, size_t rlen);

#endif
