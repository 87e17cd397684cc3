/*
 * targetmetrics: a target's own metrics, beyond every node's (nodemetrics.h),
 * registered when it starts so that every series is there from 0: object
 * GETs and their bytes by cache (warm: served from the drives; cold:
 * fetched from the backend for this read, kept or passed through), read
 * repairs, erasure-coding rebuilds and slicings, write-back uploads, and
 * batch jobs (running, and what they did: objects by kind and counter,
 * bytes by kind). Backends' own requests are counted by curlclient (common).
 *
 * Thread: any (relaxed atomics).
 */
#ifndef SHOAL_TARGET_TARGETMETRICS_H
#define SHOAL_TARGET_TARGETMETRICS_H

#include <stdint.h>

enum tmet {
    TM_GET_WARM, TM_GET_COLD,            /* shoal_object_gets_total{cache} */
    TM_GET_WARM_BYTES, TM_GET_COLD_BYTES, /* shoal_object_get_bytes_total{cache} */
    TM_REPAIRED, TM_UNSERVED,            /* shoal_read_repairs_total{result} */
    TM_REBUILT, TM_REBUILD_FAILED,       /* shoal_ec_rebuilds_total{result} */
    TM_SLICED_FILE, TM_SLICED_ARRIVAL,   /* shoal_ec_sliced_total{coded} */
    TM_WB_OK, TM_WB_FAILED,              /* shoal_writeback_uploads_total{result} */
    TM_WB_BYTES,                         /* shoal_writeback_uploaded_bytes_total */
    TM_N
};

/* Register every family and series (the target's start, once). */
void targetmetrics_init(void);

void targetmetrics_add(enum tmet m, uint64_t n);

/* An object GET's body served: warm or cold, and its bytes. */
void targetmetrics_get(int cold, uint64_t bytes);

/* Batch jobs of kind (job_kind_name) running: delta +1 or -1 (under the
 * job registry's lock). */
void targetmetrics_job_running(const char *kind, int delta);

/* A job's progress: n more objects under counter (fetched, evicted,
 * moved...), b more bytes. */
void targetmetrics_job_add(const char *kind, const char *counter, uint64_t n, uint64_t b);

#endif
