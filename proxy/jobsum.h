/*
 * jobsum: what the proxy shows of a batch job, from its targets' answers
 * (jobsum.c). Pure: JSON in, JSON out, no I/O.
 */
#ifndef SHOAL_PROXY_JOBSUM_H
#define SHOAL_PROXY_JOBSUM_H

#include <jansson.h>

/* The answers of GET /v1/internal/jobs/<id> from every target asked (an
 * array of {"target", "status", "body"}), added up into the job id's
 * view: the counters summed, the earliest start, the latest end, up to
 * 10 error names, the targets waiting, unreached and forgotten, and the
 * state (*state, also in the view): "running" while any target runs it;
 * "unknown" while a target it started on (on: the ids it started on, an
 * array, or NULL when not known) is not reached or no longer knows it
 * (the sums are partial); else "aborted", "failed" (errors), or
 * "finished". A new object; answers is kept by reference. */
json_t *jobsum_aggregate(const char *id, json_t *answers, json_t *on, const char **state);

#endif
