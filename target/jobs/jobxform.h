/*
 * jobxform: the transform kind of a batch job (jobxform.c). Each target
 * takes the names of the source bucket it owns (jobsel.h: names, a
 * template or a prefix; a backed bucket's fetched first), sends each
 * object it holds through the job's transform (xfrun.h) and streams the
 * answer as a PUT, signed with the cluster's signature, to the target that
 * owns the new name in the destination bucket ("to"), renamed by
 * "prepend" and "ext" ({".jpg": ".png"}: the name's last extension
 * replaced). Nothing partial is stored: a transform that fails (its error
 * status, a crash, a timeout) cuts the PUT off before its end, and the
 * destination commits nothing; the object is named among the job's
 * errors and the job goes on. "args" go to the transform as a GET's
 * query arguments do; "concurrency" objects at once per target,
 * "dry_run" counts what would be transformed.
 *
 * Thread: the job's loop; the data file is opened on the I/O pool.
 */
#ifndef SHOAL_TARGET_JOBXFORM_H
#define SHOAL_TARGET_JOBXFORM_H

#include "job.h"

extern const struct job_kind jobxform_transform;

#endif
