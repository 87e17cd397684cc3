#include <openssl/hmac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "http.h"
#include "node.h"
#include "util.h"

static int check_target(struct node *n, const char *method, const char *target)
{
    struct http_req r;
    memset(&r, 0, sizeof(r));
    r.method_name = method;
    r.method = !strcmp(method, "GET") ? HTTP_M_GET : !strcmp(method, "HEAD") ? HTTP_M_HEAD
                                                                              : HTTP_M_PUT;
    r.target = target;
    return node_check_sig(n, &r);
}

/* A signed URL verifies as it is, and any change to its path, query or
 * expiry, or a parameter after the signature, makes it fail. */
static void check_urls(struct node *n)
{
    char *u = node_signed_url(n, "GET", "http://h:1", "/v1/objects/b/k", "provider=s3&x=1");
    const char *t = strstr(u, "/v1/");
    CHECK(t == u + 10 && !strncmp(u, "http://h:1/v1/", 14));
    CHECK(!strncmp(t, "/v1/objects/b/k?provider=s3&x=1&shoal_exp=", 42));
    CHECK(check_target(n, "GET", t) == 1);
    CHECK(check_target(n, "HEAD", t) == 1);       /* HEAD is signed as GET */
    CHECK(check_target(n, "PUT", t) == -1);
    CHECK(check_target(n, "GET", "/v1/objects/b/k") == 0);
    CHECK(check_target(n, "GET", "/v1/objects/b/k?x=1") == 0);
    char *m = xstrdup(t);
    m[12] = 'c'; /* the bucket */
    CHECK(check_target(n, "GET", m) == -1);
    free(m);
    m = xasprintf("%s&y=2", t); /* a parameter after the signature */
    CHECK(check_target(n, "GET", m) == -1);
    free(m);
    m = xstrdup(t);
    char *q = strstr(m, "x=1");
    q[2] = '2'; /* the client's query */
    CHECK(check_target(n, "GET", m) == -1);
    free(m);
    m = xstrdup(t); /* the expiry */
    q = strstr(m, "shoal_exp=") + 10;
    *q = *q == '9' ? '8' : (char)(*q + 1);
    CHECK(check_target(n, "GET", m) == -1);
    free(m);
    m = xstrdup(t); /* stripped of its signature */
    *strstr(m, "&shoal_sig=") = '\0';
    CHECK(check_target(n, "GET", m) == 0);
    free(m);
    m = xstrdup(t); /* a signature cut short */
    m[strlen(m) - 1] = '\0';
    CHECK(check_target(n, "GET", m) == -1);
    free(m);
    free(u);
    /* an expired one */
    char sig[65];
    const char *old = "/v1/objects/b/k?shoal_exp=1000";
    node_sign(n, "GET", old, strlen(old), sig);
    char *e = xasprintf("%s&shoal_sig=%s", old, sig);
    CHECK(check_target(n, "GET", e) == -1);
    free(e);
    /* no query of the client's */
    u = node_signed_url(n, "PUT", "http://h:1", "/v1/objects/b/k", NULL);
    t = strstr(u, "/v1/");
    CHECK(!strncmp(t, "/v1/objects/b/k?shoal_exp=", 26));
    CHECK(check_target(n, "PUT", t) == 1);
    free(u);
}

/* node_sign against OpenSSL's one-shot HMAC over the same message. */
static void sign_matches_hmac(const char *secret)
{
    char dir[] = "/tmp/shoal-unit-node-XXXXXX", err[256];
    CHECK(mkdtemp(dir) != NULL);
    struct conf c;
    conf_defaults(&c);
    CHECK(conf_set(&c, "state_dir", dir, err, sizeof(err)) == 0);
    c.cluster_secret = xstrdup(secret);
    struct node n;
    CHECK(node_init(&n, &c, NODE_PROXY, err, sizeof(err)) == 0);
    const char *paths[] = {"/v1/objects/b/x?shoal_exp=1", "/v1/objects/b/a%20b/c?a=b&shoal_exp=2",
                           ""};
    for (size_t i = 0; i < ARRAY_LEN(paths); i++) {
        char got[65], want[65], msg[256];
        node_sign(&n, "GET", paths[i], strlen(paths[i]), got);
        int len = snprintf(msg, sizeof(msg), "GET\n%s", paths[i]);
        unsigned char mac[32];
        unsigned int ml = sizeof(mac);
        HMAC(EVP_sha256(), secret, (int)strlen(secret), (unsigned char *)msg, (size_t)len, mac,
             &ml);
        hex_encode(mac, 32, want);
        CHECK(strlen(got) == 64);
        CHECK(!strcmp(got, want));
    }
    /* another method signs differently */
    char g[65], p[65];
    node_sign(&n, "GET", "/v1/objects/b/x", 15, g);
    node_sign(&n, "PUT", "/v1/objects/b/x", 15, p);
    CHECK(strcmp(g, p) != 0);
    check_urls(&n);
    node_stop(&n);
    conf_free(&c);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static int64_t hook_old = -2, hook_new = -2;
static void on_cmap(struct node *n, struct cmap *o, struct cmap *m)
{
    (void)n;
    hook_old = o ? o->snap.version : -1;
    hook_new = m->snap.version;
}

/* on_cmap sees each installed map with the one it replaced; an older map
 * is not installed and calls nothing. */
static void cmap_hook(void)
{
    char dir[] = "/tmp/shoal-unit-node-XXXXXX", err[256];
    CHECK(mkdtemp(dir) != NULL);
    struct conf c;
    conf_defaults(&c);
    CHECK(conf_set(&c, "state_dir", dir, err, sizeof(err)) == 0);
    c.cluster_secret = xstrdup("sixteen bytes...");
    struct node n;
    CHECK(node_init(&n, &c, NODE_PROXY, err, sizeof(err)) == 0);
    n.on_cmap = on_cmap;
    struct cmap *cur = cmap_current();
    int64_t base = cur ? cur->snap.version : 0;
    cmap_unref(cur);
    CHECK(node_set_cmap(&n, cmap_new("u", "p", base + 5)) == 1);
    CHECK(hook_new == base + 5 && (base == 0 ? hook_old == -1 : hook_old == base));
    CHECK(node_set_cmap(&n, cmap_new("u", "p", base + 9)) == 1);
    CHECK(hook_old == base + 5 && hook_new == base + 9);
    hook_old = hook_new = -2;
    CHECK(node_set_cmap(&n, cmap_new("u", "p", base + 7)) == 0);
    CHECK(hook_old == -2 && hook_new == -2);
    node_stop(&n);
    conf_free(&c);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static void refuses_short_secret(void)
{
    char dir[] = "/tmp/shoal-unit-node-XXXXXX", err[256];
    CHECK(mkdtemp(dir) != NULL);
    struct conf c;
    conf_defaults(&c);
    CHECK(conf_set(&c, "state_dir", dir, err, sizeof(err)) == 0);
    struct node n;
    CHECK(node_init(&n, &c, NODE_PROXY, err, sizeof(err)) == -1);
    CHECK(strstr(err, "cluster_secret_file") != NULL);
    c.cluster_secret = xstrdup("too short");
    CHECK(node_init(&n, &c, NODE_PROXY, err, sizeof(err)) == -1);
    conf_free(&c);
    rmdir(dir);
}

/* The joins and numbers the request paths build without printf. */
static void strings_without_printf(void)
{
    char *s = xstrcat("a", "", "bc", "/", NULL);
    CHECK(!strcmp(s, "abc/"));
    free(s);
    s = xstrcat("", NULL);
    CHECK(!strcmp(s, ""));
    free(s);
    const int64_t v[] = {0, 7, -1, 1234567890123LL, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char want[32], got[32];
        snprintf(want, sizeof(want), "%lld", (long long)v[i]);
        size_t n = fmt_i64(got, v[i]);
        got[n] = '\0';
        CHECK(n == strlen(want) && !strcmp(got, want));
    }
    char u[21];
    u[fmt_u64(u, UINT64_MAX)] = '\0';
    CHECK(!strcmp(u, "18446744073709551615"));
    u[fmt_u64(u, 0)] = '\0';
    CHECK(!strcmp(u, "0"));
    struct gbuf b = {0};
    gbuf_strs(&b, "x=", NULL);
    gbuf_i64(&b, -42);
    gbuf_strs(&b, "&", "y", NULL);
    CHECK(b.n == 7 && !strcmp(b.p, "x=-42&y"));
    gbuf_free(&b);
    static const struct http_name set[] = {HTTP_NAME("Range"), HTTP_NAME("If-Match"),
                                           HTTP_NAME("x-amz-acl")};
    CHECK(http_name_find("range", 5, set, 3) == 0);
    CHECK(http_name_find("X-AMZ-ACL", 9, set, 3) == 2);
    CHECK(http_name_find("Ranges", 6, set, 3) == -1);
    CHECK(http_name_find("Rang", 4, set, 3) == -1);
    CHECK(http_name_find("If-Match", 8, set, 0) == -1);
}

int main(void)
{
    strings_without_printf();
    refuses_short_secret();
    cmap_hook();
    sign_matches_hmac("sixteen bytes...");
    sign_matches_hmac("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"); /* 64 */
    sign_matches_hmac("a secret longer than one SHA-256 block, which HMAC hashes down first....");
    return check_done("test_node");
}
