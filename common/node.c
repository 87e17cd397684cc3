/*
 * node: what every daemon is as a cluster member (see node.h): its
 * identity, the persisted map and BMD, the control thread, and the
 * routing of the endpoints every node serves. Signatures (nodesig.c),
 * the request gate and tokens (nodeauth.c), metrics (nodemetrics.c) and
 * whole-body reading (httpbody.c) live in files of their own.
 *
 * Membership, from a non-primary node's side: the control thread owns a
 * small event loop with its own nodeclient (common/nodeclient.h). Until the node is in the map it
 * POSTs /v1/cluster/join to the primary every period; once in, it POSTs
 * /v1/cluster/keepalive with the versions it holds. The primary answers a
 * keepalive with any newer map or BMD (so a missed push heals by itself)
 * or 404 when it no longer knows the node, which sends the node back to
 * joining.
 *
 * Persistence: the map and BMD are written to state_dir by the control
 * thread (posted through its loopq) so that no event loop waits for fsync.
 */
#include "node.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nodeclient.h"
#include "hlc.h"
#include "http.h"
#include "log.h"
#include "loopq.h"
#include "objname.h"
#include "s3user.h"
#include "tls.h"
#include "util.h"

/* ---- identity and persistence ----------------------------------------- */

static char *state_path(const struct node *n, const char *name)
{
    return xasprintf("%s/%s", n->conf->state_dir, name);
}

static int load_or_make_id(struct node *n, char *err, size_t errlen)
{
    char *path = state_path(n, "node.id");
    int rc = 0;
    if (n->conf->id[0])
        n->id = xstrdup(n->conf->id);
    else if (!(n->id = id_file_load(path, n->role == NODE_PROXY ? "p" : "t", 4, &rc))) {
        snprintf(err, errlen, "cannot persist node id in %s: %s", n->conf->state_dir,
                 strerror(-rc));
        free(path);
        return -1;
    }
    for (const char *p = n->id; *p; p++) {
        if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
            !(*p >= '0' && *p <= '9') && *p != '-' && *p != '_') {
            snprintf(err, errlen, "node id '%s' may hold only letters, digits, '-' and '_'",
                     n->id);
            free(path);
            return -1;
        }
    }
    if (!n->id[0] || strlen(n->id) > 64) {
        snprintf(err, errlen, "node id must be 1..64 characters");
        free(path);
        return -1;
    }
    hlc_init(n->id);             /* the tag of the versions this node writes */
    char line[80];
    int len = snprintf(line, sizeof(line), "%s\n", n->id);
    rc = file_write_atomic(path, line, (size_t)len, 1);
    free(path);
    if (rc) {
        snprintf(err, errlen, "cannot persist node id in %s: %s", n->conf->state_dir,
                 strerror(-rc));
        return -1;
    }
    return 0;
}

struct persist {
    char *path;
    char *text;
};

static void persist_run(void *arg)
{
    struct persist *p = arg;
    int rc = file_write_atomic(p->path, p->text, strlen(p->text), 1);
    if (rc)
        log_error("cannot write %s: %s", p->path, strerror(-rc));
    free(p->path);
    free(p->text);
    free(p);
}

static void persist(struct node *n, const char *name, json_t *j)
{
    struct persist *p = xmalloc(sizeof(*p));
    p->path = state_path(n, name);
    p->text = json_dumps(j, JSON_INDENT(1));
    json_decref(j);
    if (n->ctl_q)
        loopq_post(n->ctl_q, persist_run, p);
    else
        persist_run(p); /* before the control thread exists: start-up */
}

int node_set_cmap(struct node *n, struct cmap *m)
{
    struct cmap *old = cmap_current();
    json_t *j = cmap_to_json(m);
    int64_t v = m->snap.version;
    snap_ref(&m->snap);
    if (!cmap_install(m, 0)) {
        cmap_unref(m);
        cmap_unref(old);
        json_decref(j);
        return 0;
    }
    log_info("cluster map v%lld installed", (long long)v);
    persist(n, "cmap.json", j);
    if (n->on_cmap)
        n->on_cmap(n, old, m);
    cmap_unref(m);
    cmap_unref(old);
    return 1;
}

int node_set_bmd(struct node *n, struct bmd *b)
{
    struct bmd *old = bmd_current();
    json_t *j = bmd_to_json(b);
    int64_t v = b->snap.version;
    snap_ref(&b->snap);
    if (!bmd_install(b, 0)) {
        bmd_unref(b);
        bmd_unref(old);
        json_decref(j);
        return 0;
    }
    log_info("bucket metadata v%lld installed", (long long)v);
    persist(n, "bmd.json", j);
    if (n->on_bmd)
        n->on_bmd(n, old, b);
    bmd_unref(b);
    bmd_unref(old);
    return 1;
}

int node_accept_json(struct node *n, const json_t *j, char *err, size_t errlen)
{
    json_t *jm = json_object_get(j, "cmap");
    json_t *jb = json_object_get(j, "bmd");
    if (jm && !json_is_null(jm)) {
        struct cmap *m = cmap_from_json(jm, err, errlen);
        if (!m)
            return -1;
        node_set_cmap(n, m);
    }
    if (jb && !json_is_null(jb)) {
        struct bmd *b = bmd_from_json(jb, err, errlen);
        if (!b)
            return -1;
        node_set_bmd(n, b);
    }
    return 0;
}

static void load_persisted(struct node *n)
{
    char *path = state_path(n, "cmap.json");
    json_t *j = json_load_file(path, 0, NULL);
    char err[256];
    if (j) {
        struct cmap *m = cmap_from_json(j, err, sizeof(err));
        if (m)
            cmap_install(m, 1);
        else
            log_warn("ignoring %s: %s", path, err);
        json_decref(j);
    }
    free(path);
    path = state_path(n, "bmd.json");
    j = json_load_file(path, 0, NULL);
    if (j) {
        struct bmd *b = bmd_from_json(j, err, sizeof(err));
        if (b)
            bmd_install(b, 1);
        else
            log_warn("ignoring %s: %s", path, err);
        json_decref(j);
    }
    free(path);
}

/* The server context when the node serves HTTPS, the client context when
 * it may call https:// URLs (TLS on, or a CA given). */
static int tls_init(struct node *n, char *err, size_t errlen)
{
    const struct conf *c = n->conf;
    if (c->tls_cert_file[0] &&
        !(n->tls = tls_server_ctx(c->tls_cert_file, c->tls_key_file, err, errlen)))
        return -1;
    if (c->tls_cert_file[0] || c->tls_ca_file[0]) {
        SSL_CTX *client = tls_client_ctx(c->tls_ca_file, err, errlen);
        if (!client)
            return -1;
        tls_set_client(client);
    }
    if (n->tls)
        log_info("HTTPS on %s:%d (%s)%s", c->host, c->port, tls_kernel_why(),
                 c->plain_port ? "; plain HTTP on plain_port" : "");
    return 0;
}

int node_plain_server(struct node *n, const struct http_server_opts *o, struct http_server **out,
                      char *err, size_t errlen)
{
    *out = NULL;
    if (!n->tls || !n->conf->plain_port)
        return 0;
    struct http_server_opts po = *o;
    po.port = n->conf->plain_port;
    po.tls = NULL;
    if (!(*out = http_server_start(&po, err, errlen)))
        return -1;
    log_info("plain HTTP on %s:%d", n->conf->host, n->conf->plain_port);
    node_metrics_server(*out);
    return 0;
}

int node_init(struct node *n, struct conf *c, enum node_role role, char *err, size_t errlen)
{
    memset(n, 0, sizeof(*n));
    n->conf = c;
    n->role = role;
    if (!c->state_dir[0]) {
        snprintf(err, errlen, "option 'state_dir' is required");
        return -1;
    }
    int rc = mkdir_p(c->state_dir, 0755);
    if (rc) {
        snprintf(err, errlen, "cannot create state_dir %s: %s", c->state_dir, strerror(-rc));
        return -1;
    }
    if (!c->cluster_secret || strlen(c->cluster_secret) < CONF_SECRET_MIN) {
        snprintf(err, errlen,
                 "a cluster secret is required (the same on every node): create one with "
                 "'(umask 077; openssl rand -hex 32 > cluster.secret)' and pass "
                 "--cluster_secret_file cluster.secret");
        return -1;
    }
    if (auth_init(&n->auth, c, err, errlen))
        return -1;
    if (s3user_init(c->users, c->n_users, c->auth_keys, c->n_auth_keys, err, errlen)) {
        auth_free(&n->auth);
        return -1;
    }
    if (!auth_enabled(&n->auth))
        log_warn("no auth_keys configured: ANY client that reaches %s:%d can read and "
                 "change every object (anonymous access, for development only)",
                 c->host, c->port);
    if (c->auth_keys_argv)
        log_warn("client secrets were given on the command line (--auth_keys), which every "
                 "user of this host can read (ps, /proc): put them in a file only this "
                 "daemon's user reads and pass --auth_keys_file");
    if (load_or_make_id(n, err, errlen)) {
        auth_free(&n->auth);
        return -1;
    }
    n->founder = role == NODE_PROXY && !c->primary_url[0];
    if (role == NODE_TARGET && !c->primary_url[0]) {
        snprintf(err, errlen, "option 'primary_url' is required for a target");
        return -1;
    }
    if (tls_init(n, err, errlen))
        return -1;
    node_sig_init(n);
    node_metrics_init(n);
    load_persisted(n);
    struct bmd *b = bmd_current();
    if (b)
        bmd_unref(b);
    else
        bmd_install(bmd_new(0), 1);
    return 0;
}

/* ---- control thread ----------------------------------------------------- */

static void ctl_schedule(struct node *n, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(n->ctl_timer, &tv);
}

/* The i-th URL of primary_url (a comma-separated list of proxies) that
 * is not this node's own, or NULL. */
static char *seed_url(const struct node *n, int i)
{
    for (const char *s = n->conf->primary_url; *s;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len && (strncmp(s, n->conf->public_url, len) || n->conf->public_url[len]) &&
            i-- == 0)
            return xstrndup(s, len);
        if (!e)
            break;
        s = e + 1;
    }
    return NULL;
}

char *node_primary_url(struct node *n)
{
    struct cmap *m = cmap_current();
    const struct cmap_node *pr = m ? cmap_find(m, m->primary) : NULL;
    char *url = pr && strcmp(pr->id, n->id) ? xstrdup(pr->url) : seed_url(n, 0);
    cmap_unref(m);
    return url;
}

void node_not_primary(struct node *n, struct http_req *r)
{
    struct cmap *m = cmap_current();
    char *url = node_primary_url(n);
    json_t *j = json_pack("{s:s, s:i}", "error", "this proxy is not the primary", "status", 503);
    if (url)
        json_object_set_new(j, "primary_url", json_string(url));
    if (m)
        json_object_set_new(j, "cmap", cmap_to_json(m));
    http_resp_header_str(r, "Retry-After", "1");
    http_reply_json(r, 503, j);
    free(url);
    cmap_unref(m);
}

/* Where a member sends its join or keepalive: the primary the map names;
 * once that has been silent twice, the map's other proxies and those of
 * primary_url in turn (one that is not the primary answers with its map,
 * which names the primary). */
static char *contact_url(struct node *n)
{
    if (n->ka_fails < 2) {
        char *url = node_primary_url(n);
        if (url)
            return url;
    }
    struct cmap *m = cmap_current();
    char *cand[96];
    int k = 0;
    for (int i = 0; m && i < m->n && k < 64; i++)
        if (m->nodes[i].role == NODE_PROXY && strcmp(m->nodes[i].id, n->id))
            cand[k++] = xstrdup(m->nodes[i].url);
    for (int i = 0; k < 96 && (cand[k] = seed_url(n, i)); i++)
        k++;
    cmap_unref(m);
    char *url = NULL;
    for (int i = 0; i < k; i++)
        if (i == (int)(n->contact % (unsigned)k))
            url = cand[i];
        else
            free(cand[i]);
    n->contact++;
    return url;
}

/* A proxy that is not the primary answers 503 with its map: take it. */
static void take_redirect(struct node *n, int status, const char *body, size_t len)
{
    if (status != 503 || !len)
        return;
    json_t *j = json_loadb(body, len, 0, NULL);
    char e[256];
    json_t *jm = json_object_get(j, "cmap");
    if (jm)
        json_object_del(j, "bmd");       /* only the map, from a mere member */
    struct cmap *before = cmap_current();
    if (jm && node_accept_json(n, j, e, sizeof(e)))
        log_warn("a proxy's map: %s", e);
    struct cmap *after = cmap_current();
    if (after != before)
        n->ka_fails = 0;         /* a newer map: ask the primary it names */
    cmap_unref(before);
    cmap_unref(after);
    json_decref(j);
}

static void join_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct node *n = arg;
    n->join_inflight = 0;
    n->ka_fails = status == 200 ? 0 : n->ka_fails + 1;
    if (status != 200) {
        take_redirect(n, status, body, len);
        if (status != 503)
            log_warn("join: %s", status ? body : (err ? err : "no response"));
        return;
    }
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    char e[256];
    if (!j || node_accept_json(n, j, e, sizeof(e))) {
        log_warn("join: bad answer from primary: %s", j ? e : je.text);
        json_decref(j);
        return;
    }
    json_decref(j);
    n->joined = 1;
    log_info("joined cluster as %s", n->id);
}

static void ka_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct node *n = arg;
    n->join_inflight = 0;
    n->ka_fails = status == 200 || status == 404 ? 0 : n->ka_fails + 1;
    if (status == 404) {
        log_warn("primary does not know this node; joining again");
        n->joined = 0;
        return;
    }
    if (status != 200) {
        take_redirect(n, status, body, len);
        if (status != 503)
            log_warn("keepalive: %s", status ? body : (err ? err : "no response"));
        return;
    }
    json_t *j = json_loadb(body, len, 0, NULL);
    char e[256];
    if (j && node_accept_json(n, j, e, sizeof(e)))
        log_warn("keepalive: bad answer: %s", e);
    json_decref(j);
    n->last_ka_ok = mono_ms();
}

static void ctl_tick(evutil_socket_t fd, short what, void *arg)
{
    struct node *n = arg;
    (void)fd;
    (void)what;
    char *contact = NULL;
    if (n->on_tick)
        n->on_tick(n);           /* a proxy: its own work as primary, or none */
    if (!node_primary(n) && !n->join_inflight && (contact = contact_url(n))) {
        struct cmap *m = cmap_current();
        struct bmd *b = bmd_current();
        json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I}", "id", n->id, "role",
                              n->role == NODE_PROXY ? "proxy" : "target", "url",
                              n->conf->public_url, "cmap_version",
                              (json_int_t)(m ? m->snap.version : 0), "bmd_version",
                              (json_int_t)(b ? b->snap.version : 0));
        if (n->raft_addr)
            json_object_set_new(j, "raft", json_string(n->raft_addr));
        char *s = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        char *url = node_signed_url(n, "POST", contact,
                                    n->joined ? "/v1/cluster/keepalive" : "/v1/cluster/join",
                                    NULL);
        n->join_inflight = 1;
        nodeclient_request(n->ctl_cli, "POST", url, s, strlen(s), NULL,
                     n->conf->keepalive_ms * 2L, n->joined ? ka_done : join_done, n);
        free(url);
        free(s);
        cmap_unref(m);
        bmd_unref(b);
    }
    free(contact);
    ctl_schedule(n, n->joined || node_primary(n) ? n->conf->keepalive_ms : 300);
}

static void *ctl_main(void *arg)
{
    struct node *n = arg;
    event_base_dispatch(n->ctl_base);
    return NULL;
}

void node_start(struct node *n)
{
    n->ctl_base = event_base_new();
    n->ctl_cli = nodeclient_new(n->ctl_base);
    n->ctl_q = loopq_new(n->ctl_base);
    n->ctl_timer = evtimer_new(n->ctl_base, ctl_tick, n);
    ctl_schedule(n, 0);
    if (pthread_create(&n->ctl_thread, NULL, ctl_main, n))
        abort();
}

void node_stop(struct node *n)
{
    if (n->ctl_base) {
        event_base_loopbreak(n->ctl_base);
        pthread_join(n->ctl_thread, NULL);
        nodeclient_free(n->ctl_cli);
        event_free(n->ctl_timer);
        loopq_free(n->ctl_q);
        event_base_free(n->ctl_base);
        n->ctl_base = NULL;
    }
    free(n->id);
    n->id = NULL;
    free(n->raft_addr);
    n->raft_addr = NULL;
    node_sig_free(n);
    auth_free(&n->auth);
    s3user_free();
}

/* ---- endpoints every node serves ---------------------------------------- */

static void push_done(struct http_req *r, json_t *j)
{
    struct node *n = r->w->ctx;
    char err[256];
    if (node_accept_json(n, j, err, sizeof(err)))
        http_reply_error(r, 400, "%s", err);
    else
        http_reply(r, 204, NULL, NULL, 0);
    json_decref(j);
}

int node_handle(struct node *n, struct http_req *r)
{
    if (http_path_is(r, "/v1/health")) {
        r->op = "health";
        struct cmap *m = cmap_current();
        int in = m && cmap_find(m, n->id);
        cmap_unref(m);
        if (!in)
            http_reply_error(r, 503, "node %s is not in a cluster map yet", n->id);
        else if (n->ready && !n->ready(n))
            http_reply_error(r, 503, "node %s knows no primary yet", n->id);
        else
            http_reply_json(r, 200, json_pack("{s:s, s:s}", "status", "ok", "id", n->id));
        return 1;
    }
    if (http_path_is(r, "/v1/cluster") && (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD)) {
        r->op = "cluster";
        struct cmap *m = cmap_current();
        if (!m)
            http_reply_error(r, 503, "no cluster map yet");
        else
            http_reply_json(r, 200, cmap_to_json(m));
        cmap_unref(m);
        return 1;
    }
    if (http_path_is(r, "/v1/internal/push") && r->method == HTTP_M_PUT) {
        r->op = "push";
        if (node_check_sig(n, r) != 1) {
            http_reply_error(r, 403, "cluster pushes must be signed by the primary");
            return 1;
        }
        node_read_json(r, push_done);
        return 1;
    }
    if (http_path_is(r, "/metrics")) {
        r->op = "metrics";
        node_metrics_reply(n, r);
        return 1;
    }
    if (http_path_is(r, "/v1/tokens") && r->method == HTTP_M_POST) {
        r->op = "tokens";
        node_token_issue(n, r);
        return 1;
    }
    return 0;
}

char *node_obj_key(const char *provider, const char *bucket, const char *name, size_t *len)
{
    size_t pl = strlen(provider), bl = strlen(bucket);
    size_t nl = objname_base_len(name, strlen(name));   /* a version goes with its name */
    char *k = xmalloc(pl + bl + nl + 3);
    memcpy(k, provider, pl);
    k[pl] = '/';
    memcpy(k + pl + 1, bucket, bl);
    k[pl + 1 + bl] = '/';
    memcpy(k + pl + bl + 2, name, nl);
    k[pl + bl + 2 + nl] = '\0';
    *len = pl + bl + nl + 2;
    return k;
}

void node_tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

void node_block_signals(void)
{
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int node_wait_signal(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    while (sigwait(&set, &sig) != 0)
        ;
    return sig;
}
