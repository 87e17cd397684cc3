/*
 * shoal-proxy: the stateless gateway. Object requests are answered with a
 * signed 307 to the HRW owner; bucket and cluster requests are served here
 * (by the primary, or forwarded to it). A proxy holds no object data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "cmap.h"
#include "hcli.h"
#include "http.h"
#include "log.h"
#include "objname.h"
#include "proxy.h"
#include "util.h"

struct hcli *proxy_cli(struct http_req *r)
{
    return ((struct proxy_worker *)r->w->local)->cli;
}

static void worker_init(struct http_worker *w)
{
    struct proxy_worker *pw = xcalloc(1, sizeof(*pw));
    pw->cli = hcli_new(w->base);
    w->local = pw;
}

static void worker_fini(struct http_worker *w)
{
    struct proxy_worker *pw = w->local;
    hcli_free(pw->cli);
    s3relay_worker_fini(pw);
    free(pw);
}

static enum stat_op method_op(int m)
{
    switch (m) {
    case HTTP_M_GET: return ST_GET;
    case HTTP_M_HEAD: return ST_HEAD;
    case HTTP_M_PUT: return ST_PUT;
    case HTTP_M_DELETE: return ST_DELETE;
    default: return ST_OTHER;
    }
}

static void obj_redirect(struct proxy *p, struct http_req *r, const char *rest, size_t rlen);

static int has_ctl(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            return 1;
    return 0;
}

static void redirect_again(struct http_req *r)
{
    static const char objs[] = "/v1/objects/";
    obj_redirect(r->w->ctx, r, r->path + sizeof(objs) - 1, r->path_len - (sizeof(objs) - 1));
}

static void obj_redirect(struct proxy *p, struct http_req *r, const char *rest, size_t rlen)
{
    struct objname on;
    char err[256], provider[16];
    enum stat_op op = method_op(r->method);
    if (objname_parse(rest, rlen, &on, err, sizeof(err)) ||
        objname_provider(r, provider, err, sizeof(err))) {
        node_count(&p->node, op, 400);
        http_reply_error(r, 400, "%s", err);
        return;
    }
    if (r->method != HTTP_M_GET && r->method != HTTP_M_HEAD && r->method != HTTP_M_PUT &&
        r->method != HTTP_M_DELETE) {
        http_resp_header(r, "Allow", "GET, HEAD, PUT, DELETE");
        http_reply_error(r, 405, "method %s not allowed on objects", r->method_name);
        return;
    }
    struct bmd *b = bmd_current();
    int exists = bmd_find(b, provider, on.bucket) != NULL;
    bmd_unref(b);
    if (!exists && strcmp(provider, BMD_PROVIDER_SHOAL)) {
        /* a remote bucket named by its provider joins on first use */
        buckets_ensure(p, r, provider, on.bucket, redirect_again);
        return;
    }
    if (!exists) {
        node_count(&p->node, op, 404);
        http_reply_error(r, 404, "bucket '%s' not found", on.bucket);
        return;
    }
    char *name = xstrndup(on.name, on.name_len);
    size_t kl;
    char *key = node_obj_key(provider, on.bucket, name, &kl);
    struct cmap *m = cmap_current();
    const struct cmap_node *owner = m ? cmap_owner(m, key, kl) : NULL;
    free(key);
    if (!owner) {
        cmap_unref(m);
        free(name);
        node_count(&p->node, op, 503);
        http_reply_error(r, 503, "no storage target is in the cluster");
        return;
    }
    char *en = http_pct_encode(name, on.name_len, 1);
    char *path = xasprintf("/v1/objects/%s/%s", on.bucket, en);
    /* HEAD is signed as GET: clients may turn one into the other. The
     * signature covers the client's whole query too. */
    char *url = node_signed_url(&p->node, r->method == HTTP_M_HEAD ? "GET" : r->method_name,
                                owner->url, path, r->query);
    http_resp_header(r, "Location", "%s", url);
    __atomic_add_fetch(&p->node.st.redirects, 1, __ATOMIC_RELAXED);
    node_count(&p->node, op, 307);
    /* Ids and URLs are plain tokens (cluster_join), the path is
     * percent-encoded; only a client's query may need JSON escaping. */
    char *body;
    if (strpbrk(url, "\"\\") || has_ctl(url)) {
        json_t *j = json_pack("{s:s, s:s}", "target", owner->id, "location", url);
        body = j ? json_dumps(j, JSON_COMPACT) : xstrdup("{}");
        json_decref(j);
    } else {
        body = xasprintf("{\"target\":\"%s\",\"location\":\"%s\"}\n", owner->id, url);
    }
    cmap_unref(m);
    free(url);
    free(path);
    free(en);
    free(name);
    http_reply(r, 307, "application/json", body, strlen(body));
    free(body);
}

static void handle(struct http_req *r)
{
    struct proxy *p = r->w->ctx;
    static const char objs[] = "/v1/objects/";
    if (node_handle(&p->node, r))
        return;
    if (r->path_len >= sizeof(objs) - 1 && !memcmp(r->path, objs, sizeof(objs) - 1)) {
        if (node_authenticate(&p->node, r))
            obj_redirect(p, r, r->path + sizeof(objs) - 1, r->path_len - (sizeof(objs) - 1));
        return;
    }
    if (s3_handle(p, r))
        return; /* checks S3 signatures itself */
    /* cluster-signed by their senders */
    if (http_path_is(r, "/v1/cluster/join") && r->method == HTTP_M_POST) {
        cluster_join(p, r);
        return;
    }
    if (http_path_is(r, "/v1/cluster/keepalive") && r->method == HTTP_M_POST) {
        cluster_keepalive(p, r);
        return;
    }
    /* everything else reads or changes the cluster's data */
    if (!node_authenticate(&p->node, r))
        return;
    if (buckets_handle(p, r))
        return;
    node_count(&p->node, ST_OTHER, 404);
    http_reply_error(r, 404, "no such endpoint: %s %.*s", r->method_name, (int)r->path_len,
                     r->path);
}

static void handle_s3_port(struct http_req *r)
{
    struct proxy *p = r->w->ctx;
    if (http_path_is(r, "/v1/health") || http_path_is(r, "/metrics")) {
        node_handle(&p->node, r);
        return;
    }
    s3_handle_root(p, r);
}

int main(int argc, char **argv)
{
    static struct proxy p;
    char err[512];
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        conf_usage(argv[0]);
        return 0;
    }
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
    if (p.node.is_primary)
        cluster_init_primary(&p);
    struct http_server_opts o = {
        .host = p.conf.host,
        .port = p.conf.port,
        .workers = p.conf.workers,
        .max_header_bytes = p.conf.max_header_bytes,
        .max_headers = p.conf.max_headers,
        .idle_timeout_s = p.conf.idle_timeout_s,
        .header_timeout_s = p.conf.header_timeout_s,
        .max_connections = p.conf.max_connections,
        .handler = handle,
        .ctx = &p,
        .worker_init = worker_init,
        .worker_fini = worker_fini,
    };
    struct http_server *srv = http_server_start(&o, err, sizeof(err));
    if (!srv) {
        fprintf(stderr, "shoal-proxy: %s\n", err);
        conf_free(&p.conf);
        return 1;
    }
    struct http_server *s3srv = NULL;
    if (p.conf.s3_api_port) {
        struct http_server_opts so = o;
        so.port = p.conf.s3_api_port;
        so.handler = handle_s3_port;
        if (!(s3srv = http_server_start(&so, err, sizeof(err)))) {
            fprintf(stderr, "shoal-proxy: S3 port: %s\n", err);
            http_server_stop(srv);
            conf_free(&p.conf);
            return 1;
        }
        log_info("S3 API at the root of %s:%d", p.conf.host, p.conf.s3_api_port);
    }
    node_start(&p.node);
    log_info("proxy %s%s listening on %s:%d", p.node.id, p.node.is_primary ? " (primary)" : "",
             p.conf.host, p.conf.port);
    int sig = node_wait_signal();
    log_info("signal %d: shutting down", sig);
    if (s3srv)
        http_server_stop(s3srv);
    http_server_stop(srv);
    node_stop(&p.node);
    for (int i = 0; i < p.n_seen; i++)
        free(p.seen[i].id);
    free(p.seen);
    conf_free(&p.conf);
    return 0;
}
