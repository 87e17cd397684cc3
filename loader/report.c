/*
 * report: the loader's statistics as the user sees them. The main thread
 * merges the loop threads' counters and histograms (each under its
 * thread's mutex) for the periodic line (rates since the last one,
 * latency percentiles since the start) and for each phase's summary, a
 * table or JSON. test/integration/test_loader.py and the scripts in
 * test/bench/ parse both: their fields and formats are an interface.
 *
 * Threads: main thread only.
 */
#include <stdio.h>
#include <string.h>

#include "loader.h"

const char *const err_names[E_N] = {"connect", "timeout", "reset", "http_4xx", "http_5xx",
                                    "short_body", "verify", "redirect"};

void report_collect(struct opstats out[OP_N])
{
    memset(out, 0, sizeof(struct opstats) * OP_N);
    for (int i = 0; i < opt.threads; i++) {
        pthread_mutex_lock(&threads[i].mu);
        for (int o = 0; o < OP_N; o++) {
            out[o].ops += threads[i].st[o].ops;
            out[o].bytes += threads[i].st[o].bytes;
            out[o].entries += threads[i].st[o].entries;
            for (int e = 0; e < E_N; e++)
                out[o].errs[e] += threads[i].st[o].errs[e];
            hist_merge(&out[o].h, &threads[i].st[o].h);
            hist_merge(&out[o].ttfb, &threads[i].st[o].ttfb);
        }
        pthread_mutex_unlock(&threads[i].mu);
    }
}

uint64_t report_errs(const struct opstats *s)
{
    uint64_t n = 0;
    for (int e = 0; e < E_N; e++)
        n += s->errs[e];
    return n;
}

static void fmt_lat(char *out, size_t n, uint64_t us)
{
    if (us < 1000)
        snprintf(out, n, "%lluus", (unsigned long long)us);
    else if (us < 1000000)
        snprintf(out, n, "%.2fms", us / 1000.0);
    else
        snprintf(out, n, "%.2fs", us / 1e6);
}

void report_line(double t, const struct opstats *now, const struct opstats *prev, double dt)
{
    char line[512];
    int o = snprintf(line, sizeof(line), "%7.1fs", t);
    for (int k = 0; k < OP_N; k++) {
        uint64_t d_ops = now[k].ops - prev[k].ops, d_b = now[k].bytes - prev[k].bytes;
        if (d_ops == 0 && report_errs(&now[k]) == report_errs(&prev[k]))
            continue;
        char p50[16], p99[16];
        fmt_lat(p50, sizeof(p50), hist_quantile(&now[k].h, 0.5));
        fmt_lat(p99, sizeof(p99), hist_quantile(&now[k].h, 0.99));
        o += snprintf(line + o, sizeof(line) - (size_t)o,
                      "  %s %.0f ops/s %.1f MiB/s p50 %s p99 %s err %llu", op_names[k],
                      d_ops / dt, d_b / dt / 1048576.0, p50, p99,
                      (unsigned long long)report_errs(&now[k]));
    }
    printf("%s\n", line);
    fflush(stdout);
}

json_t *report_json(const struct opstats *s, double secs)
{
    json_t *ops = json_object();
    for (int k = 0; k < OP_N; k++) {
        if (s[k].ops == 0 && report_errs(&s[k]) == 0)
            continue;
        json_t *errs = json_object();
        for (int e = 0; e < E_N; e++)
            if (s[k].errs[e])
                json_object_set_new(errs, err_names[e], json_integer((json_int_t)s[k].errs[e]));
        const struct hist *h = &s[k].h, *f = &s[k].ttfb;
        json_t *one =
            json_pack("{s:I, s:I, s:f, s:f, s:{s:I, s:f, s:I, s:I, s:I, s:I}, s:o}", "count",
                      (json_int_t)s[k].ops, "bytes", (json_int_t)s[k].bytes, "mib_per_s",
                      s[k].bytes / secs / 1048576.0, "ops_per_s", s[k].ops / secs,
                      "latency_us", "min", (json_int_t)h->min, "avg",
                      h->n ? (double)h->sum / (double)h->n : 0.0, "p50",
                      (json_int_t)hist_quantile(h, 0.5), "p90",
                      (json_int_t)hist_quantile(h, 0.9), "p99",
                      (json_int_t)hist_quantile(h, 0.99), "max", (json_int_t)h->max,
                      "errors", errs);
        /* count: the successful ones; failed: the others (by class in errors) */
        json_object_set_new(one, "failed", json_integer((json_int_t)report_errs(&s[k])));
        json_object_set_new(one, "ttfb_us",
                            json_pack("{s:I, s:I, s:I}", "p50", (json_int_t)hist_quantile(f, 0.5),
                                      "p90", (json_int_t)hist_quantile(f, 0.9), "p99",
                                      (json_int_t)hist_quantile(f, 0.99)));
        if (opt.batch && k == OP_GET) {   /* a GET was a GetBatch (of opt.batch entries, a pass's last one fewer) */
            json_object_set_new(one, "entries", json_integer((json_int_t)s[k].entries));
            json_object_set_new(one, "entries_per_s", json_real(s[k].entries / secs));
        }
        json_object_set_new(ops, op_names[k], one);
    }
    return json_pack("{s:f, s:o}", "seconds", secs, "ops", ops);
}

void report_print(const struct opstats *s, double secs)
{
    /* ok, bytes, rates and latencies: of the successful ops; failed beside */
    printf("%-7s %10s %8s %12s %10s %10s %9s %9s %9s %9s %9s %9s %9s  %s\n", "op", "ok",
           "failed", "bytes", "MiB/s", "ops/s", "min", "avg", "p50", "p90", "p99", "max",
           "ttfb-p50", "errors");
    for (int k = 0; k < OP_N; k++) {
        if (s[k].ops == 0 && report_errs(&s[k]) == 0)
            continue;
        const struct hist *h = &s[k].h;
        char mn[16], av[16], p50[16], p90[16], p99[16], mx[16], tf[16], errs[256] = "";
        fmt_lat(tf, sizeof(tf), hist_quantile(&s[k].ttfb, 0.5));
        fmt_lat(mn, sizeof(mn), h->min);
        fmt_lat(av, sizeof(av), h->n ? h->sum / h->n : 0);
        fmt_lat(p50, sizeof(p50), hist_quantile(h, 0.5));
        fmt_lat(p90, sizeof(p90), hist_quantile(h, 0.9));
        fmt_lat(p99, sizeof(p99), hist_quantile(h, 0.99));
        fmt_lat(mx, sizeof(mx), h->max);
        size_t o = 0;
        for (int e = 0; e < E_N; e++)
            if (s[k].errs[e])
                o += (size_t)snprintf(errs + o, sizeof(errs) - o, "%s%s=%llu", o ? "," : "",
                                      err_names[e], (unsigned long long)s[k].errs[e]);
        printf("%-7s %10llu %8llu %12llu %10.1f %10.0f %9s %9s %9s %9s %9s %9s %9s  %s\n",
               op_names[k], (unsigned long long)s[k].ops,
               (unsigned long long)report_errs(&s[k]), (unsigned long long)s[k].bytes,
               s[k].bytes / secs / 1048576.0, s[k].ops / secs, mn, av, p50, p90, p99, mx, tf,
               o ? errs : "0");
        if (opt.batch && k == OP_GET)
            printf("%-7s %10llu entries in GetBatches of %d, %.0f entries/s\n", "",
                   (unsigned long long)s[k].entries, opt.batch, s[k].entries / secs);
    }
}

void report_csv_head(FILE *f)
{
    fprintf(f, "time_s,op,ops_per_s,mib_per_s,failed_per_s,p50_us,p99_us,ttfb_p50_us\n");
}

void report_csv(FILE *f, double t, const struct opstats *now, const struct opstats *prev,
                double dt)
{
    struct hist *h = xmalloc(sizeof(*h)), *tf = xmalloc(sizeof(*tf));
    for (int k = 0; k < OP_N; k++) {
        uint64_t d_ops = now[k].ops - prev[k].ops, d_b = now[k].bytes - prev[k].bytes;
        uint64_t d_err = report_errs(&now[k]) - report_errs(&prev[k]);
        if (d_ops == 0 && d_err == 0 && now[k].ops == 0)
            continue;            /* an op this run never did */
        hist_since(h, &now[k].h, &prev[k].h);
        hist_since(tf, &now[k].ttfb, &prev[k].ttfb);
        fprintf(f, "%.2f,%s,%.1f,%.2f,%.1f", t, op_names[k], d_ops / dt, d_b / dt / 1048576.0,
                d_err / dt);
        if (d_ops)
            fprintf(f, ",%llu,%llu,%llu\n", (unsigned long long)hist_quantile(h, 0.5),
                    (unsigned long long)hist_quantile(h, 0.99),
                    (unsigned long long)hist_quantile(tf, 0.5));
        else                     /* no latency in an interval without an answer */
            fprintf(f, ",,,\n");
    }
    fflush(f);
    free(h);
    free(tf);
}
