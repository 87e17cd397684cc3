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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "bmd.h"
#include "http.h"
#include "obj.h"
#include "s3.h"
#include "s3auth.h"
#include "s3root.h"
#include "target.h"
#include "util.h"

/* Does the bucket r's path names ("/BUCKET[/KEY]") exist? */
static int root_bucket_exists(const struct http_req *r)
{
    const char *b = r->path_len > 1 ? r->path + 1 : "";
    size_t bl = strcspn(b, "/");
    char name[64];
    if (!bl || bl >= sizeof(name))
        return 0;
    memcpy(name, b, bl);
    name[bl] = '\0';
    struct bmd *m = bmd_current();
    int is = m && bmd_find(m, BMD_PROVIDER_SHOAL, name) != NULL;
    bmd_unref(m);
    return is;
}

void s3root_handle(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    (void)rest;
    (void)rlen;
    s3_mode(r);
    if (r->method == HTTP_M_OPTIONS) {   /* a CORS preflight */
        s3_preflight(r, root_bucket_exists(r));
        return;
    }
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
