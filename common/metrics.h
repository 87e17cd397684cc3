/*
 * metrics: the process's registry of Prometheus metrics, rendered in the
 * text exposition format (version 0.0.4) with # HELP and # TYPE for every
 * family.
 *
 * A family (counter, gauge or histogram) has a name, a help line and the
 * names of its labels; a series is one set of label values. Families are
 * registered at start-up (metrics_family returns the existing one when
 * called again with the same name). Series are found or created by their
 * label values from any thread: finding one takes no lock (a family holds
 * at most METRICS_MAX_SERIES, published with release stores); creating one
 * takes the family's mutex. Updates are relaxed atomics, so any thread may
 * count; a scrape reads each value once.
 *
 * Gauges whose value lives elsewhere (a map version, a queue's length)
 * are read by a callback at scrape time (metrics_gauge_fn).
 */
#ifndef SHOAL_METRICS_H
#define SHOAL_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct gbuf;

#define METRICS_MAX_SERIES 128
#define METRICS_MAX_BUCKETS 16

enum metric_kind { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

struct metric_family;
struct metric_series;

/* A family; labels is a comma-separated list of label names ("" for none).
 * Histograms take their upper bounds (seconds, bytes...) in increasing
 * order, at most METRICS_MAX_BUCKETS (the +Inf bucket is implicit). */
struct metric_family *metrics_family(enum metric_kind kind, const char *name,
                                     const char *help, const char *labels,
                                     const double *bounds, int n_bounds);

/* The series with these label values (comma-separated, in the family's
 * label order; "" for a family without labels); created on first use.
 * NULL only when the family is full (then updates are dropped: callers
 * pass NULL on to the update functions, which ignore it). */
struct metric_series *metrics_series(struct metric_family *f, const char *values);

void metrics_add(struct metric_series *s, uint64_t v);      /* counter */
void metrics_set(struct metric_series *s, int64_t v);       /* gauge */
void metrics_observe(struct metric_series *s, double v);    /* histogram */
/* The value of a counter or gauge series, for tests and summaries. */
int64_t metrics_value(const struct metric_series *s);

/* A family with no labels (a gauge, or a counter kept elsewhere) whose
 * value fn(arg) computes at scrape time. */
void metrics_fn(enum metric_kind kind, const char *name, const char *help,
                int64_t (*fn)(void *arg), void *arg);

/* Every family, with const_labels (e.g. node="t1",role="target"; may be
 * "") added to every series, appended to out. */
void metrics_render(struct gbuf *out, const char *const_labels);

/* Forget every family (tests). */
void metrics_reset(void);

#endif
