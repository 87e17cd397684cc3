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
    enum authz_op ops[] = {AUTHZ_LIST, AUTHZ_READ, AUTHZ_WRITE, AUTHZ_ACL};
    for (size_t i = 0; i < ARRAY_LEN(ops); i++) {
        enum authz_op op = ops[i];
        /* the owner and an admin key: everything */
        CHECK(decide(mine, "alice", 0, op) == AUTHZ_ALLOW);
        CHECK(decide(mine, "ops", 1, op) == AUTHZ_ALLOW);
        CHECK(decide(nobodys, "ops", 1, op) == AUTHZ_ALLOW);
        /* another key, and nobody: a read waits for the object's own ACL */
        enum authz_verdict other = op == AUTHZ_READ ? AUTHZ_IF_PUBLIC : AUTHZ_DENY;
        CHECK(decide(mine, "bob", 0, op) == other);
        CHECK(decide(mine, NULL, 0, op) == other);
        /* public-read: anyone lists it; its objects are still their own */
        CHECK(decide(open, "bob", 0, op) == (op == AUTHZ_LIST ? AUTHZ_ALLOW : other));
        CHECK(decide(open, NULL, 0, op) == (op == AUTHZ_LIST ? AUTHZ_ALLOW : other));
        /* no owner: every key's, but no key opens it to the world */
        CHECK(decide(nobodys, "bob", 0, op) == (op == AUTHZ_ACL ? AUTHZ_DENY : AUTHZ_ALLOW));
        CHECK(decide(nobodys, NULL, 0, op) == other);
        /* no keys configured: everything, for everyone */
        struct authz_who anyone = {NULL, 0, 0, 0};
        CHECK(authz_decide(mine, &anyone, op) == AUTHZ_ALLOW);
    }
    char *admins[] = {"ops", "root"};
    CHECK(authz_is_admin(admins, 2, "root") && !authz_is_admin(admins, 2, "bob") &&
          !authz_is_admin(admins, 2, NULL));
    CHECK(!strcmp(s3own_owner(mine), "alice") && !s3own_owner(nobodys));
    CHECK(s3own_public(open) && !s3own_public(mine));
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
    CHECK(op_of(HTTP_M_GET, "acl", 1) == AUTHZ_WRITE);        /* the owner's to read */
    CHECK(op_of(HTTP_M_GET, "tagging", 1) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_GET, "attributes", 1) == AUTHZ_READ);  /* as GetObject */
    CHECK(op_of(HTTP_M_GET, "%61cl", 1) == AUTHZ_WRITE);      /* however spelt */
    CHECK(op_of(HTTP_M_PUT, "acl", 1) == AUTHZ_ACL);
    CHECK(op_of(HTTP_M_PUT, "%61%63%6C&shoal_s3=1", 1) == AUTHZ_ACL);
    CHECK(op_of(HTTP_M_PUT, "acl", 0) == AUTHZ_ACL);
    CHECK(op_of(HTTP_M_PUT, "", 1) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_DELETE, "", 1) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_POST, "uploads", 1) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_GET, "", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "list-type=2&prefix=a", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "versions", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "location", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_HEAD, "", 0) == AUTHZ_LIST);
    CHECK(op_of(HTTP_M_GET, "uploads", 0) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_GET, "acl", 0) == AUTHZ_WRITE);
    CHECK(op_of(HTTP_M_DELETE, "", 0) == AUTHZ_WRITE);
    /* a write that opens what it writes to the world is a change of ACL */
    struct http_hdr pub[] = {{"x-amz-acl", "public-read"}};
    struct http_hdr priv[] = {{"X-Amz-Acl", "private"}};
    struct http_hdr grant[] = {{"x-amz-grant-read", "uri=http://acs.amazonaws.com/groups/global/AllUsers"}};
    struct http_req r = {.method = HTTP_M_PUT, .query = "", .hdrs = pub, .n_hdrs = 1};
    CHECK(authz_op_of(&r, 1) == AUTHZ_ACL);
    r.hdrs = grant;
    CHECK(authz_op_of(&r, 1) == AUTHZ_ACL);
    r.method = HTTP_M_POST;      /* CreateMultipartUpload */
    CHECK(authz_op_of(&r, 1) == AUTHZ_ACL);
    r.hdrs = priv;
    r.method = HTTP_M_PUT;
    CHECK(authz_op_of(&r, 1) == AUTHZ_WRITE);
}

int main(void)
{
    test_rule();
    test_ops();
    return check_done("test_authz");
}
