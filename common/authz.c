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
#include "s3acl.h"
#include "s3auth.h"
#include "s3own.h"
#include "s3sub.h"
#include "util.h"

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
    int acl_change = op == AUTHZ_PUBLISH || op == AUTHZ_WRITE_ACP || op == AUTHZ_OBJ_WRITE_ACP;
    if (who->access && !owner)   /* everyone's, but for opening it to the world */
        return acl_change ? AUTHZ_DENY : AUTHZ_ALLOW;
    if (s3own_acls_disabled(props))
        return AUTHZ_DENY;       /* BucketOwnerEnforced: no ACL grants anything */
    if (authz_object_need(op))
        return AUTHZ_IF_OBJECT;
    static const unsigned need[] = {
        [AUTHZ_LIST] = S3ACL_READ,         [AUTHZ_WRITE] = S3ACL_WRITE,
        [AUTHZ_PUBLISH] = S3ACL_WRITE,     [AUTHZ_READ_ACP] = S3ACL_READ_ACP,
        [AUTHZ_WRITE_ACP] = S3ACL_WRITE_ACP,
    };
    unsigned want = (size_t)op < ARRAY_LEN(need) ? need[op] : 0;
    if (!want)                   /* AUTHZ_OWN */
        return AUTHZ_DENY;
    json_t *g = s3acl_grants(json_object_get(props, "acl"), owner);
    unsigned bits = s3acl_perms(g, who->access, s3own_ignore_public(props));
    json_decref(g);
    return (bits & want) == want ? AUTHZ_ALLOW : AUTHZ_DENY;
}

unsigned authz_object_need(enum authz_op op)
{
    return op == AUTHZ_READ            ? S3ACL_READ
           : op == AUTHZ_OBJ_READ_ACP  ? S3ACL_READ_ACP
           : op == AUTHZ_OBJ_WRITE_ACP ? S3ACL_WRITE_ACP
                                       : 0;
}

int authz_object_allows(const json_t *grants, const char *object_owner, const char *who,
                        enum authz_op op, int ignore_public)
{
    unsigned need = authz_object_need(op);
    if (!need)
        return 0;
    if (who && object_owner && *object_owner && !strcmp(who, object_owner))
        return 1;                /* the owner's: everything, its ACL included */
    return (s3acl_perms(grants, who, ignore_public) & need) == need;
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

/* Does a write also set an ACL that gives anyone else anything (x-amz-acl
 * other than private and the bucket-owner ones, or any x-amz-grant-*)? */
static int sets_acl(const struct http_req *r)
{
    const char *canned = http_req_header(r, "x-amz-acl");
    if (canned && strcmp(canned, "private") && strcmp(canned, "bucket-owner-full-control") &&
        strcmp(canned, "bucket-owner-read"))
        return 1;
    for (int i = 0; i < r->n_hdrs; i++)
        if (!strncasecmp(r->hdrs[i].name, "x-amz-grant-", 12))
            return 1;
    return 0;
}

enum authz_op authz_op_of(const struct http_req *r, int on_object)
{
    const struct s3sub *sub = s3sub_find(r);
    int get = r->method == HTTP_M_GET || r->method == HTTP_M_HEAD;
    if (sub && sub->id == S3SUB_ACL)
        return on_object ? (get ? AUTHZ_OBJ_READ_ACP : AUTHZ_OBJ_WRITE_ACP)
                         : (get ? AUTHZ_READ_ACP : AUTHZ_WRITE_ACP);
    if (on_object) {
        if (sub && sub->id == S3SUB_TAGGING)
            return AUTHZ_OWN;    /* no ACL grants an object's tags */
        if (get)                 /* ListParts is the uploader's: a write */
            return sub && sub->id == S3SUB_UPLOAD_ID ? AUTHZ_WRITE : AUTHZ_READ;
        return sets_acl(r) ? AUTHZ_PUBLISH : AUTHZ_WRITE;
    }
    if (get)
        return !sub || sub->id == S3SUB_VERSIONS || sub->id == S3SUB_LOCATION ||
                       sub->id == S3SUB_UPLOADS
                   ? AUTHZ_LIST
                   : AUTHZ_OWN;
    if (r->method == HTTP_M_POST && sub && sub->id == S3SUB_DELETE)
        return AUTHZ_WRITE;      /* DeleteObjects */
    if (r->method == HTTP_M_PUT && !sub && sets_acl(r))
        return AUTHZ_WRITE_ACP;  /* CreateBucket with a public ACL */
    return AUTHZ_OWN;
}
