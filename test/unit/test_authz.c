/* authz: the one rule of who may do what to a bucket and its objects,
 * and the one mapping of a request to what it does. */
#include <stdio.h>
#include <string.h>

#include "authz.h"
#include "check.h"
#include "http.h"
#include "s3own.h"
#include "util.h"

static enum authz_verdict decide(const json_t *props, const char *access, int admin,
                                 enum authz_op op)
{
    struct authz_who who = {access, admin, 1, 0};
    return authz_decide(props, &who, op);
}

static void test_rule(void)
{
    json_t *mine = json_pack("{s:s}", "owner", "alice");
    json_t *open = json_pack("{s:s, s:s}", "owner", "alice", "acl", "public-read");
    json_t *nobodys = json_object();
    enum authz_op ops[] = {AUTHZ_LIST,     AUTHZ_READ,      AUTHZ_WRITE,
                           AUTHZ_PUBLISH,  AUTHZ_OWN,       AUTHZ_READ_ACP,
                           AUTHZ_WRITE_ACP, AUTHZ_OBJ_READ_ACP, AUTHZ_OBJ_WRITE_ACP};
    for (size_t i = 0; i < ARRAY_LEN(ops); i++) {
        enum authz_op op = ops[i];
        int object = op == AUTHZ_READ || op == AUTHZ_OBJ_READ_ACP || op == AUTHZ_OBJ_WRITE_ACP;
        int acl_change = op == AUTHZ_PUBLISH || op == AUTHZ_WRITE_ACP ||
                         op == AUTHZ_OBJ_WRITE_ACP;
        /* the owner and an admin key: everything */
        CHECK(decide(mine, "alice", 0, op) == AUTHZ_ALLOW);
        CHECK(decide(mine, "ops", 1, op) == AUTHZ_ALLOW);
        CHECK(decide(nobodys, "ops", 1, op) == AUTHZ_ALLOW);
        /* another key, and nobody: what is the object's waits for its ACL */
        enum authz_verdict other = object ? AUTHZ_IF_OBJECT : AUTHZ_DENY;
        CHECK(decide(mine, "bob", 0, op) == other);
        CHECK(decide(mine, NULL, 0, op) == other);
        /* public-read: anyone lists it; its objects are still their own */
        CHECK(decide(open, "bob", 0, op) == (op == AUTHZ_LIST ? AUTHZ_ALLOW : other));
        CHECK(decide(open, NULL, 0, op) == (op == AUTHZ_LIST ? AUTHZ_ALLOW : other));
        /* no owner: every key's, but no key opens it to the world */
        CHECK(decide(nobodys, "bob", 0, op) == (acl_change ? AUTHZ_DENY : AUTHZ_ALLOW));
        CHECK(decide(nobodys, NULL, 0, op) == other);
        /* no keys configured: everything, for everyone */
        struct authz_who anyone = {NULL, 0, 0, 0};
        CHECK(authz_decide(mine, &anyone, op) == AUTHZ_ALLOW);
    }
    /* grants on the bucket: each permission what it names, no more */
    json_t *granted = json_pack(
        "{s:s, s:[{s:s,s:s}, {s:s,s:s}, {s:s,s:s}, {s:s,s:s}, {s:s,s:s}]}", "owner", "alice",
        "acl", "perm", "FULL_CONTROL", "key", "alice", "perm", "WRITE", "key", "bob", "perm",
        "READ_ACP", "key", "bob", "perm", "READ", "group", "AuthenticatedUsers", "perm",
        "WRITE_ACP", "key", "carol");
    CHECK(decide(granted, "bob", 0, AUTHZ_WRITE) == AUTHZ_ALLOW);
    CHECK(decide(granted, "bob", 0, AUTHZ_PUBLISH) == AUTHZ_ALLOW);
    CHECK(decide(granted, "bob", 0, AUTHZ_READ_ACP) == AUTHZ_ALLOW);
    CHECK(decide(granted, "bob", 0, AUTHZ_WRITE_ACP) == AUTHZ_DENY);
    CHECK(decide(granted, "bob", 0, AUTHZ_LIST) == AUTHZ_ALLOW);   /* signed: AuthenticatedUsers */
    CHECK(decide(granted, NULL, 0, AUTHZ_LIST) == AUTHZ_DENY);
    CHECK(decide(granted, "carol", 0, AUTHZ_WRITE_ACP) == AUTHZ_ALLOW);
    CHECK(decide(granted, "carol", 0, AUTHZ_WRITE) == AUTHZ_DENY);
    CHECK(decide(granted, "bob", 0, AUTHZ_OWN) == AUTHZ_DENY);     /* the owner's alone */
    CHECK(decide(granted, "bob", 0, AUTHZ_READ) == AUTHZ_IF_OBJECT);
    /* IgnorePublicAcls: the group grants count for nothing */
    json_object_set_new(granted, "public_access_block",
                        json_pack("{s:b}", "ignore_public_acls", 1));
    CHECK(decide(granted, "bob", 0, AUTHZ_LIST) == AUTHZ_DENY);
    CHECK(decide(granted, "bob", 0, AUTHZ_WRITE) == AUTHZ_ALLOW);
    json_decref(granted);
    /* an object's ACL: its owner everything, others what it grants */
    json_t *g = json_pack("[{s:s,s:s}, {s:s,s:s}]", "perm", "READ", "group", "AllUsers", "perm",
                          "WRITE_ACP", "key", "bob");
    CHECK(authz_object_allows(g, "alice", "alice", AUTHZ_OBJ_WRITE_ACP, 0));
    CHECK(authz_object_allows(g, "alice", NULL, AUTHZ_READ, 0));
    CHECK(!authz_object_allows(g, "alice", NULL, AUTHZ_READ, 1));
    CHECK(!authz_object_allows(g, "alice", NULL, AUTHZ_OBJ_READ_ACP, 0));
    CHECK(authz_object_allows(g, "alice", "bob", AUTHZ_OBJ_WRITE_ACP, 0));
    CHECK(!authz_object_allows(g, "alice", "bob", AUTHZ_OBJ_READ_ACP, 0));
    CHECK(!authz_object_allows(g, "alice", "bob", AUTHZ_WRITE, 0));   /* not the object's */
    json_decref(g);
    char *admins[] = {"ops", "root"};
    CHECK(authz_is_admin(admins, 2, "root") && !authz_is_admin(admins, 2, "bob") &&
          !authz_is_admin(admins, 2, NULL));
    CHECK(!strcmp(s3own_owner(mine), "alice") && !s3own_owner(nobodys));
    json_decref(mine);
    json_decref(open);
    json_decref(nobodys);
}

static enum authz_op op_of(int method, const char *query, int on_object)
{
    char q[256];
    snprintf(q, sizeof(q), "%s", query);
    CHECK(http_query_normalize(q) == 0);
    struct http_req r = {.method = method, .query = q};
    return authz_op_of(&r, on_object);
}

/* The same mapping whichever API: native and S3 requests alike. */
static void test_ops(void)
{
    CHECK(op_of(HTTP_M_GET, "", 1) == AUTHZ_READ);
    CHECK(op_of(HTTP_M_HEAD, "versionId=abc", 1) == AUTHZ_READ);
    CHECK(op_of(HTTP_M_GET, "partNumber=1&response-content-type=a", 1) == AUTHZ_READ);
    CHECK(op_of(HTTP_M_GET, "acl", 1) == AUTHZ_OBJ_READ_ACP);
    CHECK(op_of(HTTP_M_GET, "tagging", 1) == AUTHZ_OWN);
    CHECK(op_of(HTTP_M_GET, "attributes", 1) == AUTHZ_READ);  /* as GetObject */
    CHECK(op_of(HTTP_M_GET, "uploadId=x", 1) == AUTHZ_WRITE);  /* ListParts: the uploader's */
    CHECK(op_of(HTTP_M_GET, "%61cl", 1) == AUTHZ_OBJ_READ_ACP);      /* however spelt */
    CHECK(op_of(HTTP_M_PUT, "acl", 1) == AUTHZ_OBJ_WRITE_ACP);
    CHECK(op_of(HTTP_M_PUT, "%61%63%6C&shoal_s3=1", 1) == AUTHZ_OBJ_WRITE_ACP);
    CHECK(op_of(HTTP_M_PUT, "acl", 0) == AUTHZ_WRITE_ACP);
    CHECK(op_of(HTTP_M_GET, "acl", 0) == AUTHZ_READ_ACP);
    CHECK(op_of(HTTP_M_PUT, "", 1) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_PUT, "tagging", 1) == AUTHZ_OWN);
    CHECK(op_of(HTTP_M_DELETE, "", 1) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_POST, "uploads", 1) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_GET, "", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "list-type=2&prefix=a", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "versions", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "location", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "uploads", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_HEAD, "", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "tagging", 0) == AUTHZ_OWN);
    CHECK(op_of(HTTP_M_PUT, "cors", 0) == AUTHZ_OWN);
    CHECK(op_of(HTTP_M_DELETE, "", 0) == AUTHZ_OWN);
    CHECK(op_of(HTTP_M_POST, "delete", 0) == AUTHZ_WRITE);   /* DeleteObjects */
    /* a write that opens what it writes to others publishes */
    struct http_hdr pub[] = {{"x-amz-acl", "public-read"}};
    struct http_hdr priv[] = {{"X-Amz-Acl", "bucket-owner-full-control"}};
    struct http_hdr grant[] = {{"x-amz-grant-read", "uri=http://acs.amazonaws.com/groups/global/AllUsers"}};
    struct http_req r = {.method = HTTP_M_PUT, .query = "", .hdrs = pub, .n_hdrs = 1};
    CHECK(authz_op_of(&r, 1) == AUTHZ_PUBLISH);
    CHECK(authz_op_of(&r, 0) == AUTHZ_WRITE_ACP);   /* CreateBucket public */
    r.hdrs = grant;
    CHECK(authz_op_of(&r, 1) == AUTHZ_PUBLISH);
    r.method = HTTP_M_POST;      /* CreateMultipartUpload */
    CHECK(authz_op_of(&r, 1) == AUTHZ_PUBLISH);
    r.hdrs = priv;
    r.method = HTTP_M_PUT;
    CHECK(authz_op_of(&r, 1) == AUTHZ_WRITE);
    CHECK(authz_op_of(&r, 0) == AUTHZ_OWN);
}

int main(void)
{
    test_rule();
    test_ops();
    return check_done("test_authz");
}
