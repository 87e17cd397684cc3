/*
 * jobfetch: the prefetch and evict kinds of a batch job (jobfetch.c),
 * registered by main.c.
 */
#ifndef SHOAL_TARGET_JOBFETCH_H
#define SHOAL_TARGET_JOBFETCH_H

#include "job.h"

extern const struct job_kind jobfetch_prefetch;
extern const struct job_kind jobfetch_evict;

#endif
