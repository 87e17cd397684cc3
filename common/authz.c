/*
 * authz: who may do what to a bucket and its objects (see authz.h).
 *
 * Threads: any; the BMD is read through its current snapshot.
 */
#include "authz.h"

#include <string.h>
#include <strings.h>

#include "bmd.h"
#include "config.h"
#include "http.h"
#include "s3auth.h"
#include "s3own.h"
#include "s3sub.h"

int authz_is_admin(char *const *keys, int n, const char *access)
{
    for (int i = 0; access && i < n; i++)
        if (!strcmp(keys[i], access))
            return 1;
    return 0;
}

void authz_who_set(struct authz_who *who, const struct conf *c, int enforced,
                   const struct s3auth_result *res)
{
    who->access = res && !res->anonymous ? res->access : NULL;
    who->admin = authz_is_admin(c->admin_keys, c->n_admin_keys, who->access);
    who->enforced = enforced;
    who->node = 0;
}

enum authz_verdict authz_decide(const json_t *props, const struct authz_who *who,
                                enum authz_op op)
{
    if (!who->enforced || who->admin)
        return AUTHZ_ALLOW;
    const char *owner = s3own_owner(props);
    if (who->access && owner && !strcmp(owner, who->access))
        return AUTHZ_ALLOW;
    if (who->access && !owner)   /* everyone's, but for opening it to the world */
        return op == AUTHZ_ACL ? AUTHZ_DENY : AUTHZ_ALLOW;
    if (op == AUTHZ_LIST)
        return s3own_public(props) ? AUTHZ_ALLOW : AUTHZ_DENY;
    return op == AUTHZ_READ ? AUTHZ_IF_PUBLIC : AUTHZ_DENY;
}

int authz_allows(const json_t *props, const struct authz_who *who, enum authz_op op)
{
    return authz_decide(props, who, op) == AUTHZ_ALLOW;
}

int authz_decide_named(const char *provider, const char *name, const struct authz_who *who,
                       enum authz_op op)
{
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, provider, name) : NULL;
    int v = bk ? (int)authz_decide(bk->props, who, op) : -1;
    bmd_unref(b);
    return v;
}

/* Does a write also set an ACL other than private (x-amz-acl public-read,
 * or any x-amz-grant-*: refused further on, but never let past here)? */
static int sets_acl(const struct http_req *r)
{
    const char *canned = http_req_header(r, "x-amz-acl");
    if (canned && s3sub_canned(canned) != 0)
        return 1;
    for (int i = 0; i < r->n_hdrs; i++)
        if (!strncasecmp(r->hdrs[i].name, "x-amz-grant-", 12))
            return 1;
    return 0;
}

enum authz_op authz_op_of(const struct http_req *r, int on_object)
{
    const struct s3sub *sub = s3sub_find(r);
    if (sub && sub->id == S3SUB_ACL && r->method == HTTP_M_PUT)
        return AUTHZ_ACL;
    if ((r->method == HTTP_M_PUT || r->method == HTTP_M_POST) && sets_acl(r))
        return AUTHZ_ACL;        /* PutObject, CopyObject, CreateMultipartUpload, CreateBucket */
    if (r->method != HTTP_M_GET && r->method != HTTP_M_HEAD)
        return AUTHZ_WRITE;
    if (on_object)               /* GetObjectAttributes reads, as GetObject does */
        return sub && sub->id != S3SUB_ATTRIBUTES ? AUTHZ_WRITE : AUTHZ_READ;
    return !sub || sub->id == S3SUB_VERSIONS || sub->id == S3SUB_LOCATION ? AUTHZ_LIST
                                                                         : AUTHZ_WRITE;
}
