/*
 * jobint: what the files of a target's batch jobs share (job.h is their
 * face to the rest of the target).
 *
 *   job.c      the registry, the internal API, records kept across restarts
 *   jobrun.c   walking a job's selection (names, a template, a listing of
 *              the backend or of the drives) and the prefetch and evict
 *              kinds
 *   jobcopy.c  the copy and download kinds: an object sent to the target
 *              that owns its new name, from the file that holds it
 *
 * Thread: a job's work runs on its loop (j->q); its progress counters are
 * written there and read by any worker, both under jobs_mu.
 */
#ifndef SHOAL_TARGET_JOBINT_H
#define SHOAL_TARGET_JOBINT_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "backend.h"
#include "s3list.h"
#include "tmpl.h"

#define JOB_ERRS 5               /* failed names kept with their reasons */
#define JOB_ID_MAX 64
#define JOB_KEY_MAX 256

struct event;
struct event_base;
struct http_worker;
struct cmap;
struct hc;
struct hcli;
struct loopq;
struct ometa;
struct target;

enum job_kind {
    JK_PREFETCH, JK_EVICT, JK_COPY, JK_DOWNLOAD, JK_LRU, JK_FLUSH, JK_REBALANCE, JK_RESILVER,
    JK_SCRUB, JK_ECENCODE
};

/* What a listed selection pages through: the backend's listing, or (a
 * bucket with no backend) the names this target's drives hold. */
enum job_list { JL_NONE, JL_BACKEND, JL_LOCAL };

struct job {
    struct job *next;            /* in the registry */
    char id[JOB_ID_MAX];
    char key[JOB_KEY_MAX];       /* the caller's idempotency key, "" for none */
    enum job_kind kind;
    char provider[16];
    char bucket[64];
    struct target *t;
    struct backend b;            /* the bucket's (the source's, for a copy) */
    struct hcli *cli;            /* the loop's backend client */
    struct hc *hc;               /* the loop's client of other nodes */
    struct event_base *base;
    struct loopq *q;             /* the loop */
    struct event *tick;          /* the next batch of names, from the loop (NULL: a record) */
    char *spec;                  /* as started (JSON), kept for a restart */
    char *pin;                   /* prefetch: its pin's record (pin.h), or NULL */
    /* the selection */
    json_t *names;               /* a list (a download's: of URLs), */
    json_t *dnames;              /* a download's object names, or NULL: from the URLs */
    struct tmpl tm;              /* or a template (a download's: of URLs) */
    int has_tmpl;
    enum job_list listed;        /* or a listing (of prefix) */
    char *prefix;
    char *token;                 /* the next page's, "" before the first */
    struct s3list page;          /* the backend's page being walked */
    char **lnames;               /* a page of the drives' names */
    int ln;
    int page_i;
    int listing;                 /* a page is on its way */
    int list_end;                /* the last page is in */
    /* the kind's options */
    int latest;                  /* prefetch: re-validate what is held */
    int dry_run;                 /* copy: count only */
    char to_provider[16];        /* copy: the destination bucket, */
    char to[64];
    char *prepend;               /* and what its names begin with ("" none) */
    int to_backed;               /* download: the bucket writes through */
    uint64_t pos, total;         /* the next index, and the selection's size */
    int64_t map_version;         /* of the cluster map ownership is judged by */
    struct cmap *map;            /* that map, held from the first name on: targets
                                  * that judge by different maps would leave names
                                  * between them (a change mid-job waits for a walk) */
    int64_t want_map;            /* the proxy's map version at the start */
    int map_waits;               /* turns waited for that version */
    int inflight;
    int waiting;                 /* over the target's job_max: not started yet */
    int handed;                  /* flush: given to its runner (wbq.c) */
    int aborted;                 /* set by any worker, read atomically */
    /* progress, under jobs_mu */
    uint64_t owned, present, fetched, evicted, copied, downloaded, bytes, errors;
    uint64_t moved;              /* rebalance: objects sent to their owner */
    uint64_t found, fixed, lost; /* scrub: damaged copies, replaced, gone for good */
    uint64_t done;               /* owned names whose work is over */
    char errs[JOB_ERRS][320];
    int nerrs;
    uint64_t start_ns, end_ns;
};

extern pthread_mutex_t jobs_mu;

/* The kind's name, and back (-1 unknown). */
const char *job_kind_name(enum job_kind k);
int job_kind_parse(const char *s);

/* Count name as failed, with why. Any thread but under no lock. */
void job_note_error(struct job *j, const char *name, const char *why);
/* Add n to *counter and b to the bytes, under jobs_mu. */
void job_add(struct job *j, uint64_t *counter, uint64_t n, uint64_t b);

/* A job the target starts itself (lru.c, reb.c, mpath.c), registered and running,
 * with id (NULL: a new one); its runner ends it with job_ended on w's
 * loop. */
struct job *job_local_start(struct target *t, struct http_worker *w, enum job_kind kind,
                            const char *id);

/* jobrun.c: take names while there is room; end the job (job_ended) when
 * all are done. On j's loop. */
void job_pump(struct job *j);
/* job.c: j's share is over (called once, on j's loop). */
void job_ended(struct job *j);

/* jobcopy.c: work on one owned name of a copy or download; held says
 * whether this target has it (m). */
void job_copy_one(struct job *j, const char *name, size_t n, int held, const struct ometa *m);
void job_download_one(struct job *j, const char *url, const char *name, size_t n, int held);
/* A download's object name for its i-th URL into buf: its length, or -1
 * (too long, or no name in the URL). */
int job_download_name(const struct job *j, uint64_t i, const char *url, char *buf, size_t len);

#endif
