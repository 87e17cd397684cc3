/*
 * job: a target's share of a batch job (the proxy's /v1/jobs): of the
 * names a job selects, the ones this target owns are worked on, a bounded
 * number at a time, on the loop of the worker that received the job.
 *
 * Kinds: prefetch (an object of a backed bucket not yet held is fetched
 * through the same path as a cold GET, common to both: target/backend/fetch.c);
 * evict (Shoal's copy of a backed bucket's object is dropped, on the I/O
 * pool; the backend keeps the object).
 * Selections: a list of names, a template (common/tmpl.h), or the
 * backend's listing of a prefix (the whole bucket without one), walked a
 * page at a time by every target, each keeping the names it owns.
 *
 * Internal routes, behind the cluster signature:
 *   POST   /v1/internal/jobs          start (JSON: id, kind, provider,
 *                                      bucket, names | template | prefix)
 *   GET    /v1/internal/jobs[?key=K]  the jobs it knows (a proxy rebuilds
 *                                      its list, or finds a key, from them)
 *   GET    /v1/internal/jobs/ID       this target's progress (JSON)
 *   DELETE /v1/internal/jobs/ID       abort
 *
 * A job is recorded in the store before it is acknowledged, and again with
 * its progress when it ends: a target that restarts runs its unfinished
 * share again (what it holds already counts as present) and still answers
 * for the ended ones.
 *
 * Thread: a job runs on one worker's loop; its counters are read by any
 * worker under the registry's lock.
 */
#ifndef SHOAL_TARGET_JOB_H
#define SHOAL_TARGET_JOB_H

#include <stddef.h>

struct http_req;
struct http_worker;
struct target;

void job_start(struct http_req *r, const char *rest, size_t rlen);
void job_show(struct http_req *r, const char *rest, size_t rlen);
void job_list(struct http_req *r, const char *rest, size_t rlen);

/* At start-up, once the server runs: jobs whose records say they had not
 * ended run again on w's loop; ended ones are remembered. */
void job_resume(struct target *t, struct http_worker *w);
void job_abort(struct http_req *r, const char *rest, size_t rlen);
/* PATCH /v1/internal/jobs/ID {"pin": false}: unpin (pin.h). */
void job_patch(struct http_req *r, const char *rest, size_t rlen);

#endif
