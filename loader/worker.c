/*
 * worker: the loop threads and what their workers do between requests.
 * A run starts opt.threads threads, each an event loop with its share of
 * the workers; a worker takes the next op index from one shared counter
 * (so --max-ops and --epochs bound all workers together), picks the name
 * (random, in order, or the epoch's permutation), the op and the PUT size,
 * and hands the request to the client. The main thread meanwhile polls
 * every 50 ms: it ends the run at the duration or ^C and prints the live
 * lines (report.c). A run's time ends when its last worker stopped, as
 * that worker's thread noted, not at the poll that saw it.
 *
 * Threads: worker_next runs on the worker's loop thread; worker_run and
 * worker_interrupt on the main thread (the latter as a signal handler).
 * next_index and stopping are shared atomically; each thread's counters
 * are under its mutex.
 */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmap.h"
#include "nodeclient.h"
#include "loader.h"
#include "sigv4.h"

struct thread *threads;
int64_t total_ops_cap;            /* INT64_MAX when only time bounds the run */
enum op phase_op = OP_GET;        /* OP_DEL during cleanup */
static int64_t next_index;        /* atomic: the next op's index */
static int stopping;              /* atomic */

static uint64_t rnd(struct thread *t)
{
    /* xorshift64* */
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    return t->rng * 0x2545F4914F6CDD1DULL;
}

static char *enc(const char *s)
{
    return sigv4_uri_encode(s, strlen(s), 1);
}

static char *op_url(const char *name)
{
    char *en = enc(name), *u;
    if (opt.mode == M_SHOAL) {
        u = xasprintf("%s/v1/objects/%s/%s%s%s", opt.endpoint, opt.bucket, en,
                      opt.provider ? "?provider=" : "", opt.provider ? opt.provider : "");
    } else if (opt.mode == M_DIRECT) {
        size_t kl;
        char *key = xasprintf("%s/%s/%s", opt.provider ? opt.provider : "shoal", opt.bucket,
                              name);
        kl = strlen(key);
        const struct cmap_node *t = cmap_owner(cmap, key, kl);
        free(key);
        u = xasprintf("%s/v1/objects/%s/%s%s%s", t ? t->url : opt.endpoint, opt.bucket, en,
                      opt.provider ? "?provider=" : "", opt.provider ? opt.provider : "");
    } else {
        u = xasprintf("%s/%s/%s", opt.endpoint, opt.bucket, en);
    }
    free(en);
    return u;
}

/* How many GetBatches a pass over the names takes (--batch with --epochs). */
int64_t worker_batches_per_epoch(void)
{
    return (n_names + opt.batch - 1) / opt.batch;
}

/* --batch: op i's GetBatch into w->batch, and its entry count into
 * w->batch_n. With --epochs, op i is a pass's next N names in that pass's
 * order (its last batch may be shorter), so that a pass reads each name
 * once; otherwise the names from pos on, wrapping. */
static void batch_body(struct worker *w, int64_t i, int64_t pos)
{
    struct gbuf *b = &w->batch;
    int64_t from = pos, to = pos + opt.batch, e = 0;
    if (opt.epochs > 0) {
        int64_t nb = worker_batches_per_epoch();
        e = i / nb;
        from = i % nb * opt.batch;
        to = from + opt.batch < n_names ? from + opt.batch : n_names;
    }
    b->n = 0;
    gbuf_str(b, "{\"entries\":[");
    for (int64_t k = from; k < to; k++) {
        int64_t at = opt.epochs <= 0 ? k % n_names
                     : opt.sequential ? k
                                      : perm[(size_t)(e * n_names + k)];
        const char *name = names[at];
        gbuf_str(b, k > from ? ",{\"bucket\":" : "{\"bucket\":");
        gbuf_json_str(b, opt.bucket, strlen(opt.bucket));
        if (opt.provider) {
            gbuf_str(b, ",\"provider\":");
            gbuf_json_str(b, opt.provider, strlen(opt.provider));
        }
        gbuf_str(b, ",\"name\":");
        gbuf_json_str(b, name, strlen(name));
        gbuf_str(b, "}");
    }
    gbuf_str(b, "]}");
    w->batch_n = (int)(to - from);
}

/*
 * A mixed run (--pct-put between 0 and 100) over generated names reads
 * only what it has written, as aisloader does: a GET picks among the
 * names this run PUT (appended once each, under written_mu; readers take
 * the count with acquire order, the slots below it are filled), and is a
 * PUT until there is one; --cleanup then deletes those names only. Listed
 * names, names from a file and --names-exist are taken to exist: every
 * GET may pick any of them, in the order --epochs and --sequential say.
 */
static uint32_t *written;        /* indices into names (at most 1e8 of them) */
static int64_t n_written;        /* atomic */
static uint8_t *is_written;      /* a bit per name */
static pthread_mutex_t written_mu = PTHREAD_MUTEX_INITIALIZER;

static int reads_written(void)
{
    return opt.pct_put > 0 && opt.pct_put < 100 && !opt.list_names && !opt.names_file &&
           !opt.names_exist;
}

static int bit_set(int64_t pos)
{
    return __atomic_load_n(&is_written[pos / 8], __ATOMIC_RELAXED) & (1 << (pos % 8));
}

void worker_written(const struct worker *w)
{
    if (!written || phase_op == OP_DEL || bit_set(w->pos))
        return;
    pthread_mutex_lock(&written_mu);
    if (!bit_set(w->pos)) {
        __atomic_or_fetch(&is_written[w->pos / 8], (uint8_t)(1 << (w->pos % 8)),
                          __ATOMIC_RELAXED);
        int64_t n = __atomic_load_n(&n_written, __ATOMIC_RELAXED);
        written[n] = (uint32_t)w->pos;
        __atomic_store_n(&n_written, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&written_mu);
}

int64_t worker_names_to_delete(void)
{
    return written ? n_written : n_names;
}

void worker_free(void)
{
    free(written);
    free(is_written);
    written = NULL;
    is_written = NULL;
    n_written = 0;
}

/* A worker of t has nothing more to do; the last one ends t's loop and
 * notes when, so that a run's time is its work's, not the next poll's. */
static void worker_stop(struct thread *t)
{
    if (--t->live == 0) {
        __atomic_store_n(&t->done_us, now_us(), __ATOMIC_RELEASE);
        event_base_loopexit(t->base, NULL);
    }
}

void worker_next(struct worker *w)
{
    struct thread *t = w->t;
    if (__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
        worker_stop(t);
        return;
    }
    int64_t i = __atomic_fetch_add(&next_index, 1, __ATOMIC_RELAXED);
    if (i >= total_ops_cap) {
        __atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
        worker_stop(t);
        return;
    }
    int64_t pos;
    if (phase_op == OP_DEL && written) {
        pos = written[i];        /* what this run wrote */
    } else if (opt.epochs > 0 || phase_op == OP_DEL) {
        int64_t e = i / n_names, k = i % n_names;
        pos = opt.sequential || phase_op == OP_DEL ? k : perm[(size_t)(e * n_names + k)];
    } else {
        pos = opt.sequential ? i % n_names : (int64_t)(rnd(t) % (uint64_t)n_names);
    }
    w->op = phase_op == OP_DEL ? OP_DEL
            : (int)(rnd(t) % 100) < opt.pct_put ? OP_PUT
                                                : OP_GET;
    if (w->op == OP_GET && written) {
        int64_t n = __atomic_load_n(&n_written, __ATOMIC_ACQUIRE);
        if (n == 0)
            w->op = OP_PUT;      /* nothing to read yet */
        else
            pos = written[rnd(t) % (uint64_t)n];
    }
    w->pos = pos;
    w->name = names[pos];
    w->size = opt.min_size + (opt.max_size > opt.min_size
                                  ? rnd(t) % (opt.max_size - opt.min_size + 1)
                                  : 0);
    w->hops = 0;
    w->start_us = now_us();
    if (opt.batch && w->op == OP_GET) {
        batch_body(w, i, pos);
        char *url = xstrcat(opt.endpoint, "/v1/batch", NULL);
        client_send(w, url, 1);
        free(url);
        return;
    }
    char *url = op_url(w->name);
    if (opt.query && w->op != OP_PUT) {   /* --query: the GETs' own arguments */
        char *q = xasprintf("%s%c%s", url, strchr(url, '?') ? '&' : '?', opt.query);
        free(url);
        url = q;
    }
    client_send(w, url, w->op == OP_PUT);
    free(url);
}

static void start_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct thread *t = arg;
    for (int i = 0; i < t->n; i++)
        worker_next(&t->workers[i]);
}

static void *thread_main(void *arg)
{
    struct thread *t = arg;
    event_base_once(t->base, -1, EV_TIMEOUT, start_cb, t, NULL);
    event_base_dispatch(t->base);
    nodeclient_free(t->hc);      /* drops what is still in flight, on the loop's thread */
    t->hc = NULL;
    for (int i = 0; i < t->n; i++)
        client_worker_close(&t->workers[i]);
    return NULL;
}

static volatile sig_atomic_t interrupted;

void worker_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

double worker_run(struct opstats res[OP_N], int live_stats)
{
    next_index = 0;
    stopping = 0;
    if (reads_written() && !written && phase_op != OP_DEL) {
        written = xcalloc((size_t)n_names, sizeof(*written));
        is_written = xcalloc((size_t)n_names / 8 + 1, 1);
    }
    FILE *csv = live_stats ? opt.csv : NULL;
    if (csv)
        report_csv_head(csv);
    struct opstats *csv_prev = xcalloc(OP_N, sizeof(struct opstats));
    struct opstats *csv_now = xcalloc(OP_N, sizeof(struct opstats));
    double csv_last = 0;
    threads = xcalloc((size_t)opt.threads, sizeof(*threads));
    for (int i = 0; i < opt.threads; i++) {
        struct thread *t = &threads[i];
        t->base = event_base_new();
        t->hc = nodeclient_new(t->base);
        t->n = opt.workers / opt.threads + (i < opt.workers % opt.threads);
        t->live = t->n;
        t->workers = xcalloc((size_t)t->n + 1, sizeof(*t->workers));
        for (int k = 0; k < t->n; k++) {
            t->workers[k].t = t;
            client_worker_init(&t->workers[k]);
        }
        t->rng = opt.seed * 0x9E3779B97F4A7C15ULL + (uint64_t)i * 7919 + 1;
        pthread_mutex_init(&t->mu, NULL);
    }
    uint64_t t0 = now_us();
    for (int i = 0; i < opt.threads; i++)
        if (threads[i].n)
            pthread_create(&threads[i].tid, NULL, thread_main, &threads[i]);
    struct opstats prev[OP_N], now[OP_N];
    memset(prev, 0, sizeof(prev));
    double last = 0;
    int tty = isatty(1);
    for (;;) {
        usleep(50000);
        double el = (now_us() - t0) / 1e6;
        if (interrupted || (opt.duration > 0 && el >= opt.duration))
            __atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
        int alive = 0;
        for (int i = 0; i < opt.threads; i++)
            alive |= __atomic_load_n(&threads[i].live, __ATOMIC_RELAXED) > 0;
        if (!alive)
            break;
        if (csv && el - csv_last >= 1.0) {    /* a line each whole second */
            report_collect(csv_now);
            report_csv(csv, el, csv_now, csv_prev, el - csv_last);
            memcpy(csv_prev, csv_now, sizeof(struct opstats) * OP_N);
            csv_last = (double)(int64_t)el;
        }
        if (live_stats && opt.stats_interval > 0 && el - last >= opt.stats_interval) {
            report_collect(now);
            if (!opt.json)
                report_line(el, now, prev, el - last);
            memcpy(prev, now, sizeof(prev));
            last = el;
        } else if (live_stats && tty && !opt.json) {
            report_collect(now);
            fprintf(stderr, "\r%6.1fs  %llu ops", el,
                    (unsigned long long)(now[0].ops + now[1].ops + now[2].ops));
        }
    }
    for (int i = 0; i < opt.threads; i++)
        if (threads[i].n)
            pthread_join(threads[i].tid, NULL);
    /* the end is the last thread's, not this loop's poll (up to 50 ms on) */
    uint64_t end = 0;
    int all = 1;
    for (int i = 0; i < opt.threads; i++) {
        uint64_t d = __atomic_load_n(&threads[i].done_us, __ATOMIC_ACQUIRE);
        if (threads[i].n && !d)
            all = 0;
        else if (d > end)
            end = d;
    }
    double secs = ((all && end > t0 ? end : now_us()) - t0) / 1e6;
    if (tty && !opt.json && live_stats)
        fprintf(stderr, "\r%40s\r", "");
    report_collect(res);
    if (csv && secs - csv_last >= 0.5)   /* the last part of a second, not the drain */
        report_csv(csv, secs, res, csv_prev, secs - csv_last);
    free(csv_prev);
    free(csv_now);
    for (int i = 0; i < opt.threads; i++) {
        event_base_free(threads[i].base);
        nodeclient_free(threads[i].hc); /* a thread that never ran */
        free(threads[i].workers);
        pthread_mutex_destroy(&threads[i].mu);
    }
    free(threads);
    return secs;
}
