/*
 * job: the framework of a target's batch jobs (the proxy's /v1/jobs): a
 * registry of the jobs this target knows, their progress counters and
 * errors, their records across restarts, and the internal API. The
 * framework knows no kind by name: each kind is an entry (struct
 * job_kind) that the subsystem doing its work defines and main.c
 * registers at start-up, under its name in common/jobkind.h's table.
 *
 * A job started over the API (POST /v1/internal/jobs) is made from its
 * spec by its kind's init, recorded in the store before it is
 * acknowledged, and driven on the loop of the worker that received it:
 * the framework calls the kind's pump whenever the job may take work (its
 * start, each tick, an abort), or its start once. At most job_max
 * (config) started jobs run at once; the ones beyond wait in order. A
 * kind ends the job's share with job_ended, once, on its loop; its record
 * is written again with the progress, so a restarted target runs the
 * unfinished ones again (what it holds already counts as present) and
 * answers for the ended ones. A target's own jobs (eviction rounds,
 * rebalances, resilvers, scheduled scrubs) are registered with
 * job_local_start and driven by their subsystem.
 *
 * Internal routes, behind the cluster signature:
 *   POST   /v1/internal/jobs          start (JSON: id, kind, provider,
 *                                      bucket, the kind's own fields)
 *   GET    /v1/internal/jobs[?key=K]  the jobs it knows (a proxy rebuilds
 *                                      its list, or finds a key, from them)
 *   GET    /v1/internal/jobs/ID       this target's progress (JSON)
 *   DELETE /v1/internal/jobs/ID       abort
 *
 * Thread: a job's work runs on its loop (j->q); its counters are written
 * there and read by any worker, under the registry's lock (job_add,
 * job_counter).
 */
#ifndef SHOAL_TARGET_JOB_H
#define SHOAL_TARGET_JOB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "jobkind.h"

#define JOB_ERRS 5               /* failed names kept with their reasons */
#define JOB_ID_MAX 64
#define JOB_KEY_MAX 256

struct event;
struct event_base;
struct nodeclient;
struct curlclient;
struct http_req;
struct http_worker;
struct job;
struct loopq;
struct target;

/* A kind's runner. Every hook is optional. */
struct job_kind {
    const char *name;            /* its entry in common/jobkind.h */
    /* A job started over the API: the kind's own fields of spec (its
     * selection, its options) into j, checked against the bucket's
     * metadata; 0, or -1 with err set. j's generic fields are set. */
    int (*init)(struct job *j, json_t *spec, char *err, size_t errlen);
    /* On j's loop, each time the job may take work: at its start, when
     * its tick fires, after an abort. */
    void (*pump)(struct job *j);
    /* Or, on j's loop, once: the job begins (its subsystem runs it). */
    void (*start)(struct job *j);
    /* On the I/O pool, before a start's record is written: what the kind
     * keeps beside it (0, or -errno: the start fails). */
    int (*persist)(struct job *j);
    /* On j's loop, once the start's records are in. */
    void (*recorded)(struct job *j);
    /* With the registry's lock held: the kind's own fields of j's
     * progress (JSON). */
    void (*describe)(const struct job *j, json_t *p);
    /* j->kd and what it holds. */
    void (*free)(struct job *j);
};

struct job {
    struct job *next;            /* in the registry */
    char id[JOB_ID_MAX];
    char key[JOB_KEY_MAX];       /* the caller's idempotency key, "" for none */
    const struct job_kind *kind;
    const struct jobkind *info;  /* the kind's entry in common/jobkind.h */
    char provider[16];
    char bucket[64];             /* "" for every bucket (JKF_EVERY) */
    struct target *t;
    struct curlclient *cli;      /* the loop's backend client */
    struct nodeclient *hc;       /* the loop's client of other nodes */
    struct event_base *base;
    struct loopq *q;             /* the loop */
    struct event *tick;          /* its next pump (NULL: a target's own job, or a record) */
    char *spec;                  /* as started (JSON), kept for a restart */
    void *kd;                    /* the kind's own state (its free) */
    uint64_t pos, total;         /* the next index, and the selection's size */
    int unsized;                 /* the selection's size is not known yet (a listing) */
    int64_t map_version;         /* of the cluster map ownership is judged by */
    int inflight;                /* work under way: the job cannot end before it is over */
    int waiting;                 /* over the target's job_max: not started yet */
    int started;                 /* the kind's start was called */
    int aborted;                 /* set by any worker, read atomically */
    /* progress, under the registry's lock */
    uint64_t ctr[JC_N];
    char errs[JOB_ERRS][320];
    int nerrs;
    uint64_t start_ns, end_ns;
};

/* Register a kind's runner (main.c, before the server runs). Aborts
 * when k->name is not in common/jobkind.h's table. */
void job_kind_register(const struct job_kind *k);

/* Count name as failed, with why. Any thread but under no lock. */
void job_note_error(struct job *j, const char *name, const char *why);
/* Add n to counter c and b to the bytes. Any thread but under no lock. */
void job_add(struct job *j, enum job_ctr c, uint64_t n, uint64_t b);
/* Set counter c to v. */
void job_set(struct job *j, enum job_ctr c, uint64_t v);
/* Counter c's value now. */
uint64_t job_counter(struct job *j, enum job_ctr c);
/* Set the selection's size (and whether it is known) as the others see it. */
void job_set_total(struct job *j, uint64_t total, int unsized);
/* Has the job been aborted? Any thread. */
int job_aborted(const struct job *j);
/* Abort it: its runner sees job_aborted and ends it. Any thread. */
void job_abort_set(struct job *j);

/* A job the target starts itself (lru.c, reb.c, mpath.c, scrub.c's
 * schedule), registered and running, with id (NULL: a new one); its
 * runner ends it with job_ended on w's loop. The kind's start is never
 * called for it. */
struct job *job_local_start(struct target *t, struct http_worker *w,
                            const struct job_kind *kind, const char *id);

/* The map a job judges ownership by: the current one once it is as new
 * as want (the proxy's map_version when it started the job), or after
 * JOB_MAP_WAITS turns of waiting (*waits counts them); its version is
 * j->map_version. NULL meanwhile, with j's tick armed for the next turn
 * (100 ms). A new reference. On j's loop. */
#define JOB_MAP_WAITS 50
struct cmap;
struct cmap *job_map_wait(struct job *j, int64_t want, int *waits);

/* Let the kind take work (its pump, or its start once). On j's loop. */
void job_pump(struct job *j);
/* j's share is over (called once, on j's loop). */
void job_ended(struct job *j);

/* The internal API's routes. */
void job_start(struct http_req *r, const char *rest, size_t rlen);
void job_show(struct http_req *r, const char *rest, size_t rlen);
void job_list(struct http_req *r, const char *rest, size_t rlen);
void job_abort(struct http_req *r, const char *rest, size_t rlen);

/* At start-up, once the kinds are registered and the server runs: jobs
 * whose records say they had not ended run again on w's loop; ended ones
 * are remembered. */
void job_resume(struct target *t, struct http_worker *w);

#endif
