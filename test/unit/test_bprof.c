/* bprof: profile checks, the public view, the BMD's copy of the profiles
 * (encoded, decoded, cloned), bucket/profile agreement, and s3_cfg_make. */
#include <errno.h>
#include <string.h>

#include "bmd.h"
#include "bprof.h"
#include "check.h"
#include "s3req.h"

static int ok(const char *text)
{
    char err[256];
    json_t *j = json_loads(text, 0, NULL);
    int rc = bprof_check(j, err, sizeof(err));
    json_decref(j);
    return rc == 0;
}

static void checks(void)
{
    CHECK(ok("{\"provider\": \"s3\"}"));
    CHECK(ok("{\"provider\": \"s3\", \"endpoint\": \"https://storage.googleapis.com\", "
             "\"region\": \"auto\", \"access_key\": \"GOOG1E\", \"secret_key\": \"s\"}"));
    CHECK(ok("{\"provider\": \"s3\", \"addressing\": \"virtual\", \"access_key\": \"a\", "
             "\"secret_key\": \"s\", \"session_token\": \"t\"}"));
    CHECK(ok("{\"provider\": \"azure\", \"account\": \"a\", \"account_key\": \"a2V5\"}"));
    CHECK(ok("{\"provider\": \"azure\", \"account\": \"a\", \"sas\": \"sv=1&sig=x\", "
             "\"endpoint\": \"http://127.0.0.1:10000/a\"}"));
    CHECK(!ok("{\"provider\": \"azure\", \"account_key\": \"a2V5\"}"));   /* no account */
    CHECK(!ok("{\"provider\": \"azure\", \"account\": \"a\", \"account_key\": \"a2V\"}"));
    CHECK(!ok("{\"provider\": \"azure\", \"account\": \"a\", \"account_key\": \"a2V5\", "
              "\"sas\": \"x\"}"));
    CHECK(!ok("{\"provider\": \"azure\", \"account\": \"a\", \"region\": \"r\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"account\": \"a\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"endpoint\": \"http://u:p@h:1\"}"));   /* shown back */
    CHECK(!ok("{\"provider\": \"s3\", \"endpoint\": \"http://h:1/?x=1\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"endpoint\": \"http://\"}"));
    CHECK(ok("{\"provider\": \"s3\", \"endpoint\": \"http://h:1/s3\"}"));
    CHECK(!ok("{\"provider\": \"azure\", \"account\": \"a\", \"account_key\": \"a=V5\"}"));
    CHECK(ok("{\"provider\": \"azure\", \"account\": \"a\", \"account_key\": \"a2U=\"}"));
    CHECK(!ok("{}"));
    CHECK(!ok("[]"));
    CHECK(!ok("{\"provider\": \"gcs\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"secret_kye\": \"x\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"region\": 5}"));
    CHECK(!ok("{\"provider\": \"s3\", \"endpoint\": \"ftp://x\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"addressing\": \"sideways\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"secret_key\": \"s\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"access_key\": \"a\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"session_token\": \"t\"}"));
    CHECK(!ok("{\"provider\": \"s3\", \"access_key\": \"a\\u0000b\", \"secret_key\": \"s\"}"));
    char err[256];
    json_t *j = json_loads("{\"provider\": \"s3\", \"access_key\": \"a\", \"secret_key\": "
                           "\"TOPSECRET\", \"secret_kye\": \"TOPSECRET\"}", 0, NULL);
    CHECK(bprof_check(j, err, sizeof(err)) == -1 && !strstr(err, "TOPSECRET"));
    json_decref(j);
    CHECK(bprof_valid_name("gcs-1", 5) && !bprof_valid_name("", 0) &&
          !bprof_valid_name("a/b", 3) && !bprof_valid_name("..", 2));
    CHECK(bprof_is_secret("account_key") && bprof_is_secret("sas") && !bprof_is_secret("account"));
    CHECK(bprof_is_secret("secret_key") && bprof_is_secret("session_token") &&
          !bprof_is_secret("access_key") && !bprof_is_secret("nope"));
}

static void public_view(void)
{
    json_t *p = json_loads("{\"provider\": \"s3\", \"access_key\": \"AK\", "
                           "\"secret_key\": \"TOPSECRET\", \"session_token\": \"\"}", 0, NULL);
    json_t *v = bprof_public("alpha", p);
    char *text = json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT);
    CHECK(!strstr(text, "TOPSECRET"));
    CHECK(!strcmp(text, "{\"access_key\":\"AK\",\"name\":\"alpha\",\"provider\":\"s3\","
                        "\"secrets\":[\"secret_key\"]}"));
    free(text);
    json_decref(v);
    json_decref(p);
}

/* bmd_add takes its own reference: the caller's is dropped here. */
static int add(struct bmd *b, const char *provider, const char *name, json_t *props)
{
    int rc = bmd_add(b, provider, name, props, 1);
    json_decref(props);
    return rc;
}

static struct bmd *roundtrip(const struct bmd *b)
{
    char err[256];
    json_t *j = bmd_to_json(b);
    struct bmd *o = bmd_from_json(j, err, sizeof(err));
    json_decref(j);
    return o;
}

static void in_the_bmd(void)
{
    struct bmd *b = bmd_new(3);
    json_t *p = json_loads("{\"provider\": \"s3\", \"endpoint\": \"http://h:1\", "
                           "\"access_key\": \"AK\", \"secret_key\": \"SK\"}", 0, NULL);
    json_t *none = bmd_to_json(b);
    CHECK(!json_object_get(none, "backends"));   /* old encodings stay as they were */
    json_decref(none);
    bmd_profile_set(b, "alpha", p);
    CHECK(add(b, "shoal", "pa", json_pack("{s:s, s:s}", "backend", "s3://r", "profile",
                                              "alpha")) == 0);
    CHECK(bmd_add(b, "shoal", "plain", NULL, 1) == 0);
    struct bmd *o = roundtrip(b);
    CHECK(o && json_equal((json_t *)bmd_profile(o, "alpha"), p));
    struct bmd *c = bmd_clone(o);
    CHECK(json_equal((json_t *)bmd_profile(c, "alpha"), p));
    CHECK(bmd_profile_user(c, "alpha") == bmd_find(c, "shoal", "pa"));
    CHECK(bmd_profile_user(c, "beta") == NULL);
    char err[256];
    CHECK(bmd_bucket_check(c, bmd_find(c, "shoal", "pa"), err, sizeof(err)) == 0);
    CHECK(bmd_bucket_check(c, bmd_find(c, "shoal", "plain"), err, sizeof(err)) == 0);
    CHECK(bmd_profile_del(c, "alpha") == 0 && bmd_profile_del(c, "alpha") == -ENOENT);
    CHECK(bmd_bucket_check(c, bmd_find(c, "shoal", "pa"), err, sizeof(err)) == -1 &&
          strstr(err, "no backend profile 'alpha'"));
    CHECK(add(c, "shoal", "ph", json_pack("{s:s, s:s}", "backend", "http://o/x",
                                              "profile", "alpha")) == 0);
    bmd_profile_set(c, "alpha", p);
    CHECK(bmd_bucket_check(c, bmd_find(c, "shoal", "ph"), err, sizeof(err)) == -1 &&
          strstr(err, "HTTP origin"));
    /* a profile that fails its checks is left out, not the whole BMD */
    json_t *j = bmd_to_json(b);
    json_object_set_new(json_object_get(json_object_get(j, "backends"), "alpha"), "bad",
                        json_string("x"));
    struct bmd *dropped = bmd_from_json(j, err, sizeof(err));   /* the rest is kept */
    CHECK(dropped && !bmd_profile(dropped, "alpha") && bmd_find(dropped, "shoal", "pa"));
    bmd_unref(dropped);
    json_decref(j);
    /* the kinds of backend a bucket can have */
    CHECK(bmd_add(c, "azure", "cont", NULL, 1) == 0 &&
          add(c, "shoal", "az", json_pack("{s:s}", "backend", "azure://c2")) == 0);
    const char *remote;
    CHECK(!strcmp(bmd_backend_scheme(bmd_find(c, "azure", "cont"), &remote), "azure") &&
          !strcmp(remote, "cont"));
    CHECK(!strcmp(bmd_backend_scheme(bmd_find(c, "shoal", "az"), &remote), "azure") &&
          !strcmp(remote, "c2"));
    CHECK(!strcmp(bmd_backend_scheme(bmd_find(c, "shoal", "ph"), &remote), "http") &&
          !strcmp(remote, "http://o/x"));
    CHECK(bmd_backend_scheme(bmd_find(c, "shoal", "plain"), &remote) == NULL);
    json_t *props = json_pack("{s:s}", "profile", "no/slash");
    CHECK(bmd_props_check(props, err, sizeof(err)) == -1);
    json_decref(props);
    bmd_unref(c);
    bmd_unref(o);
    bmd_unref(b);
    json_decref(p);
}

static void cfg_make(void)
{
    struct s3_cfg c;
    s3_cfg_make(&c, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(!strcmp(c.endpoint, "https://s3.us-east-1.amazonaws.com") && c.vhost &&
          !c.access_key[0] && !c.secret_key[0] && !c.token[0]);
    s3_cfg_free(&c);
    s3_cfg_make(&c, "http://h:9000/", "eu", "virtual", "AK", "SK", "TK");
    CHECK(!strcmp(c.endpoint, "http://h:9000") && c.vhost && !strcmp(c.region, "eu") &&
          !strcmp(c.access_key, "AK") && !strcmp(c.secret_key, "SK") && !strcmp(c.token, "TK"));
    s3_cfg_free(&c);
    s3_cfg_make(&c, "http://h:9000", NULL, NULL, "AK", NULL, "TK");   /* half a key: none */
    CHECK(!c.vhost && !strcmp(c.region, "us-east-1") && !c.access_key[0] && !c.token[0]);
    s3_cfg_free(&c);
}

int main(void)
{
    checks();
    public_view();
    in_the_bmd();
    cfg_make();
    return check_done("test_bprof");
}
