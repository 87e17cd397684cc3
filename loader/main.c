/*
 * main: shoal-loader's entry. It parses the options, sets up (the target
 * checked, the names made, one random PUT source), runs the measured phase
 * and, with --cleanup, a DELETE of every name, and prints each phase's
 * summary. Exit status: 0, 1 for a set-up failure (die()), 2 for bad
 * usage, 3 when any request failed. loader.h describes the whole program.
 *
 * Threads: the main thread; the runs start and join the loop threads.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmap.h"
#include "loader.h"

struct s3_cfg s3;
char *shared_body;

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "shoal-loader: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* The PUT source: max_size bytes from the seed (every PUT sends a prefix). */
static void make_body(void)
{
    shared_body = xmalloc(opt.max_size + 1);
    uint64_t r = opt.seed | 1;
    for (uint64_t i = 0; i + 8 <= opt.max_size; i += 8) {
        r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
        uint64_t v = r * 0x2545F4914F6CDD1DULL;
        memcpy(shared_body + i, &v, 8);
    }
}

/* Run the measured phase and the cleanup, printing their summaries; the
 * measured phase's failed requests. */
static uint64_t run_phases(void)
{
    struct opstats res[OP_N];
    double secs = worker_run(res, 1);
    if (opt.json) {
        json_t *j = report_json(res, secs);
        if (opt.cleanup) {
            phase_op = OP_DEL;
            total_ops_cap = worker_names_to_delete();
            struct opstats del[OP_N];
            double ds = worker_run(del, 0);
            json_object_set_new(j, "cleanup", report_json(del, ds));
        }
        char *s = json_dumps(j, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(j);
    } else {
        report_print(res, secs);
        if (opt.cleanup) {
            phase_op = OP_DEL;
            total_ops_cap = worker_names_to_delete();
            struct opstats del[OP_N];
            double ds = worker_run(del, 0);
            printf("cleanup: deleted %llu of %lld names in %.1fs (errors %llu)\n",
                   (unsigned long long)del[OP_DEL].ops, (long long)total_ops_cap, ds,
                   (unsigned long long)report_errs(&del[OP_DEL]));
        }
    }
    uint64_t errs = 0;
    for (int k = 0; k < OP_N; k++)
        errs += report_errs(&res[k]);
    return errs;
}

int main(int argc, char **argv)
{
    int rc = opts_parse(argc, argv);
    if (rc >= 0)
        return rc;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, worker_interrupt);
    if (opt.mode == M_S3)
        s3_cfg_resolve(&s3, opt.endpoint, opt.region, "path", opt.access_key, opt.secret_key,
                       NULL, NULL);
    setup_check_target();
    names_make();
    make_body();
    total_ops_cap = INT64_MAX;
    if (opt.epochs > 0)
        total_ops_cap = (int64_t)opt.epochs * (opt.batch ? worker_batches_per_epoch() : n_names);
    if (opt.max_ops > 0 && opt.max_ops < total_ops_cap)
        total_ops_cap = opt.max_ops;
    uint64_t errs = run_phases();
    worker_free();
    if (opt.csv)
        fclose(opt.csv);
    names_free();
    cmap_unref(cmap);
    if (opt.mode == M_S3)
        s3_cfg_free(&s3);
    return errs ? 3 : 0;
}
