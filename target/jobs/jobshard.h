/*
 * jobshard: the shard and reshard kinds of a batch job (jobshard.c),
 * registered by main.c.
 *
 * shard packs the objects a job selects (names, a template, a prefix or
 * the whole bucket) into shards of about "shard_size" bytes in bucket
 * "to", named by "output_template" ("train-{000000..999999}.tar"; its
 * extension is the format: .tar, .tar.gz/.tgz or .zip), the samples laid
 * out as common/shardplan.h says (optionally "shuffle"d with "seed").
 * reshard does the same with the members of the selected shards.
 *
 * Samples must be seen whole to stay together, so one target leads the
 * job: the owner of the job's id in the map the job was started with
 * (the others end their share at once). It lists the selection across
 * the cluster (every target's drives, or the backend's listing), the
 * sources' members for a reshard (?archlist from their owners), plans
 * the shards, and writes SHARD_PAR of them at a time: each is a GetBatch
 * of its members, assembled by this target from their owners (batch.h),
 * streamed straight into a PUT to the owner of the shard's name, so
 * memory stays bounded and a shard that fails midway is never stored.
 * Names are planned the same way each time, so a restarted job writes
 * the same shards again.
 *
 * Thread: the job's loop.
 */
#ifndef SHOAL_TARGET_JOBSHARD_H
#define SHOAL_TARGET_JOBSHARD_H

#include "job.h"

extern const struct job_kind jobshard_shard;
extern const struct job_kind jobshard_reshard;

#endif
