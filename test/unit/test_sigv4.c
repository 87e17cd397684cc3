/* The SigV4 signer against every case of the public test suite in
 * test/data/sigv4 (or $SHOAL_SIGV4_VECTORS): canonical request,
 * string to sign and signature, for header and for query signing. */
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "sigv4.h"
#include "util.h"

static char *slurp(const char *dir, const char *name)
{
    char *p = xasprintf("%s/%s", dir, name);
    char *s = file_read(p, 1 << 20, NULL);
    free(p);
    return s;
}

/* Compares and frees want (a slurp() result). */
static int eq(const char *what, const char *dir, const char *got, char *want)
{
    int ok = want && !strcmp(got, want);
    if (!ok)
        fprintf(stderr, "%s: %s differs\n--- got:\n%s\n--- want:\n%s\n", dir, what, got,
                want ? want : "(missing)");
    free(want);
    return ok;
}

static void run_case(const char *dir)
{
    char *cpath = xasprintf("%s/context.json", dir);
    json_t *ctx = json_load_file(cpath, 0, NULL);
    free(cpath);
    char *req = slurp(dir, "request.txt");
    CHECK(ctx && req);
    if (!ctx || !req) {
        json_decref(ctx);
        free(req);
        return;
    }
    json_t *cr = json_object_get(ctx, "credentials");
    struct sigv4_creds k = {
        json_string_value(json_object_get(cr, "access_key_id")),
        json_string_value(json_object_get(cr, "secret_access_key")),
        json_string_value(json_object_get(cr, "token")),
    };
    int omit_token = json_is_true(json_object_get(ctx, "omit_session_token"));
    int sign_body = json_is_true(json_object_get(ctx, "sign_body"));
    struct tm tm = {0};
    strptime(json_string_value(json_object_get(ctx, "timestamp")), "%Y-%m-%dT%H:%M:%SZ", &tm);
    struct sigv4_ctx c = {json_string_value(json_object_get(ctx, "region")),
                          json_string_value(json_object_get(ctx, "service")), timegm(&tm),
                          json_is_true(json_object_get(ctx, "normalize"))};
    int expires = (int)json_integer_value(json_object_get(ctx, "expiration_in_seconds"));

    /* request line: METHOD SP target SP HTTP/1.1 (the target may hold spaces) */
    char *line_end = strchr(req, '\n');
    *line_end = '\0';
    char *sp = strchr(req, ' '), *ver = strstr(req, " HTTP/");
    char *method = xstrndup(req, (size_t)(sp - req));
    char *target = xstrndup(sp + 1, (size_t)(ver - sp - 1));
    char *qm = strchr(target, '?');
    const char *query = "";
    if (qm) {
        *qm = '\0';
        query = qm + 1;
    }
    /* headers, with folded continuation lines; then the body */
    struct sigv4_hdr h[32];
    char *vals[32];
    int n = 0;
    char *p = line_end + 1, *body = "";
    while (*p) {
        char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0) {
            body = e ? e + 1 : "";
            break;
        }
        if ((p[0] == ' ' || p[0] == '\t') && n > 0) {
            char *joined = xasprintf("%s %.*s", vals[n - 1], (int)len, p);
            free(vals[n - 1]);
            vals[n - 1] = joined;
            h[n - 1].value = joined;
        } else {
            char *colon = memchr(p, ':', len);
            h[n].name = xstrndup(p, (size_t)(colon - p));
            vals[n] = xstrndup(colon + 1, len - (size_t)(colon - p) - 1);
            h[n].value = vals[n];
            n++;
        }
        p = e ? e + 1 : p + len;
    }
    char body_hash[65];
    sigv4_sha256_hex(body, strlen(body), body_hash);
    char amzdate[17], date[9];
    sigv4_dates(c.now, amzdate, date);

    /* header signing */
    struct sigv4_hdr hh[40];
    memcpy(hh, h, sizeof(*h) * (size_t)n);
    int nh = n;
    hh[nh++] = (struct sigv4_hdr){"X-Amz-Date", amzdate};
    if (sign_body)
        hh[nh++] = (struct sigv4_hdr){"X-Amz-Content-Sha256", body_hash};
    if (k.token && !omit_token)
        hh[nh++] = (struct sigv4_hdr){"X-Amz-Security-Token", k.token};
    struct sigv4_req r = {method, target, query, hh, nh, body_hash};
    char *canon = sigv4_canonical_request(&r, c.normalize, NULL);
    CHECK(eq("header canonical request", dir, canon, slurp(dir, "header-canonical-request.txt")));
    char scope[128];
    snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", date, c.region, c.service);
    char *sts = sigv4_string_to_sign(amzdate, scope, canon);
    CHECK(eq("header string to sign", dir, sts, slurp(dir, "header-string-to-sign.txt")));
    char sig[65];
    char *auth = sigv4_authorization(&r, &c, &k, sig);
    CHECK(eq("header signature", dir, sig, slurp(dir, "header-signature.txt")));
    char *want_req = slurp(dir, "header-signed-request.txt");
    CHECK(want_req && strstr(want_req, auth));
    free(want_req);
    free(auth);
    free(sts);
    free(canon);

    /* query signing */
    struct sigv4_creds kq = k;
    if (omit_token)
        kq.token = NULL;
    struct sigv4_req rq = {method, target, query, h, n, body_hash};
    char *q = sigv4_presign_query(&rq, &c, &kq, expires);
    char *sigpos = strstr(q, "&X-Amz-Signature=");
    CHECK(sigpos != NULL);
    if (sigpos) {
        CHECK(eq("query signature", dir, sigpos + 17, slurp(dir, "query-signature.txt")));
        *sigpos = '\0';
        rq.query = q;
        char *qc = sigv4_canonical_request(&rq, c.normalize, NULL);
        CHECK(eq("query canonical request", dir, qc, slurp(dir, "query-canonical-request.txt")));
        free(qc);
    }
    free(q);
    for (int i = 0; i < n; i++) {
        free((char *)h[i].name);
        free(vals[i]);
    }
    free(method);
    free(target);
    free(req);
    json_decref(ctx);
}

/* Signing keys are remembered per thread: a remembered key is only ever
 * returned for the same secret, date, region and service. */
static void key_memo(void)
{
    uint8_t a[32], b[32], again[32];
    sigv4_signing_key("secret-one", "20260101", "us-east-1", "s3", a);
    sigv4_signing_key("secret-two", "20260101", "us-east-1", "s3", b);
    CHECK(memcmp(a, b, 32) != 0);
    const char *dates[] = {"20260102", "20260103", "20260104", "20260105", "20260106"};
    uint8_t d[5][32];
    for (int i = 0; i < 5; i++) /* more than the memo holds */
        sigv4_signing_key("secret-one", dates[i], "us-east-1", "s3", d[i]);
    sigv4_signing_key("secret-one", "20260101", "us-east-1", "s3", again);
    CHECK(memcmp(a, again, 32) == 0);
    sigv4_signing_key("secret-one", "20260101", "us-east-2", "s3", again);
    CHECK(memcmp(a, again, 32) != 0);
    sigv4_signing_key("secret-one", "20260101", "us-east-1", "s3x", again);
    CHECK(memcmp(a, again, 32) != 0);
    /* "ab" + "c" must not pass for "a" + "bc" */
    uint8_t x[32], y[32];
    sigv4_signing_key("ab", "c", "r", "s", x);
    sigv4_signing_key("a", "bc", "r", "s", y);
    CHECK(memcmp(x, y, 32) != 0);
    for (int i = 0; i < 5; i++) {
        sigv4_signing_key("secret-one", dates[i], "us-east-1", "s3", again);
        CHECK(memcmp(d[i], again, 32) == 0);
    }
}

int main(void)
{
    key_memo();
    const char *root = getenv("SHOAL_SIGV4_VECTORS");
    if (!root)
        root = "test/data/sigv4"; /* run-unit.sh runs from the repository root */
    DIR *d = opendir(root);
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "test vectors not found at %s\n", root);
        return check_done("test_sigv4");
    }
    struct dirent *e;
    int cases = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || e->d_type != DT_DIR)
            continue;
        char *dir = xasprintf("%s/%s", root, e->d_name);
        run_case(dir);
        free(dir);
        cases++;
    }
    closedir(d);
    printf("sigv4: %d cases\n", cases);
    CHECK(cases >= 30);
    return check_done("test_sigv4");
}
