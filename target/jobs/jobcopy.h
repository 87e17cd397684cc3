/*
 * jobcopy: the copy and download kinds of a batch job (jobcopy.c),
 * registered by main.c.
 */
#ifndef SHOAL_TARGET_JOBCOPY_H
#define SHOAL_TARGET_JOBCOPY_H

#include "job.h"

extern const struct job_kind jobcopy_copy;
extern const struct job_kind jobcopy_download;

#endif
