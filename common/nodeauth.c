/*
 * nodeauth: the node's request gate and POST /v1/tokens (see nodeauth.h).
 * The credentials themselves, and the token format, are auth.c's; this
 * file decides what a node answers.
 *
 * Threads: the request's loop thread.
 */
#include "nodeauth.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "authz.h"
#include "err.h"
#include "http.h"
#include "node.h"
#include "util.h"

/* r's client credential, once no cluster signature came (nodeauth.h): 1
 * with r->auth set (or no keys configured), or 0 with r answered. */
static int client_credential(struct node *n, struct http_req *r)
{
    if (!auth_enabled(&n->auth))
        return 1;
    if (auth_is_v2(r)) {
        err_reply(r, S3E_ACCESS_DENIED, "SigV2 leaves query parameters unsigned: the native API "
                                        "takes SigV4 (header or presigned) or a bearer token");
        return 0;
    }
    struct s3auth_result *res = xmalloc(sizeof(*res));
    enum s3e code;
    char msg[300];
    int st = auth_client(&n->auth, r, time(NULL), res, &code, msg, sizeof(msg));
    if (st) {
        free(res);
        err_reply(r, code, "%s", msg);
        return 0;
    }
    free(r->auth);
    r->auth = res;
    return 1;
}

/* A cluster signature's verdict (node_check_sig): 1 a node's, 0 none (r
 * goes on), or -1 with r answered 403 (expired or tampered with). */
static int node_sig(struct node *n, struct http_req *r)
{
    int sig = node_check_sig(n, r);
    if (sig < 0)
        err_reply(r, S3E_ACCESS_DENIED, "bad or expired cluster signature");
    return sig;
}

int node_authenticate(struct node *n, struct http_req *r)
{
    int sig = node_sig(n, r);
    return sig > 0 || (sig == 0 && client_credential(n, r));
}

int node_identify(struct node *n, struct http_req *r, struct authz_who *who)
{
    int enforced = auth_enabled(&n->auth);
    int sig = node_sig(n, r);    /* expired or tampered with: 403, never anonymous */
    if (sig > 0) {
        *who = (struct authz_who){NULL, 1, enforced, 1};
        return 1;
    }
    if (sig < 0)
        return 0;
    if (enforced && !auth_presented(r)) {
        *who = (struct authz_who){NULL, 0, 1, 0};
        return 1;
    }
    if (!r->auth && !client_credential(n, r))
        return 0;
    authz_who_set(who, n->conf, enforced, r->auth);
    return 1;
}

/* POST /v1/tokens[?ttl_s=N]: a bearer token for the signer's access key.
 * Only a signature earns one (a token cannot renew itself). */
void node_token_issue(struct node *n, struct http_req *r)
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
