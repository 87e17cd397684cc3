/* auth: bearer tokens round-trip and fail on every change; loopback
 * detection; anonymous service refused on a public address. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "check.h"
#include "config.h"
#include "http.h"
#include "util.h"

static int with_auth(const struct auth *a, const char *authz, time_t now, char *access)
{
    struct http_hdr h = {"Authorization", authz};
    struct http_req r;
    memset(&r, 0, sizeof(r));
    r.method = HTTP_M_GET;
    r.method_name = "GET";
    r.target = r.path = "/v1/buckets";
    r.path_len = strlen(r.path);
    r.query = "";
    r.hdrs = &h;
    r.n_hdrs = authz ? 1 : 0;
    struct s3auth_result res;
    enum s3e code;
    char msg[256];
    int st = auth_client(a, &r, now, &res, &code, msg, sizeof(msg));
    if (!st && access)
        strcpy(access, res.access);
    return st;
}

static void conf_with(struct conf *c, const char *keys, const char *host)
{
    char err[256];
    conf_defaults(c);
    c->cluster_secret = xstrdup("0123456789abcdef0123456789abcdef");
    if (keys)
        CHECK(conf_set(c, "auth_keys", keys, err, sizeof(err)) == 0);
    CHECK(conf_set(c, "host", host, err, sizeof(err)) == 0);
}

int main(void)
{
    CHECK(auth_host_is_loopback("127.0.0.1"));
    CHECK(auth_host_is_loopback("127.9.8.7"));
    CHECK(auth_host_is_loopback("::1"));
    CHECK(auth_host_is_loopback("localhost"));
    CHECK(!auth_host_is_loopback("0.0.0.0"));
    CHECK(!auth_host_is_loopback("10.0.0.1"));
    CHECK(!auth_host_is_loopback("::"));
    CHECK(!auth_host_is_loopback("example.com"));

    struct conf c;
    struct auth a;
    char err[256], access[128];
    /* anonymous on a public address: refused unless allowed */
    conf_with(&c, NULL, "0.0.0.0");
    CHECK(auth_init(&a, &c, err, sizeof(err)) == -1 && strstr(err, "allow_anonymous"));
    CHECK(conf_set(&c, "allow_anonymous", "true", err, sizeof(err)) == 0);
    CHECK(auth_init(&a, &c, err, sizeof(err)) == 0 && !auth_enabled(&a));
    CHECK(with_auth(&a, NULL, 1000, NULL) == 0); /* nothing is checked */
    auth_free(&a);
    conf_free(&c);

    conf_with(&c, "AKID:secret1,OTHER.KEY:secret2", "0.0.0.0");
    CHECK(auth_init(&a, &c, err, sizeof(err)) == 0 && auth_enabled(&a));
    CHECK(with_auth(&a, NULL, 1000, NULL) == 403);
    char *tok = auth_token_new(&a, "OTHER.KEY", 2000);
    char *h = xasprintf("Bearer %s", tok);
    CHECK(with_auth(&a, h, 1000, access) == 0 && !strcmp(access, "OTHER.KEY"));
    CHECK(with_auth(&a, h, 2001, NULL) == 403); /* expired */
    /* every byte changed is refused */
    for (size_t i = 7; i < strlen(h); i++) {
        char *m = xstrdup(h);
        m[i] = m[i] == 'a' ? 'b' : 'a';
        CHECK(with_auth(&a, m, 1000, NULL) == 403);
        free(m);
    }
    char *longer = xasprintf("%sx", h);
    CHECK(with_auth(&a, longer, 1000, NULL) == 403);
    free(longer);
    CHECK(with_auth(&a, "Bearer ", 1000, NULL) == 403);
    CHECK(with_auth(&a, "Bearer shoal1...", 1000, NULL) == 403);
    CHECK(with_auth(&a, "Bearer shoal1.AKID.99999999999999999999999.x", 1000, NULL) == 403);
    /* a key no longer configured: its tokens die with it */
    char *t2 = auth_token_new(&a, "GONE", 2000);
    char *h2 = xasprintf("Bearer %s", t2);
    CHECK(with_auth(&a, h2, 1000, NULL) == 403);
    free(t2);
    free(h2);
    auth_free(&a);
    conf_free(&c);

    /* another cluster secret does not accept the token */
    conf_with(&c, "AKID:secret1,OTHER.KEY:secret2", "127.0.0.1");
    free(c.cluster_secret);
    c.cluster_secret = xstrdup("another secret of the same length");
    CHECK(auth_init(&a, &c, err, sizeof(err)) == 0);
    CHECK(with_auth(&a, h, 1000, NULL) == 403);
    auth_free(&a);
    conf_free(&c);
    free(tok);
    free(h);
    return check_done("test_auth");
}
