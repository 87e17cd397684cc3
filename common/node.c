/*
 * node: membership from a non-primary node's side.
 *
 * The control thread owns a small event loop with its own hcli. Until the
 * node is in the map it POSTs /v1/cluster/join to the primary every period;
 * once in, it POSTs /v1/cluster/keepalive with the versions it holds. The
 * primary answers a keepalive with any newer map or BMD (so a missed push
 * heals by itself) or 404 when it no longer knows the node, which sends the
 * node back to joining.
 *
 * Persistence: the map and BMD are written to state_dir by the control
 * thread (posted through its loopq) so that no event loop waits for fsync.
 */
#include "node.h"

#include <errno.h>
#include <signal.h>
#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hcli.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "loopq.h"
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

static void metrics_init(struct node *n);

static void mac_init(struct node *n)
{
    unsigned char k[64] = {0}, pad[64];
    const char *key = n->conf->cluster_secret;
    size_t kl = strlen(key);
    if (kl > sizeof(k)) {
        unsigned int dl;
        EVP_Digest(key, kl, k, &dl, EVP_sha256(), NULL);
    } else {
        memcpy(k, key, kl);
    }
    n->mac_in = EVP_MD_CTX_new();
    n->mac_out = EVP_MD_CTX_new();
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    if (!n->mac_in || !n->mac_out || !EVP_DigestInit_ex(n->mac_in, EVP_sha256(), NULL) ||
        !EVP_DigestUpdate(n->mac_in, pad, 64))
        abort();
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    if (!EVP_DigestInit_ex(n->mac_out, EVP_sha256(), NULL) ||
        !EVP_DigestUpdate(n->mac_out, pad, 64))
        abort();
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
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
    if (!auth_enabled(&n->auth))
        log_warn("no auth_keys configured: ANY client that reaches %s:%d can read and "
                 "change every object (anonymous access, for development only)",
                 c->host, c->port);
    if (load_or_make_id(n, err, errlen)) {
        auth_free(&n->auth);
        return -1;
    }
    n->is_primary = role == NODE_PROXY && !c->primary_url[0];
    if (!n->is_primary && !c->primary_url[0]) {
        snprintf(err, errlen, "option 'primary_url' is required for a target");
        return -1;
    }
    mac_init(n);
    metrics_init(n);
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

static void join_done(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct node *n = arg;
    n->join_inflight = 0;
    if (status != 200) {
        log_warn("join %s: %s", n->conf->primary_url,
                 status ? body : (err ? err : "no response"));
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
    if (status == 404) {
        log_warn("primary does not know this node; joining again");
        n->joined = 0;
        return;
    }
    if (status != 200) {
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
    if (n->is_primary) {
        if (n->on_tick)
            n->on_tick(n);
    } else if (!n->join_inflight) {
        struct cmap *m = cmap_current();
        struct bmd *b = bmd_current();
        json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I}", "id", n->id, "role",
                              n->role == NODE_PROXY ? "proxy" : "target", "url",
                              n->conf->public_url, "cmap_version",
                              (json_int_t)(m ? m->snap.version : 0), "bmd_version",
                              (json_int_t)(b ? b->snap.version : 0));
        char *s = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        char *url = node_signed_url(n, "POST", n->conf->primary_url,
                                    n->joined ? "/v1/cluster/keepalive" : "/v1/cluster/join",
                                    NULL);
        n->join_inflight = 1;
        hcli_request(n->ctl_cli, "POST", url, s, strlen(s), NULL,
                     n->conf->keepalive_ms * 2L, n->joined ? ka_done : join_done, n);
        free(url);
        free(s);
        cmap_unref(m);
        bmd_unref(b);
    }
    ctl_schedule(n, n->joined || n->is_primary ? n->conf->keepalive_ms : 300);
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
    n->ctl_cli = hcli_new(n->ctl_base);
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
        hcli_free(n->ctl_cli);
        event_free(n->ctl_timer);
        loopq_free(n->ctl_q);
        event_base_free(n->ctl_base);
        n->ctl_base = NULL;
    }
    free(n->id);
    n->id = NULL;
    EVP_MD_CTX_free(n->mac_in);
    EVP_MD_CTX_free(n->mac_out);
    n->mac_in = n->mac_out = NULL;
    auth_free(&n->auth);
}

/* ---- signatures --------------------------------------------------------- */

void node_sign(const struct node *n, const char *method, const char *target, size_t len,
               char *out)
{
    unsigned char inner[32], mac[32];
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c || !EVP_MD_CTX_copy_ex(c, n->mac_in) || !EVP_DigestUpdate(c, method, strlen(method)) ||
        !EVP_DigestUpdate(c, "\n", 1) || !EVP_DigestUpdate(c, target, len) ||
        !EVP_DigestFinal_ex(c, inner, NULL) || !EVP_MD_CTX_copy_ex(c, n->mac_out) ||
        !EVP_DigestUpdate(c, inner, sizeof(inner)) || !EVP_DigestFinal_ex(c, mac, NULL))
        abort();
    EVP_MD_CTX_free(c);
    hex_encode(mac, 32, out);
}

char *node_signed_url(const struct node *n, const char *method, const char *base,
                      const char *path, const char *query)
{
    int64_t exp = (int64_t)(wall_ns() / 1000000000u) + n->conf->redirect_ttl_s;
    int hq = query && query[0];
    char *target = xasprintf("%s?%s%sshoal_exp=%lld", path, hq ? query : "", hq ? "&" : "",
                             (long long)exp);
    char sig[65];
    node_sign(n, method, target, strlen(target), sig);
    char *url = xasprintf("%s%s&shoal_sig=%s", base, target, sig);
    free(target);
    return url;
}

char *node_signed_urlf(const struct node *n, const char *method, const char *base,
                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *pq;
    if (vasprintf(&pq, fmt, ap) < 0)
        abort();
    va_end(ap);
    char *q = strchr(pq, '?');
    if (q)
        *q++ = '\0';
    char *url = node_signed_url(n, method, base, pq, q);
    free(pq);
    return url;
}

/*
 * The signature is the request target's last parameter and covers all of
 * the target before it, which ends with shoal_exp: so nothing in the path
 * or query can be changed, added or removed, and the expiry is the
 * signer's.
 */
int node_check_sig(const struct node *n, struct http_req *r)
{
    static const char sp[] = "&shoal_sig=", ep[] = "shoal_exp=";
    const char *t = r->target;
    size_t tl = strlen(t);
    const char *s = tl > 64 + sizeof(sp) - 1 ? t + tl - 64 - (sizeof(sp) - 1) : NULL;
    if (!s || memcmp(s, sp, sizeof(sp) - 1))
        return strstr(t, "shoal_sig=") ? -1 : 0;
    /* shoal_exp=DIGITS right before the signature */
    const char *d = s;
    while (d > t && d[-1] >= '0' && d[-1] <= '9')
        d--;
    size_t el = sizeof(ep) - 1;
    int64_t e;
    if (d - t < (ptrdiff_t)(el + 1) || memcmp(d - el, ep, el) || (d[-el - 1] != '?' &&
        d[-el - 1] != '&') || parse_i64(d, (size_t)(s - d), &e))
        return -1;
    if (e < (int64_t)(wall_ns() / 1000000000u))
        return -1;
    /* HEAD is signed as GET: clients may turn one into the other. */
    const char *m = r->method == HTTP_M_HEAD ? "GET" : r->method_name;
    char want[65];
    node_sign(n, m, t, (size_t)(s - t), want);
    return CRYPTO_memcmp(s + sizeof(sp) - 1, want, 64) == 0 ? 1 : -1;
}

int node_authenticate(struct node *n, struct http_req *r)
{
    int sig = node_check_sig(n, r);
    if (sig > 0)
        return 1;
    if (sig < 0) {
        r->err_code = "AccessDenied";
        http_reply_error(r, 403, "bad or expired cluster signature");
        node_count(n, ST_OTHER, 403);
        return 0;
    }
    if (!auth_enabled(&n->auth))
        return 1;
    struct s3auth_result *res = xmalloc(sizeof(*res));
    const char *code = NULL;
    char msg[300];
    int st = auth_client(&n->auth, r, time(NULL), res, &code, msg, sizeof(msg));
    if (st) {
        free(res);
        r->err_code = code;
        http_reply_error(r, st, "%s", msg);
        node_count(n, ST_OTHER, st);
        return 0;
    }
    free(r->auth);
    r->auth = res;
    return 1;
}

/* POST /v1/tokens[?ttl_s=N]: a bearer token for the signer's access key.
 * Only a signature earns one (a token cannot renew itself). */
static void token_issue(struct node *n, struct http_req *r)
{
    if (!auth_enabled(&n->auth)) {
        http_reply_error(r, 400, "no auth_keys are configured: requests need no token");
        return;
    }
    const char *h = http_req_header(r, "Authorization");
    if (h && !strncasecmp(h, "Bearer ", 7)) {
        http_reply_error(r, 403, "a token is issued for a signed request, not for a token");
        return;
    }
    if (!node_authenticate(n, r))
        return;
    const struct s3auth_result *res = r->auth;
    if (!res) {
        http_reply_error(r, 403, "a token is issued to a client's signature");
        return;
    }
    char v[32];
    int64_t ttl = AUTH_TOKEN_TTL_S;
    int ql = http_query_get(r, "ttl_s", v, sizeof(v));
    if (ql >= 0 && (parse_i64(v, (size_t)ql, &ttl) || ttl < 1 || ttl > AUTH_TOKEN_MAX_TTL_S)) {
        http_reply_error(r, 400, "ttl_s must be 1..%d seconds", AUTH_TOKEN_MAX_TTL_S);
        return;
    }
    int64_t exp = (int64_t)(wall_ns() / 1000000000u) + ttl;
    char *tok = auth_token_new(&n->auth, res->access, exp);
    http_reply_json(r, 200, json_pack("{s:s, s:s, s:I}", "token", tok, "access_key", res->access,
                                      "expires", (json_int_t)exp));
    free(tok);
}

/* ---- common endpoints --------------------------------------------------- */

/* The node's metrics, in the process's registry (common/metrics.c). */
static const char *const op_names[ST_N] = {"get", "head", "put", "delete", "list", "other"};

static int64_t map_version(void *arg)
{
    (void)arg;
    struct cmap *m = cmap_current();
    int64_t v = m ? (int64_t)m->snap.version : 0;
    cmap_unref(m);
    return v;
}

static int64_t redirects(void *arg)
{
    struct node *n = arg;
    return (int64_t)__atomic_load_n(&n->st.redirects, __ATOMIC_RELAXED);
}

static void metrics_init(struct node *n)
{
    static const double lat_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                        0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                        1,      2.5,     5,      10};
    struct metric_family *req = metrics_family(
        METRIC_COUNTER, "shoal_requests_total", "Requests answered, by operation.", "op",
        NULL, 0);
    for (int i = 0; i < ST_N; i++)
        n->met.req[i] = metrics_series(req, op_names[i]);
    struct metric_family *err = metrics_family(
        METRIC_COUNTER, "shoal_errors_total",
        "Requests answered with an error, by class (4xx: the client's, 5xx: Shoal's or a backend's).",
        "class", NULL, 0);
    n->met.err4 = metrics_series(err, "4xx");
    n->met.err5 = metrics_series(err, "5xx");
    n->met.in = metrics_series(metrics_family(METRIC_COUNTER, "shoal_bytes_in_total",
                                              "Object bytes received from clients.", "", NULL,
                                              0),
                               "");
    n->met.out = metrics_series(metrics_family(METRIC_COUNTER, "shoal_bytes_out_total",
                                               "Object bytes sent to clients.", "", NULL, 0),
                                "");
    n->met.lat = metrics_family(METRIC_HISTOGRAM, "shoal_request_duration_seconds",
                                "Time from a request's head to its whole response queued, by "
                                "operation.",
                                "op", lat_bounds, (int)ARRAY_LEN(lat_bounds));
    metrics_fn(METRIC_COUNTER, "shoal_redirects_total",
               "Requests answered with a redirect to the owning target.", redirects, n);
    metrics_fn(METRIC_GAUGE, "shoal_cluster_map_version", "Version of the installed cluster map.",
               map_version, NULL);
}

void node_count(struct node *n, enum stat_op op, int status)
{
    metrics_add(n->met.req[op], 1);
    if (status >= 500)
        metrics_add(n->met.err5, 1);
    else if (status >= 400)
        metrics_add(n->met.err4, 1);
}

void node_count_bytes(struct node *n, uint64_t in, uint64_t out)
{
    metrics_add(n->met.in, in);
    metrics_add(n->met.out, out);
}

void node_on_done(struct http_req *r)
{
    struct node *n = r->w->ctx;
    struct metric_series *s = metrics_series(n->met.lat, r->op ? r->op : "other");
    metrics_observe(s, (double)(mono_ns() - r->t_start_ns) / 1e9);
}

static void metrics(struct node *n, struct http_req *r)
{
    char labels[256];
    snprintf(labels, sizeof(labels), "node=\"%s\",role=\"%s\"", n->id,
             n->role == NODE_PROXY ? "proxy" : "target");
    struct gbuf b = {0};
    metrics_render(&b, labels);
    http_reply(r, 200, "text/plain; version=0.0.4", b.p, b.n);
    gbuf_free(&b);
}

/* ---- request bodies read whole ------------------------------------------ */

struct wbody {
    struct gbuf body;
    size_t max;
    void (*done)(struct http_req *r, void *arg, char *body, size_t len);
    void (*gone)(void *arg);
    void *arg;
    void (*done_json)(struct http_req *r, json_t *j);
};

static int wbody_add(struct http_req *r, const char *p, size_t len)
{
    struct wbody *wb = r->data;
    if (!wb)
        return 0; /* answered already; the rest is dropped */
    if (wb->body.n + len > wb->max) {
        size_t max = wb->max;
        if (wb->gone)
            wb->gone(wb->arg);
        gbuf_free(&wb->body);
        free(wb);
        r->data = NULL;
        r->on_abort = NULL;
        r->on_end = NULL;
        http_resp_close(r);
        r->err_code = "EntityTooLarge";
        http_reply_error(r, 413, "request body over %zu bytes", max);
        return 0;
    }
    gbuf_add(&wb->body, p, len);
    return 0;
}

static void wbody_abort(struct http_req *r)
{
    struct wbody *wb = r->data;
    if (wb->gone)
        wb->gone(wb->arg);
    gbuf_free(&wb->body);
    free(wb);
    r->data = NULL;
}

static void wbody_end(struct http_req *r)
{
    struct wbody *wb = r->data;
    r->data = NULL;
    r->on_abort = NULL;
    r->on_body = NULL;
    size_t n = wb->body.n;
    char *body = gbuf_take(&wb->body);
    if (wb->done) {
        wb->done(r, wb->arg, body, n);
    } else {
        json_error_t je;
        json_t *j = n ? json_loadb(body, n, 0, &je) : json_object();
        if (!j)
            http_reply_error(r, 400, "malformed JSON body: %s (line %d)", je.text, je.line);
        else
            wb->done_json(r, j);
    }
    free(body);
    free(wb);
}

static struct wbody *read_body(struct http_req *r, size_t max)
{
    struct wbody *wb = xcalloc(1, sizeof(*wb));
    wb->max = max;
    r->data = wb;
    r->on_body = wbody_add;
    r->on_end = wbody_end;
    r->on_abort = wbody_abort;
    return wb;
}

void node_read_body(struct http_req *r, size_t max,
                    void (*done)(struct http_req *r, void *arg, char *body, size_t len),
                    void (*gone)(void *arg), void *arg)
{
    struct wbody *wb = read_body(r, max);
    wb->done = done;
    wb->gone = gone;
    wb->arg = arg;
}

#define JSON_BODY_MAX (16u << 20)

void node_read_json(struct http_req *r, void (*done)(struct http_req *r, json_t *j))
{
    read_body(r, JSON_BODY_MAX)->done_json = done;
}

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
        struct cmap *m = cmap_current();
        int ok = m && cmap_find(m, n->id);
        cmap_unref(m);
        if (ok)
            http_reply_json(r, 200, json_pack("{s:s, s:s}", "status", "ok", "id", n->id));
        else
            http_reply_error(r, 503, "node %s is not in a cluster map yet", n->id);
        return 1;
    }
    if (http_path_is(r, "/v1/cluster") && (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD)) {
        struct cmap *m = cmap_current();
        if (!m)
            http_reply_error(r, 503, "no cluster map yet");
        else
            http_reply_json(r, 200, cmap_to_json(m));
        cmap_unref(m);
        return 1;
    }
    if (http_path_is(r, "/v1/internal/push") && r->method == HTTP_M_PUT) {
        if (node_check_sig(n, r) != 1) {
            http_reply_error(r, 403, "cluster pushes must be signed by the primary");
            return 1;
        }
        node_read_json(r, push_done);
        return 1;
    }
    if (http_path_is(r, "/metrics")) {
        metrics(n, r);
        return 1;
    }
    if (http_path_is(r, "/v1/tokens") && r->method == HTTP_M_POST) {
        token_issue(n, r);
        return 1;
    }
    return 0;
}

char *node_obj_key(const char *provider, const char *bucket, const char *name, size_t *len)
{
    size_t pl = strlen(provider), bl = strlen(bucket), nl = strlen(name);
    char *k = xmalloc(pl + bl + nl + 3);
    memcpy(k, provider, pl);
    k[pl] = '/';
    memcpy(k + pl + 1, bucket, bl);
    k[pl + 1 + bl] = '/';
    memcpy(k + pl + bl + 2, name, nl + 1);
    *len = pl + bl + nl + 2;
    return k;
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
