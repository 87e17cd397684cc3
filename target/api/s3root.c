/*
 * s3root: S3 at the root ("/BUCKET/KEY").
 *
 * s3cmd, redirected by a proxy in s3_redirect mode, follows the
 * TemporaryRedirect's <Endpoint> and re-sends the request here, signed
 * anew. It is verified with the cluster's S3 keys (SigV4 or SigV2, header
 * or presigned: auth_client), or taken as unsigned when it carries no
 * credential at all, and served like a routed S3 request, by the one rule
 * of who may (authz.h); a key
 * another target owns is redirected there the same way (obj.c). The
 * verified credentials stay with the request, for the chunk signatures of
 * a streaming upload. (The body's signed SHA-256, if any, is not checked
 * here; Content-MD5 is.) A target serves objects only: a request for a
 * bucket or for the service is refused with 405.
 *
 * Thread: the request's worker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "bmd.h"
#include "http.h"
#include "obj.h"
#include "s3.h"
#include "s3auth.h"
#include "s3cors.h"
#include "s3root.h"
#include "target.h"
#include "util.h"

/* The bucket r's path names ("/BUCKET[/KEY]") into name, or "". */
static void root_bucket(const struct http_req *r, char *name, size_t n)
{
    const char *b = r->path_len > 1 ? r->path + 1 : "";
    size_t bl = strcspn(b, "/");
    snprintf(name, n, "%.*s", bl < n ? (int)bl : 0, b);
}

void s3root_handle(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    (void)rest;
    (void)rlen;
    char bucket[64];
    s3_mode(r);
    root_bucket(r, bucket, sizeof(bucket));
    if (r->method == HTTP_M_OPTIONS) {   /* a CORS preflight */
        s3cors_preflight(r, bucket[0] ? bucket : NULL);
        return;
    }
    s3cors_actual(r, bucket[0] ? bucket : NULL);
    if (r->path_len < 2 || !memchr(r->path + 1, '/', r->path_len - 1)) {
        s3_fail(r, S3E_METHOD_NOT_ALLOWED, "a target serves objects only; ask a proxy");
        return;
    }
    if (!auth_presented(r)) {    /* unsigned: a read of a public object (authz.h) */
        obj_handle(r, r->path + 1, r->path_len - 1);
        return;
    }
    struct s3auth_result *res = xmalloc(sizeof(*res));
    enum s3e code;
    char msg[300];
    int st = auth_client(&t->node.auth, r, time(NULL), res, &code, msg, sizeof(msg));
    if (st) {
        free(res);
        s3_fail(r, code, "%s", msg);
        return;
    }
    r->auth = res; /* for the chunk signatures of a streaming upload */
    obj_handle(r, r->path + 1, r->path_len - 1);
}
