/* libFuzzer target for the S3 request verifier (common/s3/s3auth.c): SigV4
 * Authorization headers and presigned queries, SigV2 headers and queries,
 * all parsed from client bytes, against a configured key at a fixed time.
 *
 * Input: a flags byte, then text lines: "METHOD TARGET", then headers as
 * "Name: value" (a header is dropped unless its name is HTTP token
 * characters and its value what the server hands on: no control bytes,
 * no white space at either end).
 * Flags: bit 0 answers as the S3 API (x-amz-content-sha256 required),
 * else as the native API; bit 1 has the request signed first with Shoal's
 * own signer (sigv4.c) and the key, so the verifier's success path is
 * explored too, and a refusal of what the signer signed is a failure:
 * signer and verifier must agree. Built and run by `make fuzz`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "s3.h"
#include "s3auth.h"
#include "sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ACCESS "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define NOW 1440938160 /* 2015-08-30T12:36:00Z, the AWS examples' time */
#define HDRS_MAX 24

static int tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int method_id(const char *m)
{
    static const struct {
        const char *name;
        int id;
    } ids[] = {{"DELETE", HTTP_M_DELETE}, {"GET", HTTP_M_GET}, {"HEAD", HTTP_M_HEAD},
               {"POST", HTTP_M_POST},     {"PUT", HTTP_M_PUT}};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        if (!strcmp(m, ids[i].name))
            return ids[i].id;
    return HTTP_M_OTHER;
}

/* Sign r with Shoal's signer: x-amz-date set to the signing time (the
 * signer's contract), x-amz-content-sha256 when absent, then Authorization
 * over every header. The values set are written to extra, the
 * Authorization's to *auth (malloc'd). */
static void sign(struct http_req *r, struct http_hdr *h, char extra[2][80], char **auth)
{
    char date[9];
    sigv4_dates(NOW, extra[0], date);
    int dated = 0;
    for (int i = 0; i < r->n_hdrs; i++)
        if (!strcasecmp(h[i].name, "x-amz-date")) {
            h[i].value = extra[0];
            dated = 1;
        }
    if (!dated)
        h[r->n_hdrs++] = (struct http_hdr){"x-amz-date", extra[0]};
    if (!http_req_header(r, "x-amz-content-sha256")) {
        snprintf(extra[1], 80, "%s", SIGV4_UNSIGNED);
        h[r->n_hdrs++] = (struct http_hdr){"x-amz-content-sha256", extra[1]};
    }
    struct sigv4_hdr sh[HDRS_MAX + 3];
    for (int i = 0; i < r->n_hdrs; i++)
        sh[i] = (struct sigv4_hdr){h[i].name, h[i].value};
    const char *q = strchr(r->target, '?');
    char *path = strndup(r->target, q ? (size_t)(q - r->target) : strlen(r->target));
    const char *ph = http_req_header(r, "x-amz-content-sha256");
    struct sigv4_req sr = {.method = r->method_name, .path = path, .query = r->query,
                           .hdrs = sh, .n_hdrs = r->n_hdrs, .payload_hash = ph};
    struct sigv4_ctx ctx = {.region = "us-east-1", .service = "s3", .now = NOW};
    struct sigv4_creds k = {.access_key = ACCESS, .secret_key = SECRET};
    *auth = sigv4_authorization(&sr, &ctx, &k, NULL);
    h[r->n_hdrs++] = (struct http_hdr){"Authorization", *auth};
    free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct s3auth a;
    if (!a.n) {
        char *keys[] = {ACCESS ":" SECRET, "AK2:second-secret"};
        char err[128];
        if (s3auth_init(&a, keys, 2, err, sizeof(err)))
            abort();
    }
    if (size < 1)
        return 0;
    int flags = data[0];
    char *text = strndup((const char *)data + 1, size - 1);

    /* request line */
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    char *sp = line ? strchr(line, ' ') : NULL;
    if (!sp || sp == line) {
        free(text);
        return 0;
    }
    *sp = '\0';
    char *method = line, *target = sp + 1;
    if (target[0] != '/') {
        free(text);
        return 0;
    }
    struct http_hdr h[HDRS_MAX + 3];
    struct http_req r = {.method = method_id(method), .method_name = method, .target = target};
    if (flags & 1)
        r.on_error = s3_error_reply;
    char *qm = strchr(target, '?');
    size_t plen = qm ? (size_t)(qm - target) : strlen(target);
    r.query = qm ? qm + 1 : "";
    char *path = malloc(plen + 1);
    int d = http_pct_decode(target, plen, path);
    if (d < 0) {
        free(path);
        free(text);
        return 0;
    }
    r.path = path;
    r.path_len = (size_t)d;

    /* headers: only those the server would have let through */
    while (r.n_hdrs < HDRS_MAX && (line = strtok_r(NULL, "\n", &save))) {
        char *colon = strchr(line, ':');
        if (!colon || colon == line)
            continue;
        *colon = '\0';
        /* values arrive trimmed of white space at either end */
        char *value = colon + 1 + strspn(colon + 1, " \t");
        size_t vl = strlen(value);
        int ok = !vl || (value[vl - 1] != ' ' && value[vl - 1] != '\t');
        for (char *c = line; *c; c++)
            ok &= tchar((unsigned char)*c);
        for (char *c = value; *c; c++)
            ok &= (unsigned char)*c >= 0x20 || *c == '\t';
        if (ok)
            h[r.n_hdrs++] = (struct http_hdr){line, value};
    }
    r.hdrs = h;

    char extra[2][80], *auth = NULL;
    /* (a presigned or SigV2 query would be verified instead) */
    int signed_here = (flags & 2) && !http_req_header(&r, "Authorization") &&
                      !strstr(r.query, "X-Amz-") && !strstr(r.query, "AWSAccessKeyId");
    if (signed_here)
        sign(&r, h, extra, &auth);

    struct s3auth_result res;
    enum s3e e = S3E_COUNT;
    char msg[512];
    int st = s3auth_check(&a, &r, NOW, &res, &e, msg, sizeof(msg));
    const char *code = e < S3E_COUNT ? err_s3_name(e) : NULL;
    if (st == 0) {
        char out[65];
        if (!res.access[0])
            abort();
        s3auth_chunk_sig(&res, res.seed_sig, SIGV4_EMPTY_SHA256, out);
    } else if (st < 400 || st > 403 || !code || st != err_s3_status(e)) {
        abort();
    } else if (signed_here && !strcmp(code, "SignatureDoesNotMatch")) {
        fprintf(stderr, "fuzz_s3auth: refused what sigv4.c signed: %s\n", msg);
        abort();
    }
    free(auth);
    free(path);
    free(text);
    return 0;
}
