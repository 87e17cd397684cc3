/*
 * cmds: the shoal client's commands, one function each (cluster.c: with
 * node too,
 * bucket.c, object.c, batch.c, job.c). main.c's table names them with their usage
 * and the options they take, checks the count of positional arguments,
 * completes the endpoint and credentials and opens the connection before
 * calling one; each returns the exit status (args.h). Human output goes to
 * stdout, or, with --json, one JSON document and nothing else.
 *
 * Thread: the main thread.
 */
#ifndef SHOAL_CLI_CMDS_H
#define SHOAL_CLI_CMDS_H

#include "args.h"
#include "util.h"

int cmd_cluster_show(const struct args *a);
int cmd_cluster_space(const struct args *a);
int cmd_node_maintenance(const struct args *a);
int cmd_node_decommission(const struct args *a);

int cmd_bucket_ls(const struct args *a);
int cmd_bucket_create(const struct args *a);
int cmd_bucket_rm(const struct args *a);
int cmd_bucket_props(const struct args *a);
int cmd_bucket_set(const struct args *a);
int cmd_bucket_summary(const struct args *a);
/* Append "/v1/buckets/BUCKET" (encoded) and sub (a path or query, as is). */
void cmd_bucket_path(struct gbuf *u, const char *bucket, const char *sub);

int cmd_ls(const struct args *a);
int cmd_get(const struct args *a);
int cmd_put(const struct args *a);
int cmd_rm(const struct args *a);

int cmd_batch(const struct args *a);

int cmd_job_start(const struct args *a);
int cmd_job_ls(const struct args *a);
int cmd_job_show(const struct args *a);
int cmd_job_wait(const struct args *a);
int cmd_job_stop(const struct args *a);

#endif
