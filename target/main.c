/*
 * shoal-target: owns mountpaths and serves the objects HRW places on it.
 *
 * This file lists the target's routes and starts the daemon; the handlers
 * live in the modules named in target.h. A request goes first to the
 * endpoints every node has (node_handle: health, cluster, metrics, ...),
 * then through the table below:
 *
 *   /v1/objects/BUCKET/NAME    any method     obj.c
 *   /v1/internal/...           cluster-signed only (403 otherwise), then
 *                              the internal table: list, uploads,
 *                              list-remote, jobs, space, writeback, xfer, slice
 *                              (objects between targets), rebalance,
 *                              mountpaths
 *   anything else under /v1/   404
 *   anything outside /v1/      S3 at the root, "/BUCKET/KEY" (s3root.c)
 *
 * Object data moves with sendfile on GET and streams through a work file
 * on PUT; every blocking step (fsync, RocksDB writes, listing, unlink)
 * runs on the I/O pool and completes back on the worker's loop.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ecode.h"
#include "err.h"
#include "nodeclient.h"
#include "curlclient.h"
#include "http.h"
#include "iopool.h"
#include "job.h"
#include "jobcopy.h"
#include "jobxform.h"
#include "jobshard.h"
#include "jobfetch.h"
#include "localcopy.h"
#include "list.h"
#include "log.h"
#include "lru.h"
#include "md5lane.h"
#include "mpath.h"
#include "mpu.h"
#include "node.h"
#include "obj.h"
#include "ocache.h"
#include "pin.h"
#include "purge.h"
#include "reb.h"
#include "scrub.h"
#include "slice.h"
#include "route.h"
#include "batch.h"
#include "bsend.h"
#include "s3root.h"
#include "space.h"
#include "store.h"
#include "target.h"
#include "targetmetrics.h"
#include "util.h"
#include "vmap.h"
#include "writeback.h"
#include "xfer.h"
#include "xfsup.h"

static void internal(struct http_req *r, const char *rest, size_t rlen);

/* The calls of higher layers that lower ones make (target.h). */
static const struct target_hooks hooks = {
    .owed = writeback_owed,
    .drop_local_copies = localcopy_drop,
    .sync_local_copies = localcopy_sync,
    .drop_older_slices = slice_drop_older,
    .ensure_slices = ecode_ensure,
    .walk_slice = ecode_walk_slice,
};

/* The kinds of batch job this target runs, each defined by the subsystem
 * that does its work. */
static const struct job_kind *const job_kinds[] = {
    &jobfetch_prefetch,    &jobfetch_evict, &jobcopy_copy,        &jobcopy_download,
    &lru_job_kind,         &reb_job_kind,   &mpath_resilver_kind, &writeback_flush_kind,
    &scrub_kind,           &scrub_encode_kind, &jobshard_shard,    &jobshard_reshard,
    &jobxform_transform,
};
static void not_found(struct http_req *r, const char *rest, size_t rlen);

/* First match wins. */
static const struct route routes[] = {
    {RM_ANY, "/v1/objects/*", obj_handle, "object"},
    {RM_ANY, "/v1/batch", batch_handle, "batch"},
    {RM_ANY, "/v1/internal/*", internal, "internal"},
    {RM_ANY, "/v1/*", not_found, NULL},
    {RM_ANY, "*", s3root_handle, "s3"},
};

/* Between nodes only: behind the cluster signature (internal()). */
static const struct route internal_routes[] = {
    {RM_GET, "/v1/internal/list", list_local, "list"},
    {RM_GET, "/v1/internal/uploads", mpu_list_handle, "uploads"},
    {RM_GET, "/v1/internal/list-remote", list_remote, "list-remote"},
    {RM_POST, "/v1/internal/jobs", job_start, "job.start"},
    {RM_GET, "/v1/internal/jobs", job_list, "job.list"},
    {RM_GET, "/v1/internal/jobs/*", job_show, "job.show"},
    {RM_DELETE, "/v1/internal/jobs/*", job_abort, "job.abort"},
    {RM_PATCH, "/v1/internal/jobs/*", pin_patch, "job.patch"},
    {RM_GET, "/v1/internal/space", space_report, "space"},
    {RM_GET, "/v1/internal/damaged", scrub_damaged_report, "damaged"},
    {RM_GET, "/v1/internal/wbq", writeback_report, "wbq"},
    {RM_GET, "/v1/internal/transforms", xfsup_report, "transforms"},
    {RM_ANY, "/v1/internal/xfer/*", xfer_handle, "xfer"},
    {RM_POST, "/v1/internal/batch", bsend_handle, "batch.send"},
    {RM_ANY, "/v1/internal/slice/*", slice_handle, "slice"},
    {RM_GET, "/v1/internal/rebalance", reb_report, "rebalance"},
    {RM_POST, "/v1/internal/shutdown", reb_shutdown, "shutdown"},
    {RM_ANY, "/v1/internal/mountpaths", mpath_handle, "mountpaths"},
};

static void not_found(struct http_req *r, const char *rest, size_t rlen)
{
    (void)rest;
    (void)rlen;
    route_not_found(r);
}

/* /v1/internal/: a valid cluster signature first, whatever the path; then
 * the internal table, where a method it does not list is a 404 as well. */
static void internal(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    if (node_check_sig(&t->node, r) != 1) {
        err_reply(r, S3E_ACCESS_DENIED, "internal endpoints take only cluster-signed requests");
        return;
    }
    const struct route *rt =
        route_find(internal_routes, ARRAY_LEN(internal_routes), r, &rest, &rlen, NULL);
    if (!rt) {
        not_found(r, rest, rlen);
        return;
    }
    r->op = rt->op;
    rt->fn(r, rest, rlen);
}

static void handle(struct http_req *r)
{
    struct target *t = r->w->ctx;
    if (node_handle(&t->node, r))
        return;
    route_dispatch(routes, ARRAY_LEN(routes), r);
}

static void worker_init(struct http_worker *w)
{
    struct target_worker *tw = xcalloc(1, sizeof(*tw));
    tw->cli = curlclient_new(w->base);
    tw->hc = nodeclient_new(w->base);
    tw->sweeper = ocache_start(w->base);
    w->local = tw;
}

static void worker_fini(struct http_worker *w)
{
    struct target_worker *tw = w->local;
    curlclient_free(tw->cli);
    nodeclient_free(tw->hc);
    ocache_stop(tw->sweeper);
    free(tw);
}

/* After signal sig: requests under way finish (with drain, what is owed to
 * backends goes first), then everything stops. */
static void shut_down(struct target *t, int sig, struct http_server *srv,
                      struct http_server *plain)
{
    log_info("signal %d: shutting down", sig);
    if (sig == SIGTERM && t->conf.drain)
        writeback_drain(t, t->conf.drain_timeout_s); /* what is owed to backends first */
    if (plain)
        http_server_drain(plain, 0);
    http_server_drain(srv, t->conf.shutdown_grace_s);   /* requests under way finish */
    if (plain)
        http_server_drain(plain, t->conf.shutdown_grace_s);
    /* the loops stop; jobs of the I/O pool still running post their ends to
     * the workers' queues, which stay until the pool is stopped */
    http_server_halt(srv);
    if (plain)
        http_server_halt(plain);
    node_stop(&t->node);
    xfsup_stop();                /* the transforms' children go with the target */
    iopool_free(t->io);
    md5lane_stop();
    http_server_free(srv);
    if (plain)
        http_server_free(plain);
    store_close(&t->store);
    s3_cfg_free(&t->s3);
    az_cfg_free(&t->az);
    conf_free(&t->conf);
}

/* The default backend profiles: the s3_* options and the environment
 * (AWS_*, AZURE_STORAGE_*). */
static void default_profiles(struct target *t)
{
    s3_cfg_resolve(&t->s3, t->conf.s3_endpoint, t->conf.s3_region, t->conf.s3_addressing,
                   t->conf.s3_access_key, t->conf.s3_secret_key, t->conf.s3_session_token,
                   t->conf.s3_profile);
    az_cfg_from_env(&t->az);
    if (t->az.account[0])
        log_info("Azure backends: %s, account %s, %s", t->az.endpoint, t->az.account,
                 t->az.sas[0] ? "SAS" : t->az.key[0] ? "SharedKey" : "anonymous requests");
    log_info("S3 backends: endpoint %s, region %s, %s addressing, %s", t->s3.endpoint,
             t->s3.region, t->s3.vhost ? "virtual-host" : "path",
             t->s3.access_key[0] ? "signed requests" : "anonymous requests");
}

int main(int argc, char **argv)
{
    static struct target t;
    t.hooks = &hooks;
    char err[512];
    int info = conf_info(argc, argv, "shoal-target", CONF_TARGET);
    if (info >= 0)
        return info;
    node_tune_malloc();
    node_block_signals();
    if (conf_load(&t.conf, argc, argv, err, sizeof(err))) {
        fprintf(stderr, "shoal-target: %s\n", err);
        conf_free(&t.conf);
        return 2;
    }
    log_init("shoal-target", (enum log_level)log_level_parse(t.conf.log_level));
    if (t.conf.n_mountpaths < 1) {
        fprintf(stderr, "shoal-target: option 'mountpaths' needs at least one directory\n");
        conf_free(&t.conf);
        return 2;
    }
    if (node_init(&t.node, &t.conf, NODE_TARGET, err, sizeof(err))) {
        fprintf(stderr, "shoal-target: %s\n", err);
        conf_free(&t.conf);
        return 1;
    }
    targetmetrics_init();
    char **placed, **off;
    int np, noff;
    mpath_load(&t, &placed, &np, &off, &noff);  /* as added and removed at run time */
    int rc = store_open(&t.store, placed, np, off, noff, t.conf.fsync, err, sizeof(err));
    for (int i = 0; i < np; i++)
        free(placed[i]);
    for (int i = 0; i < noff; i++)
        free(off[i]);
    free(placed);
    free(off);
    if (rc) {
        fprintf(stderr, "shoal-target: %s\n", err);
        store_close(&t.store);
        conf_free(&t.conf);
        return 1;
    }
    t.store.inline_max = (uint32_t)t.conf.inline_max;
    t.node.owner = &t;
    t.node.on_bmd = purge_on_bmd;
    t.node.on_cmap = reb_on_cmap;
    default_profiles(&t);
    ocache_init(t.conf.workers);
    vmap_init();
    t.io = iopool_new(t.conf.io_threads);
    if (md5lane_start(sysconf(_SC_NPROCESSORS_ONLN) > 1))
        fprintf(stderr, "shoal-target: no MD5 hasher thread: S3 bodies are hashed on the loops\n");
    struct http_server_opts o = {
        .host = t.conf.host,
        .port = t.conf.port,
        .workers = t.conf.workers,
        .max_header_bytes = t.conf.max_header_bytes,
        .max_headers = t.conf.max_headers,
        .idle_timeout_s = t.conf.idle_timeout_s,
        .header_timeout_s = t.conf.header_timeout_s,
        .max_connections = t.conf.max_connections,
        .handler = handle,
        .ctx = &t,
        .worker_init = worker_init,
        .worker_fini = worker_fini,
        .on_done = node_on_done,
        .tls = t.node.tls,
    };
    struct http_server *srv = http_server_start(&o, err, sizeof(err)), *plain = NULL;
    if (!srv || node_plain_server(&t.node, &o, &plain, err, sizeof(err))) {
        fprintf(stderr, "shoal-target: %s\n", err);
        if (srv)
            http_server_stop(srv);
        iopool_free(t.io);
        md5lane_stop();
        store_close(&t.store);
        conf_free(&t.conf);
        return 1;
    }
    node_metrics_server(srv);
    node_start(&t.node);
    for (size_t i = 0; i < ARRAY_LEN(job_kinds); i++)
        job_kind_register(job_kinds[i]);
    pin_load(&t.store);
    job_resume(&t, http_server_worker(srv, 0));
    lru_start(&t, http_server_worker(srv, 0));
    writeback_start(&t, http_server_worker(srv, 0));
    space_start(&t, http_server_worker(srv, 0));
    reb_start(&t, http_server_worker(srv, 0));
    mpath_start(&t, http_server_worker(srv, 0));
    scrub_start(&t, http_server_worker(srv, 0));
    mpu_expire_start(&t, http_server_worker(srv, 0));
    if (xfsup_start(t.conf.state_dir, err, sizeof(err)))
        log_warn("transforms will not run here: %s", err);
    log_info("target %s listening on %s:%d with %d mountpaths", t.node.id, t.conf.host,
             t.conf.port, t.store.n);
    shut_down(&t, node_wait_signal(), srv, plain);
    return 0;
}
