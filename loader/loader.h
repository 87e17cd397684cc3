/*
 * shoal-loader: the bundled load generator. This header holds what its
 * files share: the options, the run state, the per-thread statistics and
 * the worker, and each file's entry points.
 *
 * Each of --threads threads runs an event loop with its share of the
 * --workers; a worker runs one request at a time, back to back, through
 * its thread's Shoal HTTP client (common/nodeclient.h), whose keep-alive
 * connections the thread's workers share (so a worker following Shoal's
 * redirects reuses connections to the proxy and to each target). Bodies
 * are counted (and optionally checksummed) as they stream, and PUT bodies
 * are sent from one shared random buffer without copies. Latencies go into
 * per-thread histograms that the main thread merges for the periodic line
 * and the final summary.
 *
 * Modes: shoal (native API through a proxy, following 307s), direct
 * (native API straight to the owning target, placed with the cluster map
 * and the same HRW as the cluster), s3 (path-style S3 with SigV4), http
 * (plain GET/PUT of <endpoint>/<bucket>/<name>, e.g. nginx). With --batch N
 * (native modes through a proxy) a GET is a POST /v1/batch of N names,
 * the op's and the N-1 after it in the name list (with --epochs a pass's
 * names N at a time), its answer a .tar stream read to the end.
 *
 * Files: main.c (entry: set-up, the phases, the exit status), opts.c
 * (options), setup.c (blocking set-up requests), names.c (the name set and
 * its orders), worker.c (threads, workers picking their next op, a run),
 * client.c (requests and their answers: the per-request path), report.c (statistics: live lines, the summary), hist.c.
 *
 * Threads: the main thread parses options, sets up, runs report.c and
 * waits; the loop threads run worker.c's worker_next and client.c. The
 * globals below are written by the main thread before the loop threads
 * start (except those marked atomic) and only read by them.
 */
#ifndef SHOAL_LOADER_H
#define SHOAL_LOADER_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "hist.h"
#include "s3req.h"
#include "util.h"

struct cmap;
struct event_base;
struct nodeclient;

enum mode { M_SHOAL, M_DIRECT, M_S3, M_HTTP };
enum op { OP_GET, OP_PUT, OP_DEL, OP_N };
enum err { E_CONNECT, E_TIMEOUT, E_RESET, E_4XX, E_5XX, E_SHORT, E_VERIFY, E_REDIRECT, E_N };

/* Names of the ops (client.c) and of the error classes (report.c). */
extern const char *const op_names[OP_N];
extern const char *const err_names[E_N];

/* ---- options (opts.c) ------------------------------------------------------- */

struct loader_opts {
    char *endpoint, *bucket, *provider, *prefix, *names_file;
    const char *ca_file;         /* https: CAs that verify the cluster (else the system's) */
    char *access_key, *secret_key, *region; /* credentials: every mode signs with them */
    int list_names;
    FILE *csv;                   /* --csv: a line per op and second (opened by opts.c) */
    int names_exist;             /* --names-exist: a mixed run may GET any generated name */
    char *query;                 /* --query: appended to every GET's URL, or NULL */
    enum mode mode;
    int workers, threads, pct_put, epochs, sequential, verify, cleanup, json;
    double duration, stats_interval;
    int64_t max_ops, num_objects, read_off, read_len;
    uint64_t min_size, max_size, seed;
    int timeout_s;
    int batch;                   /* --batch N: a GET is one GetBatch of N names, 0 off */
};
extern struct loader_opts opt;

/* Fill opt from argv and the AWS_* variables, checked (die()s on a bad
 * one). Returns -1 to go on, or the exit status (--help, an unknown
 * option). */
int opts_parse(int argc, char **argv);

/* ---- shared run state --------------------------------------------------------- */

extern char **names;              /* names.c */
extern int64_t n_names;
extern uint32_t *perm;            /* per-epoch orders, epochs * n_names */
extern int64_t total_ops_cap;     /* worker.c; INT64_MAX when only time bounds the run */
extern enum op phase_op;          /* OP_DEL during cleanup */
extern struct cmap *cmap;         /* setup.c; direct mode */
extern struct s3_cfg s3;          /* main.c; s3 mode */
extern char *shared_body;         /* main.c; PUT source */

/* An op's counts: ops and bytes of the successful ones, failures by
 * class; latency (request to the whole answer) and time to the first
 * byte (the final answer's head) of the successful ones. */
struct opstats {
    uint64_t ops, bytes;
    uint64_t entries;            /* --batch: the entries the successful GETs read */
    uint64_t errs[E_N];
    struct hist h;
    struct hist ttfb;
};

struct worker;

struct thread {
    pthread_t tid;
    struct event_base *base;
    struct nodeclient *hc;       /* the thread's client: its workers share its connections */
    struct worker *workers;
    int n;
    pthread_mutex_t mu;          /* guards st against the stats reader */
    struct opstats st[OP_N];
    int live;
    uint64_t done_us;            /* when its last worker stopped (now_us), 0 before */
    uint64_t rng;
};

extern struct thread *threads;   /* worker.c: opt.threads of them during a run */

struct nodeclient_xfer;
struct XXH3_state_s;

struct worker {
    struct thread *t;
    enum op op;
    int64_t index;
    const char *name;
    int64_t pos;                 /* name's index in names */
    uint64_t size;               /* PUT body size */
    uint64_t start_us;
    uint64_t ttfb_us;            /* the last answer's head came this long after start */
    int hops;
    /* the request in flight and its answer (client.c) */
    struct nodeclient_xfer *x;
    int status;
    uint64_t body;
    int64_t clen;
    char location[2048];
    char cksum[40];
    struct XXH3_state_s *xs;     /* --verify */
    struct gbuf batch;           /* --batch: the op's GetBatch request (worker.c) */
    int batch_n;                 /* its entries */
};

static inline uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Print "shoal-loader: <message>" on stderr and exit 1 (main.c). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- set-up requests (setup.c), before any loop thread runs ------------------- */

/* A blocking request; the status, or 0 with err set. The body is added to
 * *body (the caller frees it). Signed when opt has an access key. */
long setup_fetch(const char *method, const char *url, struct gbuf *body, char *err,
                 size_t errlen);
/* Check that the endpoint answers and the bucket exists; in direct mode
 * read the cluster map into cmap. die()s otherwise. */
void setup_check_target(void);

/* ---- names (names.c) ------------------------------------------------------------ */

/* names and n_names from a listing, a file or the generator; then perm
 * when epochs are asked for. die()s when there are none. */
void names_make(void);
void names_free(void);

/* ---- workers (worker.c), loop threads -------------------------------------------- */

/* --batch with --epochs: the GetBatches of one pass over the names. */
int64_t worker_batches_per_epoch(void);
/* Pick and start the worker's next op, or stop it. */
void worker_next(struct worker *w);
/* w's PUT of its name succeeded: a mixed run's GETs may read it now. */
void worker_written(const struct worker *w);
/* How many names --cleanup deletes: those a mixed run wrote, or all. */
int64_t worker_names_to_delete(void);
/* Drop what the runs kept (after the last phase). */
void worker_free(void);
/* Run the workers until the op cap, the duration or ^C; fill res; the
 * seconds it took. Main thread. */
double worker_run(struct opstats res[OP_N], int live_stats);
/* SIGINT handler: ends the run in progress. */
void worker_interrupt(int sig);

/* ---- the client (client.c), loop threads ------------------------------------------ */

/* A worker's client state: made before its thread runs, dropped after. */
void client_worker_init(struct worker *w);
void client_worker_close(struct worker *w);
/* Send w's request for url (a full http:// URL) through its thread's nodeclient,
 * with w->size bytes of shared_body when with_body. The outcome is
 * recorded in w's thread and worker_next(w) runs when it is known. */
void client_send(struct worker *w, const char *url, int with_body);
/* SigV4 header lines (three, new strings) for a native request of
 * method on url, its body UNSIGNED-PAYLOAD when with_body; -1 when url is
 * not an http:// URL. */
int client_sign_native(const char *method, const char *url, int with_body, char *lines[3]);

/* ---- statistics (report.c), main thread ---------------------------------------------- */

/* Merge every thread's counters into out. */
void report_collect(struct opstats out[OP_N]);
uint64_t report_errs(const struct opstats *s);
/* The periodic line: rates over the dt seconds between prev and now. */
void report_line(double t, const struct opstats *now, const struct opstats *prev, double dt);
/* --csv: the header, and a line per op with rates and latencies over the
 * dt seconds between prev and now. */
void report_csv_head(FILE *f);
void report_csv(FILE *f, double t, const struct opstats *now, const struct opstats *prev,
                double dt);
/* The summary of a phase of secs seconds: a new JSON object, or a table. */
json_t *report_json(const struct opstats *s, double secs);
void report_print(const struct opstats *s, double secs);

#endif
