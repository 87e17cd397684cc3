/*
 * buckets: the bucket API and object listing on a proxy.
 *
 * Changes (create, patch, destroy) are made by the primary: the proxies
 * commit the next BMD version (quorum.c), it pushes it to every node and
 * answers only once the pushes are answered, so a client that creates a
 * bucket can use it on any target at once. Another proxy forwards changes
 * to the primary and relays its answer. buckets_change is the one entry
 * for the native API, the S3 front end and remote buckets on first use.
 *
 * Object listing renders objlist's merged page (objlist.c) as the native
 * JSON page, written directly rather than built as jansson objects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buckets.h"
#include "auth.h"
#include "authz.h"
#include "cluster.h"
#include "nodeclient.h"
#include "http.h"
#include "log.h"
#include "node.h"
#include "nodeauth.h"
#include "objname.h"
#include "objlist.h"
#include "backlog.h"
#include "bprof.h"
#include "xform.h"
#include "proxy.h"
#include "quorum.h"
#include "route.h"
#include "s3auth.h"
#include "s3own.h"
#include "summary.h"
#include "util.h"
#include "worker.h"

#define LIST_DEFAULT 1000
#define TOKEN_MAX 2048

/* ---- changes: made by the primary ------------------------------------------ */

struct change {
    struct quorum_change qc;     /* first */
    struct proxy *p;
    struct nodeclient *hc;
    buckets_done_fn done;
    void *arg;
    int status;                  /* the answer's when made */
    json_t *answer;
    enum buckets_op op;
    char provider[16];
    char name[64];
    json_t *props;
};

static void change_free(struct change *c)
{
    json_decref(c->props);
    free(c);
}

/* The primary's answer to a forwarded change: its JSON, or its error's
 * message. */
static void forwarded(void *arg, int status, const char *body, size_t len, const char *err)
{
    struct change *c = arg;
    json_t *j = status && len ? json_loadb(body, len, 0, NULL) : NULL;
    if (status == 0) {
        c->done(c->arg, 0, NULL, err ? err : "?");
    } else if (status >= 300) {
        const char *msg = json_string_value(json_object_get(j, "error"));
        c->done(c->arg, status, NULL, msg ? msg : "the primary proxy refused the change");
    } else {
        c->done(c->arg, status, j, NULL);
        j = NULL;
    }
    json_decref(j);
    change_free(c);
}

static const char *const op_method[] = {"PUT", "PATCH", "DELETE", "PUT", "DELETE", "PUT",
                                        "DELETE"};

static int is_profile(enum buckets_op op)
{
    return op == BUCKETS_PROFILE_PUT || op == BUCKETS_PROFILE_DEL;
}

static int is_transform(enum buckets_op op)
{
    return op == BUCKETS_TRANSFORM_PUT || op == BUCKETS_TRANSFORM_DEL;
}

/* A change of something named in the BMD other than a bucket. */
static int is_named(enum buckets_op op)
{
    return is_profile(op) || is_transform(op);
}

/* Send the change to the primary, signed as this proxy (it authenticated
 * its client). */
static void forward_change(struct change *c)
{
    char *primary = node_primary_url(&c->p->node);
    if (!primary) {
        c->done(c->arg, 503, NULL, "no primary proxy is known yet");
        change_free(c);
        return;
    }
    char *body = c->props ? json_dumps(c->props, JSON_COMPACT) : xstrdup("{}");
    char *url = is_named(c->op)
                    ? node_signed_urlf(&c->p->node, op_method[c->op], primary, "/v1/%s/%s",
                                       is_profile(c->op) ? "backends" : "transforms", c->name)
                    : node_signed_urlf(&c->p->node, op_method[c->op], primary,
                                       "/v1/buckets/%s?provider=%s", c->name, c->provider);
    nodeclient_request(c->hc, op_method[c->op], url, body, strlen(body), NULL, 15000, forwarded, c);
    free(url);
    free(body);
    free(primary);
}

static void change_pushed(void *arg, int failures)
{
    struct change *c = arg;
    if (failures)
        log_warn("bucket change reached all but %d nodes; they catch up by keepalive",
                 failures);
    c->done(c->arg, c->status, c->answer, NULL);
    change_free(c);
}

/* A profile change on the quorum thread (change_edit): 0, or the status
 * of the refusal with qc->err. */
static int profile_edit(struct change *c, struct bmd *b)
{
    struct quorum_change *qc = &c->qc;
    if (c->op == BUCKETS_PROFILE_DEL) {
        const struct bmd_bucket *user = bmd_profile_user(b, c->name);
        if (user) {
            snprintf(qc->err, sizeof(qc->err), "backend profile '%s' is in use by bucket '%s': change "
                     "that bucket's profile first", c->name, user->name);
            return 409;
        }
        if (bmd_profile_del(b, c->name)) {
            snprintf(qc->err, sizeof(qc->err), "backend profile '%s' not found", c->name);
            return 404;
        }
        return 0;
    }
    c->status = bmd_profile(b, c->name) ? 200 : 201;
    bmd_profile_set(b, c->name, c->props);
    if (bmd_buckets_check(b, qc->err, sizeof(qc->err)))   /* its buckets still fit it */
        return 409;
    c->answer = bprof_public(c->name, c->props);
    return 0;
}

/* A transform change on the quorum thread: 0, or 404 with qc->err. */
static int transform_edit(struct change *c, struct bmd *b)
{
    if (c->op == BUCKETS_TRANSFORM_DEL) {
        if (!bmd_transform_del(b, c->name))
            return 0;
        snprintf(c->qc.err, sizeof(c->qc.err), "transform '%s' not found", c->name);
        return 404;
    }
    c->status = bmd_transform(b, c->name) ? 200 : 201;
    bmd_transform_set(b, c->name, c->props);
    c->answer = xform_public(c->name, c->props);
    return 0;
}

/* The change on the quorum thread, against the newest BMD: 0 with b
 * changed, or the status of the refusal. */
static int change_edit(struct quorum_change *qc, struct cmap *m, struct bmd *b)
{
    struct change *c = (struct change *)qc;
    int refused = 500;
    (void)m;
    if (is_named(c->op)) {
        int rc = is_profile(c->op) ? profile_edit(c, b) : transform_edit(c, b);
        qc->changed = rc ? 0 : QUORUM_BMD;
        return rc;
    }
    switch (c->op) {
    case BUCKETS_CREATE:
        refused = bmd_add(b, c->provider, c->name, c->props, (int64_t)time(NULL)) ? 409 : 0;
        break;
    case BUCKETS_PATCH:
        refused = bmd_patch(b, c->provider, c->name, c->props) ? 404 : 0;
        /* each property was checked; together they must agree too */
        if (!refused && bmd_props_check(bmd_find(b, c->provider, c->name)->props, qc->err,
                                        sizeof(qc->err)))
            return 400;
        break;
    case BUCKETS_DESTROY:
        refused = bmd_del(b, c->provider, c->name) ? 404 : 0;
        break;
    default:
        break;
    }
    if (refused) {
        snprintf(qc->err, sizeof(qc->err), refused == 409 ? "bucket '%s' already exists"
                                                          : "bucket '%s' not found", c->name);
        return refused;
    }
    if (c->op != BUCKETS_DESTROY) {
        const struct bmd_bucket *bk = bmd_find(b, c->provider, c->name);
        if (bmd_bucket_check(b, bk, qc->err, sizeof(qc->err)))
            return 400;
        c->answer = bmd_bucket_json(bk);
    }
    qc->changed = QUORUM_BMD;
    return 0;
}

/* Committed (then pushed to every node before the answer, so the bucket
 * is usable on any target at once) or refused. */
static void change_committed(struct quorum_change *qc, int status, const char *err)
{
    struct change *c = (struct change *)qc;
    if (status) {
        json_decref(c->answer);
        c->done(c->arg, status, NULL, err);
        change_free(c);
        return;
    }
    if (c->op == BUCKETS_DESTROY)
        log_info("bucket %s/%s destroyed", c->provider, c->name);
    else if (is_named(c->op))
        log_info("%s %s %s", is_profile(c->op) ? "backend profile" : "transform", c->name,
                 c->op == BUCKETS_PROFILE_DEL || c->op == BUCKETS_TRANSFORM_DEL ? "deleted"
                                                                             : "set");
    struct bmd *b = bmd_current();
    json_t *push = json_pack("{s:o}", "bmd", bmd_to_json(b));
    bmd_unref(b);
    cluster_broadcast(c->p, c->hc, push, change_pushed, c);
}

void buckets_change(struct http_req *r, enum buckets_op op, const char *provider,
                    const char *name, json_t *props, buckets_done_fn done, void *arg)
{
    char err[256];
    if (!bmd_valid_name(name, strlen(name))) {
        json_decref(props);
        done(arg, 400, NULL, is_profile(op)     ? "invalid backend profile name (1..63 of A-Z a-z "
                                                  "0-9 . - _)"
                             : is_transform(op) ? "invalid transform name (1..63 of A-Z a-z "
                                                  "0-9 . - _)"
                                                : "invalid bucket name (1..63 of A-Z a-z 0-9 . - _)");
        return;
    }
    if (op == BUCKETS_PROFILE_PUT && bprof_check(props, err, sizeof(err))) {
        json_decref(props);
        done(arg, 400, NULL, err);
        return;
    }
    if (op == BUCKETS_TRANSFORM_PUT && xform_check(props, err, sizeof(err))) {
        json_decref(props);
        done(arg, 400, NULL, err);
        return;
    }
    if (props && !is_named(op) && op != BUCKETS_DESTROY &&
        bmd_props_check(props, err, sizeof(err))) {
        json_decref(props);
        done(arg, 400, NULL, err);
        return;
    }
    if (op == BUCKETS_PATCH && !props)
        props = json_object();
    static const int ok[] = {201, 200, 204, 201, 204, 201, 204};
    struct change *c = xcalloc(1, sizeof(*c));
    c->p = r->w->ctx;
    c->hc = worker_hc(r);
    c->done = done;
    c->arg = arg;
    c->status = ok[op];
    c->op = op;
    snprintf(c->provider, sizeof(c->provider), "%s", provider);
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->props = props;
    if (!node_primary(&c->p->node)) {
        if (node_check_sig(&c->p->node, r) == 1) {   /* forwarded already: no second hop */
            done(arg, 503, NULL, "this proxy is not the primary");
            change_free(c);
        } else {
            forward_change(c);
        }
        return;
    }
    c->qc.edit = change_edit;
    c->qc.done = change_committed;
    c->qc.q = r->w->q;
    quorum_propose(c->p, &c->qc);
}

struct bucket_req {
    char name[64];
    char provider[16];
};

static int bucket_req_parse(struct http_req *r, const char *rest, size_t len,
                            struct bucket_req *br)
{
    char err[256];
    if (!bmd_valid_name(rest, len)) {
        http_reply_error(r, 400, "invalid bucket name '%.*s' (1..63 of A-Z a-z 0-9 . - _)",
                         (int)(len > 63 ? 63 : len), rest);
        return -1;
    }
    memcpy(br->name, rest, len);
    br->name[len] = '\0';
    if (objname_provider(r, br->provider, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        return -1;
    }
    return 0;
}

void buckets_replied(void *arg, int status, json_t *answer, const char *err)
{
    struct http_req *r = arg;
    if (status == 0 || status == 503)
        http_resp_header_str(r, "Retry-After", "1");
    if (status == 0)
        http_reply_error(r, 503, "primary proxy unreachable: %s", err);
    else if (err)
        http_reply_error(r, status, "%s", err);
    else if (answer)
        http_reply_json(r, status, answer);
    else
        http_reply(r, status, NULL, NULL, 0);
    http_req_unref(r);
}

/* ---- who may (authz.h) -------------------------------------------------------- */

/* May who do op to bucket br (1), or is r answered 403 (0)? A bucket
 * that does not exist passes: the operation answers 404. */
static int gate(struct http_req *r, const struct authz_who *who, const struct bucket_req *br,
                enum authz_op op)
{
    int v = authz_decide_named(br->provider, br->name, who, op);
    if (v == AUTHZ_ALLOW || v < 0)
        return 1;
    http_reply_error(r, 403, "access denied: %s may not %s bucket '%s'",
                     who->access ? who->access : "an unsigned request",
                     op == AUTHZ_LIST ? "list" : "change", br->name);
    return 0;
}

/* Does bucket br name a backend profile now? */
static int profiled(const struct bucket_req *br)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = bmd_find(b, br->provider, br->name);
    int has = bk && json_object_get(bk->props, "profile");
    bmd_unref(b);
    return has;
}

/* Does a change set where a bucket's backend is (a profile's keys would
 * sign for it)? */
static int where_to(const json_t *props)
{
    static const char *const keys[] = {"backend", "endpoint", "region", "addressing"};
    for (size_t i = 0; i < ARRAY_LEN(keys); i++)
        if (json_object_get(props, keys[i]))
            return 1;
    return 0;
}

int buckets_profile_admin(const struct proxy *p, const struct authz_who *who)
{
    return !who->enforced || who->node || who->admin || (!p->conf.n_admin_keys && who->access);
}

/* A change of bucket br with props: a new bucket is its creator's (owner);
 * a change of an existing one is its owner's (or an admin key's); who owns
 * a bucket changes only by an admin key, and its ACL as any ACL (authz.h).
 * 1 to go on, or 0 with r answered. */
static int change_allowed(struct http_req *r, enum buckets_op op, const struct bucket_req *br,
                          json_t *props)
{
    struct proxy *p = r->w->ctx;
    struct authz_who who;
    if (!node_identify(&p->node, r, &who))
        return 0;
    if (!who.enforced || who.node)
        return 1;                /* no keys; or forwarded by a proxy, which decided */
    if (!who.access) {
        http_reply_error(r, 403, "access denied: sign the request to change a bucket");
        return 0;
    }
    if (json_object_get(props, "owner") && !who.admin) {
        http_reply_error(r, 403, "a bucket's owner is set by an admin key only");
        return 0;
    }
    if (json_object_get(props, "profile") && !buckets_profile_admin(p, &who)) {
        http_reply_error(r, 403, "a bucket's backend profile is set by an admin key only");
        return 0;
    }
    if (profiled(br) && where_to(props) && !buckets_profile_admin(p, &who)) {
        http_reply_error(r, 403, "bucket '%s' reaches its backend with a profile's credentials: "
                                 "where it points is changed by an admin key only", br->name);
        return 0;
    }
    if (op == BUCKETS_CREATE) {  /* one that exists is 409, whoever asks */
        if (!json_object_get(props, "owner"))
            json_object_set_new(props, "owner", json_string(who.access));
        return 1;
    }
    return gate(r, &who, br, AUTHZ_OWN) &&
           (!json_object_get(props, "acl") || gate(r, &who, br, AUTHZ_WRITE_ACP));
}

/* PUT, PATCH or DELETE /v1/buckets/BUCKET with its JSON body. */
static void destroy_checked(struct http_req *r, json_t *owed, void *arg);

static void change_body(struct http_req *r, json_t *props)
{
    struct bucket_req br;
    size_t pl = strlen("/v1/buckets/");
    if (bucket_req_parse(r, r->path + pl, r->path_len - pl, &br)) {
        json_decref(props);
        return;
    }
    enum buckets_op op = r->method == HTTP_M_PUT     ? BUCKETS_CREATE
                         : r->method == HTTP_M_PATCH ? BUCKETS_PATCH
                                                     : BUCKETS_DESTROY;
    char force[8];
    if (!change_allowed(r, op, &br, props)) {
        json_decref(props);
        return;
    }
    if (op == BUCKETS_DESTROY) {
        json_decref(props);
        props = NULL;
        if (backlog_write_back(br.provider, br.name) &&
            http_query_get(r, "force", force, sizeof(force)) < 0) {
            backlog_ask(r, br.provider, br.name, destroy_checked, NULL);
            return;
        }
    }
    http_req_ref(r);
    buckets_change(r, op, br.provider, br.name, props, buckets_replied, r);
}

/* A write-back bucket is destroyed only once its backend has everything
 * acknowledged (or with ?force: what it still owes is lost). */
static void destroy_checked(struct http_req *r, json_t *owed, void *arg)
{
    struct bucket_req br;
    size_t pl = strlen("/v1/buckets/");
    (void)arg;
    if (json_integer_value(json_object_get(owed, "objects")) ||
        json_integer_value(json_object_get(owed, "unreached"))) {
        http_reply_json(r, 409, json_pack("{s:s, s:i, s:O}", "error",
                                          "the bucket writes back and its backend does not "
                                          "have everything yet: flush it first (or ?force, "
                                          "and lose what it owes)",
                                          "status", 409, "owed", owed));
    } else if (bucket_req_parse(r, r->path + pl, r->path_len - pl, &br) == 0) {
        http_req_ref(r);
        buckets_change(r, BUCKETS_DESTROY, br.provider, br.name, NULL,
                       buckets_replied, r);
    }
    json_decref(owed);
}

/* ---- remote buckets on first use ---------------------------------------- */

struct ensure {
    struct http_req *r;
    void (*cont)(struct http_req *r);
};

static void ensured(void *arg, int status, json_t *answer, const char *err)
{
    struct ensure *e = arg;
    json_decref(answer);
    if (status == 201 || status == 409)
        e->cont(e->r);
    else if (status == 0)
        http_reply_error(e->r, 503, "primary proxy unreachable: %s", err);
    else
        http_reply_error(e->r, status, "%s", err ? err : "remote bucket not added");
    http_req_unref(e->r);
    free(e);
}

void buckets_ensure(struct http_req *r, const char *provider,
                    const char *name, void (*cont)(struct http_req *r))
{
    struct ensure *e = xcalloc(1, sizeof(*e));
    e->r = r;
    e->cont = cont;
    http_req_ref(r);
    if (buckets_exist(provider, name)) { /* added meanwhile */
        ensured(e, 409, NULL, NULL);
        return;
    }
    log_info("remote bucket %s://%s added on first use", provider, name);
    buckets_change(r, BUCKETS_CREATE, provider, name, NULL, ensured, e);
}

/* ---- listing ------------------------------------------------------------------ */

/* One entry of the native page: what a target holds (name, size, checksum,
 * version, etag, mtime) or what the backend lists (name, size, etag,
 * last_modified), and whether it is cached. */
static void render_ent(struct gbuf *b, const struct objlist_ent *e)
{
    char num[96];
    gbuf_str(b, "{\"name\":");
    gbuf_json_str(b, e->name, e->nlen);
    snprintf(num, sizeof(num), ",\"size\":%llu", (unsigned long long)e->size);
    gbuf_str(b, num);
    if (!e->last_modified) {
        snprintf(num, sizeof(num), ",\"checksum\":\"%016llx\",\"version\":%llu,\"mtime\":%llu",
                 (unsigned long long)e->cksum, (unsigned long long)e->version,
                 (unsigned long long)e->mtime_ns);
        gbuf_str(b, num);
    } else {
        gbuf_str(b, ",\"last_modified\":");
        gbuf_json_str(b, e->last_modified, strlen(e->last_modified));
    }
    gbuf_str(b, ",\"etag\":");
    gbuf_json_str(b, e->etag, e->elen);
    gbuf_str(b, e->cached ? ",\"cached\":true" : ",\"cached\":false");
    gbuf_str(b, e->dirty ? ",\"dirty\":true}" : "}");
}

static void list_done(void *arg, struct objlist_page *pg, int status, const char *err)
{
    struct http_req *r = arg;
    if (!pg) {
        http_reply_error(r, status, status == 503 ? "listing incomplete: %s" : "%s", err);
        http_req_unref(r);
        return;
    }
    struct gbuf b = {0};
    gbuf_str(&b, "{\"objects\":[");
    for (size_t i = 0; i < pg->n; i++) {
        if (i)
            gbuf_add(&b, ",", 1);
        render_ent(&b, &pg->v[i]);
    }
    gbuf_str(&b, "],\"next\":");
    gbuf_json_str(&b, pg->next, strlen(pg->next));
    if (pg->absent) {            /* names on targets that are down are missing */
        gbuf_str(&b, ",\"complete\":false,\"absent_targets\":[");
        for (const char *id = pg->absent; *id;) {
            size_t n = strcspn(id, ",");
            if (id != pg->absent)
                gbuf_add(&b, ",", 1);
            gbuf_json_str(&b, id, n);
            id += n + (id[n] == ',');
        }
        gbuf_add(&b, "]", 1);
    }
    gbuf_str(&b, "}");
    http_reply(r, 200, "application/json", b.p, b.n);
    gbuf_free(&b);
    objlist_page_free(pg);
    http_req_unref(r);
}

static void list_objects(struct http_req *r, const struct bucket_req *br)
{
    r->op = "list";             /* counted apart from the other bucket requests */
    char prefix[OBJNAME_MAX + 1], token[TOKEN_MAX + 1], lim[16];
    int limit = LIST_DEFAULT;
    int pn = http_query_get(r, "prefix", prefix, sizeof(prefix));
    int tn = http_query_get(r, "token", token, sizeof(token));
    if (pn == -2 || tn == -2) {
        http_reply_error(r, 400, "prefix must be at most %d bytes and token %d, well encoded",
                         OBJNAME_MAX, TOKEN_MAX);
        return;
    }
    if (pn < 0)
        prefix[0] = '\0';
    if (tn < 0)
        token[0] = '\0';
    if (http_query_get(r, "limit", lim, sizeof(lim)) >= 0) {
        uint64_t v;
        if (parse_u64(lim, strlen(lim), &v) || v < 1 || v > OBJLIST_MAX) {
            http_reply_error(r, 400, "limit must be 1..%d", OBJLIST_MAX);
            return;
        }
        limit = (int)v;
    }
    char flag[8];
    int cached_only = http_query_get(r, "cached", flag, sizeof(flag)) >= 0 &&
                      strcmp(flag, "false") && strcmp(flag, "0");
    http_req_ref(r);
    objlist_start(r, br->provider, br->name, prefix, token, limit,
                  cached_only ? OBJLIST_CACHED_ONLY : 0, list_done, r);
}

/* ---- dispatch ----------------------------------------------------------------- */

int buckets_exist(const char *provider, const char *name)
{
    struct bmd *b = bmd_current();
    int found = bmd_find(b, provider, name) != NULL;
    bmd_unref(b);
    return found;
}

/* The buckets the caller may list (authz.h); as S3's ListBuckets, not
 * for an unsigned request. */
static void list_buckets(struct http_req *r)
{
    struct proxy *p = r->w->ctx;
    struct authz_who who;
    if (!node_identify(&p->node, r, &who))
        return;
    if (who.enforced && !who.access && !who.node) {
        http_reply_error(r, 403, "access denied: sign the request to list buckets");
        return;
    }
    char provider[16] = "";
    int want = http_query_get(r, "provider", provider, sizeof(provider)) > 0;
    struct bmd *b = bmd_current();
    json_t *arr = json_array();
    for (int i = 0; i < b->n; i++)
        if ((!want || !strcmp(b->b[i].provider, provider)) &&
            authz_allows(b->b[i].props, &who, AUTHZ_LIST))
            json_array_append_new(arr, bmd_bucket_json(&b->b[i]));
    bmd_unref(b);
    http_reply_json(r, 200, json_pack("{s:o}", "buckets", arr));
}

static void bucket_api(struct http_req *r, const char *rest, size_t rl);

static void list_again(struct http_req *r)
{
    static const char pre[] = "/v1/buckets/";
    bucket_api(r, r->path + sizeof(pre) - 1, r->path_len - (sizeof(pre) - 1));
}

/* GET /v1/buckets/BUCKET/objects and /summary; other paths under a
 * bucket are 404. */
static void bucket_sub(struct http_req *r, const struct bucket_req *br, const char *sub,
                       size_t sl)
{
    int objects = sl == 8 && !memcmp(sub, "/objects", 8);
    int summary = sl == 8 && !memcmp(sub, "/summary", 8);
    if ((!objects && !summary) || r->method != HTTP_M_GET) {
        route_not_found(r);
        return;
    }
    int exists = buckets_exist(br->provider, br->name);
    struct authz_who who;
    if (!node_identify(&((struct proxy *)r->w->ctx)->node, r, &who) ||
        !gate(r, &who, br, AUTHZ_LIST))
        return;
    if (!exists && strcmp(br->provider, BMD_PROVIDER_SHOAL) && !r->auth &&
        auth_enabled(&((struct proxy *)r->w->ctx)->node.auth)) {
        http_reply_error(r, 403, "access denied: an unsigned request adds no bucket");
        return;
    }
    if (!exists && strcmp(br->provider, BMD_PROVIDER_SHOAL))
        buckets_ensure(r, br->provider, br->name, list_again);
    else if (!exists)
        http_reply_error(r, 404, "bucket '%s' not found", br->name);
    else if (summary)
        summary_bucket(r, br->provider, br->name);
    else
        list_objects(r, br);
}

/* rest: what follows "/v1/buckets/" ("" for the list of buckets). */
static void bucket_api(struct http_req *r, const char *rest, size_t rl)
{
    if (rl == 0) {
        if (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD)
            list_buckets(r);
        else
            http_reply_error(r, 405, "use GET to list buckets");
        return;
    }
    const char *slash = memchr(rest, '/', rl);
    struct bucket_req br;
    if (bucket_req_parse(r, rest, slash ? (size_t)(slash - rest) : rl, &br))
        return;
    if (slash) {
        bucket_sub(r, &br, slash, rl - (size_t)(slash - rest));
        return;
    }
    switch (r->method) {
    case HTTP_M_GET:
    case HTTP_M_HEAD: {
        struct authz_who who;
        if (!node_identify(&((struct proxy *)r->w->ctx)->node, r, &who) ||
            !gate(r, &who, &br, AUTHZ_LIST))
            return;
        struct bmd *b = bmd_current();
        const struct bmd_bucket *bk = bmd_find(b, br.provider, br.name);
        if (!bk)
            http_reply_error(r, 404, "bucket '%s' not found", br.name);
        else
            http_reply_json(r, 200, bmd_bucket_json(bk));
        bmd_unref(b);
        return;
    }
    case HTTP_M_PUT:
    case HTTP_M_PATCH:
    case HTTP_M_DELETE: {
        struct authz_who who;    /* who asks, before a body is read (change_allowed) */
        if (node_identify(&((struct proxy *)r->w->ctx)->node, r, &who))
            node_read_json(r, change_body);
        return;
    }
    default:
        http_resp_header_str(r, "Allow", "GET, HEAD, PUT, PATCH, DELETE");
        http_reply_error(r, 405, "method %s not allowed on buckets", r->method_name);
        return;
    }
}

/* Who asks is decided per bucket (gate, change_allowed, list_buckets). */
void buckets_route(struct http_req *r, const char *rest, size_t rlen)
{
    bucket_api(r, rest, rlen);
}
