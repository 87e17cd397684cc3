#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "node.h"
#include "util.h"

/* node_sign against OpenSSL's one-shot HMAC over the same message. */
static void sign_matches_hmac(const char *secret)
{
    char dir[] = "/tmp/shoal-unit-node-XXXXXX", err[256];
    CHECK(mkdtemp(dir) != NULL);
    struct conf c;
    conf_defaults(&c);
    CHECK(conf_set(&c, "state_dir", dir, err, sizeof(err)) == 0);
    CHECK(conf_set(&c, "cluster_secret", secret, err, sizeof(err)) == 0);
    struct node n;
    CHECK(node_init(&n, &c, NODE_PROXY, err, sizeof(err)) == 0);
    const char *paths[] = {"/v1/objects/b/x", "/v1/objects/b/a%20b/c", ""};
    for (size_t i = 0; i < ARRAY_LEN(paths); i++) {
        char got[65], want[65], msg[256];
        node_sign(&n, "GET", paths[i], 1700000000 + (int64_t)i, got);
        int len = snprintf(msg, sizeof(msg), "GET\n%s\n%lld", paths[i],
                           1700000000LL + (long long)i);
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
    node_sign(&n, "GET", "/v1/objects/b/x", 1, g);
    node_sign(&n, "PUT", "/v1/objects/b/x", 1, p);
    CHECK(strcmp(g, p) != 0);
    node_stop(&n);
    conf_free(&c);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    sign_matches_hmac("short");
    sign_matches_hmac("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"); /* 64 */
    sign_matches_hmac("a secret longer than one SHA-256 block, which HMAC hashes down first....");
    return check_done("test_node");
}
