/*
 * targetmetrics: a target's own metrics (see targetmetrics.h).
 */
#include "targetmetrics.h"

#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "util.h"

static const struct {
    const char *name, *help, *label, *value;
} defs[TM_N] = {
    [TM_GET_WARM] = {"shoal_object_gets_total",
                     "Object GETs served, by cache: warm (from the drives) or cold (fetched from "
                     "the backend for this read).",
                     "cache", "warm"},
    [TM_GET_COLD] = {"shoal_object_gets_total", NULL, "cache", "cold"},
    [TM_GET_WARM_BYTES] = {"shoal_object_get_bytes_total",
                           "Object bytes served to GETs, by cache (warm, cold).", "cache",
                           "warm"},
    [TM_GET_COLD_BYTES] = {"shoal_object_get_bytes_total", NULL, "cache", "cold"},
    [TM_REPAIRED] = {"shoal_read_repairs_total",
                     "Reads that found their copy damaged or missing: repaired from redundancy "
                     "(repaired) or answered with an error (unserved).",
                     "result", "repaired"},
    [TM_UNSERVED] = {"shoal_read_repairs_total", NULL, "result", "unserved"},
    [TM_REBUILT] = {"shoal_ec_rebuilds_total",
                    "Erasure-coded objects rebuilt from their slices (ok) or not (failed).",
                    "result", "ok"},
    [TM_REBUILD_FAILED] = {"shoal_ec_rebuilds_total", NULL, "result", "failed"},
    [TM_SLICED_FILE] = {"shoal_ec_sliced_total",
                        "Object versions cut into erasure-coded slices, by where the parity "
                        "was coded (arrival: as the PUT's body came; file: from the committed "
                        "object).",
                        "coded", "file"},
    [TM_SLICED_ARRIVAL] = {"shoal_ec_sliced_total", NULL, "coded", "arrival"},
    [TM_WB_OK] = {"shoal_writeback_uploads_total",
                  "Write-back uploads to backends, by result (ok, failed: retried later).",
                  "result", "ok"},
    [TM_WB_FAILED] = {"shoal_writeback_uploads_total", NULL, "result", "failed"},
    [TM_WB_BYTES] = {"shoal_writeback_uploaded_bytes_total",
                     "Object bytes written back to backends.", "", ""},
};

static struct metric_series *series[TM_N];
static struct metric_family *running, *job_objects, *job_bytes;

void targetmetrics_init(void)
{
    for (int i = 0; i < TM_N; i++) {
        const char *help = defs[i].help;
        for (int k = i - 1; !help && k >= 0; k--)   /* a family's help is on its first line */
            if (!strcmp(defs[k].name, defs[i].name))
                help = defs[k].help;
        struct metric_family *f =
            metrics_family(METRIC_COUNTER, defs[i].name, help, defs[i].label, NULL, 0);
        __atomic_store_n(&series[i], metrics_series(f, defs[i].value), __ATOMIC_RELEASE);
    }
    running = metrics_family(
        METRIC_GAUGE, "shoal_jobs_running",
        "Batch jobs under way on this target (running, or waiting for a place), by kind.", "kind",
        NULL, 0);
    job_objects = metrics_family(METRIC_COUNTER, "shoal_job_objects_total",
                                 "Objects batch jobs counted, by kind and counter (fetched, "
                                 "evicted, copied, moved, found, fixed, errors...).",
                                 "kind,counter", NULL, 0);
    job_bytes = metrics_family(METRIC_COUNTER, "shoal_job_bytes_total",
                               "Object bytes batch jobs moved, by kind.", "kind", NULL, 0);
}

void targetmetrics_add(enum tmet m, uint64_t n)
{
    metrics_add(__atomic_load_n(&series[m], __ATOMIC_ACQUIRE), n);
}

void targetmetrics_get(int cold, uint64_t bytes)
{
    targetmetrics_add(cold ? TM_GET_COLD : TM_GET_WARM, 1);
    targetmetrics_add(cold ? TM_GET_COLD_BYTES : TM_GET_WARM_BYTES, bytes);
}

void targetmetrics_job_running(const char *kind, int delta)
{
    struct metric_series *s = running ? metrics_series(running, kind) : NULL;
    if (s)
        metrics_set(s, metrics_value(s) + delta);
}

void targetmetrics_job_add(const char *kind, const char *counter, uint64_t n, uint64_t b)
{
    if (!job_objects)
        return;
    char l[64];
    snprintf(l, sizeof(l), "%s,%s", kind, counter);
    if (n)
        metrics_add(metrics_series(job_objects, l), n);
    if (b)
        metrics_add(metrics_series(job_bytes, kind), b);
}
