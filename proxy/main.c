/*
 * shoal-proxy: the stateless gateway. Object requests are answered with a
 * signed 307 to the HRW owner (objects.c), or streamed to it for S3
 * clients (s3*.c); bucket and cluster requests are served here (by the
 * primary, or forwarded to it). A proxy holds no object data.
 *
 * This file starts the daemon; routes.c lists the routes, and every
 * handler lives in the file of its concern (proxy.h names them).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "http.h"
#include "log.h"
#include "proxy.h"
#include "quorum.h"
#include "reach.h"
#include "routes.h"
#include "util.h"
#include "worker.h"

int main(int argc, char **argv)
{
    static struct proxy p;
    char err[512];
    int info = conf_info(argc, argv, "shoal-proxy", CONF_PROXY);
    if (info >= 0)
        return info;
    node_tune_malloc();
    node_block_signals();
    if (conf_load(&p.conf, argc, argv, err, sizeof(err))) {
        fprintf(stderr, "shoal-proxy: %s\n", err);
        conf_free(&p.conf);
        return 2;
    }
    log_init("shoal-proxy", (enum log_level)log_level_parse(p.conf.log_level));
    pthread_mutex_init(&p.mu, NULL);
    if (node_init(&p.node, &p.conf, NODE_PROXY, err, sizeof(err))) {
        fprintf(stderr, "shoal-proxy: %s\n", err);
        conf_free(&p.conf);
        return 1;
    }
    p.node.owner = &p;
    p.node.on_tick = cluster_tick;
    p.node.ready = quorum_ready;
    struct http_server_opts o = {
        .host = p.conf.host,
        .port = p.conf.port,
        .workers = p.conf.workers,
        .max_header_bytes = p.conf.max_header_bytes,
        .max_headers = p.conf.max_headers,
        .idle_timeout_s = p.conf.idle_timeout_s,
        .header_timeout_s = p.conf.header_timeout_s,
        .max_connections = p.conf.max_connections,
        .handler = routes_main,
        .ctx = &p,
        .worker_init = worker_init,
        .worker_fini = worker_fini,
        .on_done = node_on_done,
        .tls = p.node.tls,
    };
    struct http_server *srv = http_server_start(&o, err, sizeof(err)), *plain = NULL;
    if (!srv || node_plain_server(&p.node, &o, &plain, err, sizeof(err))) {
        fprintf(stderr, "shoal-proxy: %s\n", err);
        if (srv)
            http_server_stop(srv);
        conf_free(&p.conf);
        return 1;
    }
    struct http_server *s3srv = NULL;
    if (p.conf.s3_api_port) {
        struct http_server_opts so = o;
        so.port = p.conf.s3_api_port;
        so.handler = routes_s3_port;
        if (!(s3srv = http_server_start(&so, err, sizeof(err)))) {
            fprintf(stderr, "shoal-proxy: S3 port: %s\n", err);
            http_server_stop(srv);
            conf_free(&p.conf);
            return 1;
        }
        log_info("S3 API at the root of %s:%d", p.conf.host, p.conf.s3_api_port);
        node_metrics_server(s3srv);
    }
    node_metrics_server(srv);
    p.node.raft_addr = quorum_address(&p.conf, err, sizeof(err));   /* before the first join */
    if (!p.node.raft_addr) {
        fprintf(stderr, "shoal-proxy: %s\n", err);
        _exit(1);
    }
    node_start(&p.node);
    reach_start();
    if (quorum_start(&p, err, sizeof(err))) {
        fprintf(stderr, "shoal-proxy: %s\n", err);
        _exit(1);                /* threads run: no orderly teardown from here */
    }
    log_info("proxy %s listening on %s:%d", p.node.id, p.conf.host, p.conf.port);
    int sig = node_wait_signal();
    log_info("signal %d: shutting down", sig);
    /* requests under way finish, new ones get 503: both ports stop taking
     * them first (a grace of 0 waits for nothing), then each is waited for */
    if (s3srv)
        http_server_drain(s3srv, 0);
    if (plain)
        http_server_drain(plain, 0);
    http_server_drain(srv, p.conf.shutdown_grace_s);
    if (s3srv)
        http_server_drain(s3srv, p.conf.shutdown_grace_s);
    if (plain)
        http_server_drain(plain, p.conf.shutdown_grace_s);
    quorum_stop(&p);             /* changes still waiting get 503 on their workers */
    if (s3srv)
        http_server_stop(s3srv);
    if (plain)
        http_server_stop(plain);
    http_server_stop(srv);
    reach_stop();
    node_stop(&p.node);
    quorum_free(&p);
    cluster_fini(&p);
    conf_free(&p.conf);
    return 0;
}
