/*
 * progress: the progress line of long work (a job being waited for, a big
 * GET or PUT) on stderr. On a terminal it is one line redrawn in place
 * ('\r', at most five times a second): a bar, the percentage, objects or
 * bytes done of the total, the throughput, the ETA and the errors. Not on
 * a terminal it is a plain line every few seconds, so a log shows the
 * work moving without control characters. --quiet turns it off.
 *
 * Every function takes a NULL progress and does nothing.
 * Thread: the main thread.
 */
#ifndef SHOAL_CLI_PROGRESS_H
#define SHOAL_CLI_PROGRESS_H

#include <stdint.h>

enum progress_unit {
    PROGRESS_BYTES,              /* a transfer: done and total are bytes */
    PROGRESS_OBJECTS,            /* a job: done and total are objects */
};

struct progress {
    int on;                      /* drawing at all */
    int tty;                     /* stderr is a terminal: redraw in place */
    enum progress_unit unit;
    char label[64];
    uint64_t t0_ms;              /* started */
    uint64_t last_ms;            /* the last draw (0: none yet) */
    int lines;                   /* draws so far */
    int64_t done, total;         /* objects (total -1: not known) */
    uint64_t bytes;
    int64_t bytes_total;         /* -1: not known */
    int64_t errors;
    double mibps;                /* the cluster's throughput; < 0: measured here */
    int ended;                   /* the work is complete: 100% */
    int seen;                    /* a job's figures came */
    int last_ended;              /* the last draw showed the end */
    /* the rate's baseline: the first figures seen */
    uint64_t base_ms;
    int64_t base_done;
    uint64_t base_bytes;
};

void progress_init(struct progress *p, enum progress_unit unit, const char *label, int quiet);
/* A transfer's figures; the line is redrawn when it is due. */
void progress_bytes_total(struct progress *p, int64_t total);
void progress_bytes_add(struct progress *p, uint64_t n);
void progress_bytes_set(struct progress *p, uint64_t n);
/* A job's figures (mibps < 0 when the cluster gave none); drawn now on a
 * terminal, every few seconds otherwise. ended: the job completed. */
void progress_job(struct progress *p, int64_t done, int64_t total, uint64_t bytes,
                  int64_t errors, double mibps, int ended);
/* The last draw (100% when complete), when there was any, and the end
 * of the line. */
void progress_end(struct progress *p, int complete);

#endif
