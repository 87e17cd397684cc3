/* s3acl and s3user: ACLs as asked for (canned, grant headers, policy
 * bodies), kept, shown and decided; keys as users. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "http.h"
#include "s3acl.h"
#include "s3user.h"
#include "util.h"

#define ALL S3ACL_GROUPS "global/AllUsers"

static char *keys[] = {"alice:a-secret", "bob:b-secret", "carol:c-secret"};

static void test_users(void)
{
    char err[256], buf[S3USER_ID_MAX];
    char *users[] = {"alice:alice-id:Alice A:alice@example.org", "bob::Bob"};
    CHECK(s3user_init(users, 2, keys, 3, err, sizeof(err)) == 0);
    CHECK(!strcmp(s3user_id("alice", buf, sizeof(buf)), "alice-id"));
    CHECK(!strcmp(s3user_name("alice"), "Alice A") && !strcmp(s3user_name("bob"), "Bob"));
    /* no ID given: a stable one of the key; no name: the key */
    const char *bid = s3user_id("bob", buf, sizeof(buf));
    CHECK(strlen(bid) == 64 && strspn(bid, "0123456789abcdef") == 64);
    char again[S3USER_ID_MAX];
    CHECK(!strcmp(s3user_id("bob", again, sizeof(again)), bid));
    CHECK(!strcmp(s3user_by_id(bid), "bob") && !strcmp(s3user_by_id("alice-id"), "alice"));
    CHECK(!strcmp(s3user_name("carol"), "carol") && !s3user_by_id("nobody"));
    CHECK(!strcmp(s3user_by_email("ALICE@example.org"), "alice") &&
          !s3user_by_email("bob@example.org"));
    /* a key not configured has its ID all the same */
    CHECK(strlen(s3user_id("zed", buf, sizeof(buf))) == 64 && !s3user_by_id(buf));
    char *bad[][2] = {{"alice", NULL}, {"dave:x:y", NULL}, {"alice:bob-id:A", "bob:bob-id:B"},
                      {"alice:i:n:no-at", NULL}, {"alice:a<b:n", NULL},
                      {"alice:i:n:x@y", "bob:j:m:X@y"}};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        CHECK(s3user_init(bad[i], bad[i][1] ? 2 : 1, keys, 3, err, sizeof(err)) == -1 &&
              strstr(err, "users"));
    }
    CHECK(s3user_init(users, 2, keys, 3, err, sizeof(err)) == 0);
}

static struct http_req req(struct http_hdr *h, int n)
{
    return (struct http_req){.query = "", .hdrs = h, .n_hdrs = n};
}

static int asked(struct http_hdr *h, int n, const char *body, json_t **g, enum s3e *code)
{
    struct http_req r = req(h, n);
    char msg[300];
    return s3acl_of_request(&r, body, body ? strlen(body) : 0, 1, "alice", "carol", g, code,
                            msg, sizeof(msg));
}

static void test_canned(void)
{
    static const struct {
        const char *name;
        unsigned anon, signed_, bucket_owner;   /* what each gets */
    } c[] = {
        {"private", 0, 0, 0},
        {"public-read", S3ACL_READ, S3ACL_READ, 0},
        {"public-read-write", S3ACL_READ | S3ACL_WRITE, S3ACL_READ | S3ACL_WRITE, 0},
        {"authenticated-read", 0, S3ACL_READ, 0},
        {"bucket-owner-read", 0, 0, S3ACL_READ},
        {"bucket-owner-full-control", 0, 0, S3ACL_FULL},
        {"log-delivery-write", 0, 0, 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(c); i++) {
        struct http_hdr h = {"x-amz-acl", c[i].name};
        json_t *g = NULL;
        enum s3e code;
        CHECK(asked(&h, 1, NULL, &g, &code) == 0 && g);
        CHECK(s3acl_perms(g, NULL, 0) == c[i].anon);
        CHECK(s3acl_perms(g, "bob", 0) == c[i].signed_);
        CHECK(s3acl_perms(g, "carol", 0) == (c[i].bucket_owner | c[i].signed_));
        CHECK(s3acl_perms(g, "alice", 0) == S3ACL_FULL);   /* the owner keeps it all */
        CHECK(s3acl_perms(g, "bob", 1) == 0);              /* IgnorePublicAcls */
        CHECK(s3acl_public(g) == (c[i].anon || c[i].signed_));
        CHECK(s3acl_private(g, "alice") == (i == 0));
        CHECK(s3acl_check(g, NULL, 0) == 0);
        json_decref(g);
    }
    /* the bucket's owner is the owner: bucket-owner-read is private */
    json_t *g = s3acl_canned("bucket-owner-read", "alice", "alice");
    CHECK(g && s3acl_private(g, "alice"));
    json_decref(g);
    CHECK(!s3acl_canned("public", "alice", "alice"));
    struct http_hdr h = {"x-amz-acl", "public"};
    enum s3e code;
    CHECK(asked(&h, 1, NULL, &g, &code) == 400 && code == S3E_INVALID_ARGUMENT && !g);
    /* aws-exec-read: the owner's, and READ for EC2, which no caller is */
    h.value = "aws-exec-read";
    CHECK(asked(&h, 1, NULL, &g, &code) == 0 && json_array_size(g) == 2);
    CHECK(s3acl_perms(g, "bob", 0) == 0 && s3acl_perms(g, NULL, 0) == 0 && !s3acl_public(g));
    CHECK(s3acl_check(g, NULL, 0) == 0 && !s3acl_private(g, "alice"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(g, 1), "id")), S3ACL_EC2_ID));
    json_decref(g);
    json_t *other = json_pack("[{s:s, s:s}]", "perm", "READ", "id", "0123");
    CHECK(s3acl_check(other, NULL, 0) == -1);   /* no other outside ID */
    json_decref(other);
    /* nothing asked for: no ACL */
    CHECK(asked(&h, 0, NULL, &g, &code) == 0 && !g);
    /* the old kept forms */
    json_t *s = json_string("public-read");
    g = s3acl_grants(s, "alice");
    CHECK(s3acl_perms(g, NULL, 0) == S3ACL_READ && s3acl_check(s, NULL, 0) == 0);
    json_decref(g);
    json_decref(s);
    g = s3acl_grants_text(NULL, "alice");
    CHECK(s3acl_private(g, "alice"));
    json_decref(g);
    g = s3acl_grants_text("[{\"perm\":\"WRITE\",\"key\":\"bob\"}]", "alice");
    CHECK(s3acl_perms(g, "bob", 0) == S3ACL_WRITE && s3acl_perms(g, "alice", 0) == 0);
    json_decref(g);
    g = s3acl_grants_text("[{\"perm\":\"BREW\",\"key\":\"bob\"}]", "alice");   /* never so */
    CHECK(s3acl_private(g, "alice"));
    json_decref(g);
}

static void test_headers(void)
{
    char buf[S3USER_ID_MAX];
    char *v = xasprintf("id=\"%s\", emailAddress=\"alice@example.org\"",
                        s3user_id("bob", buf, sizeof(buf)));
    struct http_hdr h[] = {{"x-amz-grant-read", v},
                           {"x-amz-grant-write-acp", "uri=\"" ALL "\""},
                           {"x-amz-grant-full-control", "id=alice-id"}};
    json_t *g = NULL;
    enum s3e code;
    CHECK(asked(h, 3, NULL, &g, &code) == 0 && g);
    /* exactly the grants named: no owner's added */
    CHECK(json_array_size(g) == 4);
    CHECK(s3acl_perms(g, "bob", 0) == (S3ACL_READ | S3ACL_WRITE_ACP));
    CHECK(s3acl_perms(g, "alice", 0) == S3ACL_FULL);
    CHECK(s3acl_perms(g, NULL, 0) == S3ACL_WRITE_ACP);
    json_decref(g);
    h[0].value = "id=\"no-such-id\"";
    CHECK(asked(h, 1, NULL, &g, &code) == 400 && code == S3E_INVALID_ARGUMENT);
    h[0].value = "emailAddress=\"nobody@example.org\"";
    CHECK(asked(h, 1, NULL, &g, &code) == 400 && code == S3E_UNRESOLVABLE_EMAIL);
    h[0].value = "uri=\"http://acs.amazonaws.com/groups/global/Everyone\"";
    CHECK(asked(h, 1, NULL, &g, &code) == 400 && code == S3E_INVALID_ARGUMENT);
    h[0].value = "name=bob";
    CHECK(asked(h, 1, NULL, &g, &code) == 400);
    h[0].value = "bob";
    CHECK(asked(h, 1, NULL, &g, &code) == 400);
    /* a canned ACL and grants; headers and a body */
    struct http_hdr both[] = {{"x-amz-acl", "private"}, {"x-amz-grant-read", "id=alice-id"}};
    CHECK(asked(both, 2, NULL, &g, &code) == 400 && code == S3E_INVALID_REQUEST);
    CHECK(asked(both, 1, "<AccessControlPolicy/>", &g, &code) == 400 &&
          code == S3E_UNEXPECTED_CONTENT);
    free(v);
}

static void test_policy_bodies(void)
{
    enum s3e code;
    json_t *g = NULL;
    /* what GetObjectAcl answers, PutObjectAcl takes back the same */
    const char *names[] = {"private", "public-read-write", "authenticated-read",
                           "bucket-owner-full-control", "log-delivery-write"};
    for (size_t i = 0; i < ARRAY_LEN(names); i++) {
        json_t *want = s3acl_canned(names[i], "alice", "carol");
        struct gbuf b = {0};
        s3acl_xml(&b, "alice", want);
        CHECK(strstr(b.p, "<ID>alice-id</ID><DisplayName>Alice A</DisplayName>") != NULL);
        CHECK(asked(NULL, 0, b.p, &g, &code) == 0 && g && json_equal(g, want));
        json_decref(g);
        json_decref(want);
        gbuf_free(&b);
    }
    const char *bad[] = {
        "<AccessControlPolicy><AccessControlList><Grant><Grantee><ID>alice-id</ID></Grantee>"
        "<Permission>ALL</Permission></Grant></AccessControlList></AccessControlPolicy>",
        "<AccessControlPolicy><AccessControlList><Grant><Grantee><ID>alice-id</ID>"
        "<URI>" ALL "</URI></Grantee><Permission>READ</Permission></Grant>"
        "</AccessControlList></AccessControlPolicy>",
        "<AccessControlPolicy><AccessControlList><Grant><Grantee></Grantee>"
        "<Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>",
        "<AccessControlPolicy>",
        "<Tagging/>",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        CHECK(asked(NULL, 0, bad[i], &g, &code) == 400 && code == S3E_MALFORMED_ACL && !g);
    const char *unknown =
        "<AccessControlPolicy><AccessControlList><Grant><Grantee><EmailAddress>x@y.z"
        "</EmailAddress></Grantee><Permission>READ</Permission></Grant></AccessControlList>"
        "</AccessControlPolicy>";
    CHECK(asked(NULL, 0, unknown, &g, &code) == 400 && code == S3E_UNRESOLVABLE_EMAIL);
    /* an empty list: no grants at all (the owner keeps its ACL's rights) */
    CHECK(asked(NULL, 0, "<AccessControlPolicy><AccessControlList/></AccessControlPolicy>", &g,
                &code) == 0 &&
          json_array_size(g) == 0);
    json_decref(g);
    /* too many grants */
    struct gbuf many = {0};
    gbuf_str(&many, "<AccessControlPolicy><AccessControlList>");
    for (int i = 0; i <= S3ACL_GRANTS_MAX; i++)
        gbuf_str(&many, i % 2 ? "<Grant><Grantee><ID>alice-id</ID></Grantee><Permission>READ"
                                "</Permission></Grant>"
                              : "<Grant><Grantee><ID>alice-id</ID></Grantee><Permission>WRITE"
                                "</Permission></Grant>");
    gbuf_str(&many, "</AccessControlList></AccessControlPolicy>");
    CHECK(asked(NULL, 0, many.p, &g, &code) == 0 && json_array_size(g) == 2);   /* once each */
    json_decref(g);
    gbuf_free(&many);
}

static void test_check(void)
{
    const char *bad[] = {
        "\"public\"", "[{\"perm\":\"READ\"}]", "[{\"perm\":\"READ\",\"group\":\"Everyone\"}]",
        "[{\"perm\":\"READ\",\"key\":\"a\",\"group\":\"AllUsers\"}]",
        "[{\"perm\":\"READ\",\"key\":7}]", "[{\"perm\":\"READ\",\"key\":\"a\",\"x\":1}]", "7",
        "[\"READ\"]",
    };
    char err[200];
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        json_t *v = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        CHECK(v && s3acl_check(v, err, sizeof(err)) == -1 && strstr(err, "acl"));
        json_decref(v);
    }
    json_t *ok = json_loads("[{\"perm\":\"READ\",\"group\":\"LogDelivery\"}]", 0, NULL);
    CHECK(s3acl_check(ok, err, sizeof(err)) == 0 && s3acl_perms(ok, "bob", 0) == 0);
    json_decref(ok);
}

int main(void)
{
    test_users();
    test_canned();
    test_headers();
    test_policy_bodies();
    test_check();
    s3user_free();
    return check_done("test_s3acl");
}
