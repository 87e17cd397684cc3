/* s3auth: SigV4 header, presigned and streaming-chunk verification, and
 * SigV2, against AWS's published examples and against Shoal's own signer;
 * s3xml: the request-body reader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "http.h"
#include "s3auth.h"
#include "s3xml.h"
#include "sigv4.h"
#include "util.h"

#define EX_AK "AKIAIOSFODNN7EXAMPLE"
#define EX_SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static struct s3auth keys(void)
{
    char *list[] = {"OTHER:x", EX_AK ":" EX_SK};
    struct s3auth a;
    char err[128];
    CHECK(s3auth_init(&a, list, 2, err, sizeof(err)) == 0);
    return a;
}

static time_t at(const char *amzdate)
{
    struct tm tm = {0};
    strptime(amzdate, "%Y%m%dT%H%M%SZ", &tm);
    return timegm(&tm);
}

static int check(struct s3auth *a, struct http_req *r, time_t now, struct s3auth_result *res,
                 const char **code)
{
    char msg[300];
    enum s3e e;
    int st = s3auth_check(a, r, now, res, &e, msg, sizeof(msg));
    *code = st ? err_s3_name(e) : "";
    return st;
}

/* AWS's example of a chunked upload (PUT examplebucket/chunkObject.txt,
 * 66560 bytes of 'a' in chunks of 64 KiB, 1 KiB and 0). */
static void test_streaming_example(void)
{
    struct s3auth a = keys();
    struct http_hdr h[] = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=" EX_AK "/20130524/us-east-1/s3/aws4_request,"
         "SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
         "x-amz-decoded-content-length;x-amz-storage-class,"
         "Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"Content-Length", "66824"},
    };
    struct http_req r = {.method_name = "PUT", .target = "/examplebucket/chunkObject.txt",
                         .query = "", .hdrs = h, .n_hdrs = (int)ARRAY_LEN(h)};
    struct s3auth_result res;
    const char *code;
    CHECK(check(&a, &r, at("20130524T000000Z"), &res, &code) == 0);
    CHECK(!strcmp(res.payload, S3AUTH_STREAMING) && !strcmp(res.access, EX_AK));
    char *data = xmalloc(65536);
    memset(data, 'a', 65536);
    char sha[65], sig[65];
    sigv4_sha256_hex(data, 65536, sha);
    s3auth_chunk_sig(&res, res.seed_sig, sha, sig);
    CHECK(!strcmp(sig, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"));
    char prev[65];
    memcpy(prev, sig, 65);
    sigv4_sha256_hex(data, 1024, sha);
    s3auth_chunk_sig(&res, prev, sha, sig);
    CHECK(!strcmp(sig, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"));
    memcpy(prev, sig, 65);
    s3auth_chunk_sig(&res, prev, SIGV4_EMPTY_SHA256, sig);
    CHECK(!strcmp(sig, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"));
    free(data);
    /* a day later the same request is too far off */
    CHECK(check(&a, &r, at("20130525T000000Z"), &res, &code) == 403 &&
          !strcmp(code, "RequestTimeTooSkewed"));
    s3auth_free(&a);
}

/* Requests signed by sigv4.c (the backend client) verify here. */
static void test_round_trip(void)
{
    struct s3auth a = keys();
    time_t now = at("20260101T120000Z");
    char amzdate[17], date[9];
    sigv4_dates(now, amzdate, date);
    struct sigv4_hdr sh[] = {{"host", "127.0.0.1:8080"}, {"x-amz-date", amzdate},
                             {"x-amz-content-sha256", SIGV4_UNSIGNED}};
    struct sigv4_req sr = {"GET", "/s3/b/a%20b/c", "list-type=2&prefix=x", sh, 3,
                           SIGV4_UNSIGNED};
    struct sigv4_ctx c = {"eu-west-1", "s3", now, 0};
    struct sigv4_creds k = {EX_AK, EX_SK, NULL};
    char *auth = sigv4_authorization(&sr, &c, &k, NULL);
    struct http_hdr h[] = {{"Host", "127.0.0.1:8080"}, {"X-Amz-Date", amzdate},
                           {"x-amz-content-sha256", SIGV4_UNSIGNED}, {"Authorization", auth}};
    struct http_req r = {.method_name = "GET", .target = "/s3/b/a%20b/c?list-type=2&prefix=x",
                         .query = "list-type=2&prefix=x", .hdrs = h, .n_hdrs = 4};
    struct s3auth_result res;
    const char *code;
    CHECK(check(&a, &r, now + 60, &res, &code) == 0 && !strcmp(res.payload, SIGV4_UNSIGNED));
    r.query = "list-type=2&prefix=y"; /* a changed query */
    CHECK(check(&a, &r, now, &res, &code) == 403 && !strcmp(code, "SignatureDoesNotMatch"));
    r.query = "list-type=2&prefix=x";
    h[0].value = "evil:1";
    CHECK(check(&a, &r, now, &res, &code) == 403 && !strcmp(code, "SignatureDoesNotMatch"));
    h[0].value = "127.0.0.1:8080";
    r.method_name = "DELETE";
    CHECK(check(&a, &r, now, &res, &code) == 403);
    r.method_name = "GET";
    free(auth);

    /* unknown key, malformed header, missing date, no auth at all */
    struct sigv4_creds other = {"NOPE", EX_SK, NULL};
    auth = sigv4_authorization(&sr, &c, &other, NULL);
    h[3].value = auth;
    CHECK(check(&a, &r, now, &res, &code) == 403 && !strcmp(code, "InvalidAccessKeyId"));
    free(auth);
    h[3].value = "AWS4-HMAC-SHA256 Credential=x";
    CHECK(check(&a, &r, now, &res, &code) == 400 && !strcmp(code, "AuthorizationHeaderMalformed"));
    r.n_hdrs = 3;
    CHECK(check(&a, &r, now, &res, &code) == 403 && !strcmp(code, "AccessDenied"));
    s3auth_free(&a);

    /* no keys: anonymous */
    struct s3auth none;
    char err[64];
    CHECK(s3auth_init(&none, NULL, 0, err, sizeof(err)) == 0);
    CHECK(check(&none, &r, now, &res, &code) == 0 && res.anonymous);
    s3auth_free(&none);
    char *bad[] = {"no-colon"};
    CHECK(s3auth_init(&none, bad, 1, err, sizeof(err)) == -1 && strstr(err, "no-colon"));
}

static void test_presigned(void)
{
    struct s3auth a = keys();
    time_t now = at("20260101T120000Z");
    struct sigv4_hdr sh[] = {{"host", "h:1"}};
    struct sigv4_req sr = {"GET", "/s3/b/k", "", sh, 1, SIGV4_UNSIGNED};
    struct sigv4_ctx c = {"us-east-1", "s3", now, 0};
    struct sigv4_creds k = {EX_AK, EX_SK, NULL};
    char *q = sigv4_presign_query(&sr, &c, &k, 300);
    char *target = xasprintf("/s3/b/k?%s", q);
    struct http_hdr h[] = {{"Host", "h:1"}};
    struct http_req r = {.method_name = "GET", .target = target, .query = q, .hdrs = h,
                         .n_hdrs = 1};
    struct s3auth_result res;
    const char *code;
    CHECK(check(&a, &r, now + 299, &res, &code) == 0);
    CHECK(check(&a, &r, now + 301, &res, &code) == 403 && !strcmp(code, "AccessDenied"));
    r.method_name = "PUT";
    CHECK(check(&a, &r, now, &res, &code) == 403 && !strcmp(code, "SignatureDoesNotMatch"));
    free(target);
    free(q);
    s3auth_free(&a);
}

/* SigV2: AWS's "GET object" example. */
static void test_v2_example(void)
{
    struct s3auth a = keys();
    struct http_hdr h[] = {
        {"Host", "johnsmith.s3.amazonaws.com"},
        {"Date", "Tue, 27 Mar 2007 19:36:42 +0000"},
        {"Authorization", "AWS " EX_AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU="},
    };
    struct http_req r = {.method_name = "GET", .target = "/johnsmith/photos/puppy.jpg",
                         .query = "", .hdrs = h, .n_hdrs = 3};
    struct s3auth_result res;
    const char *code;
    struct tm tm = {0};
    strptime("2007-03-27 19:36:42", "%Y-%m-%d %H:%M:%S", &tm);
    time_t now = timegm(&tm);
    CHECK(check(&a, &r, now, &res, &code) == 0);
    h[2].value = "AWS " EX_AK ":AAAAs1WEIj+Ydj0vQ697zp+IXMU=";
    CHECK(check(&a, &r, now, &res, &code) == 403 && !strcmp(code, "SignatureDoesNotMatch"));
    /* a date before the epoch is no date (AccessDenied), one far off is skewed */
    h[1].value = "Tue, 07 Jul 1950 21:53:04 GMT";
    CHECK(check(&a, &r, now, &res, &code) == 403 && !strcmp(code, "AccessDenied"));
    h[1].value = "Tue, 07 Jul 2010 21:53:04 GMT";
    CHECK(check(&a, &r, now, &res, &code) == 403 && !strcmp(code, "RequestTimeTooSkewed"));
    s3auth_free(&a);
}

static int count_cb(void *arg, char **f, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    int *n = arg;
    if (f[0] && f[1] && !strcmp(f[0], "1") && !strcmp(f[1], "\"a&b\""))
        (*n)++;
    return 0;
}

static void test_xml(void)
{
    static const struct s3xml_spec spec = {"CompleteMultipartUpload", "Part",
                                           {"PartNumber", "ETag"}, 2, "Quiet", 0};
    char err[200], flag[S3XML_FLAG_MAX];
    int hits = 0;
    const char *ok = "<?xml version=\"1.0\"?><CompleteMultipartUpload "
                     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
                     "<Part><PartNumber>1</PartNumber><ETag>&quot;a&amp;b&quot;</ETag></Part>"
                     "<Part><PartNumber>1</PartNumber><ETag>\"a&amp;b\"</ETag></Part>"
                     "</CompleteMultipartUpload>";
    CHECK(s3xml_records(ok, strlen(ok), &spec, count_cb, &hits, flag, err, sizeof(err)) == 2);
    CHECK(hits == 2 && !strcmp(flag, "true"));
    const char *bad[] = {"", "<Complete", "<Other/>", "<CompleteMultipartUpload><Part>",
                         "<!DOCTYPE d [<!ENTITY e 'x'>]><CompleteMultipartUpload/>"};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        err[0] = '\0';
        CHECK(s3xml_records(bad[i], strlen(bad[i]), &spec, count_cb, &hits, NULL, err,
                            sizeof(err)) == -1 && err[0]);
    }
    struct gbuf big = {0};
    gbuf_str(&big, "<CompleteMultipartUpload><Part><ETag>");
    for (int i = 0; i < S3XML_TEXT_MAX + 1; i++)
        gbuf_add(&big, "x", 1);
    gbuf_str(&big, "</ETag></Part></CompleteMultipartUpload>");
    CHECK(s3xml_records(big.p, big.n, &spec, count_cb, &hits, NULL, err, sizeof(err)) == -1);
    gbuf_free(&big);
}

/* A SignedHeaders list naming a header more often than the request has
 * headers (it once overran the array of signed headers) is refused. */
static void test_signed_headers_twice(void)
{
    struct s3auth a = keys();
    time_t now = at("20260101T120000Z");
    struct http_hdr h[] = {
        {"Host", "h"},
        {"x-amz-date", "20260101T120000Z"},
        {"x-amz-content-sha256", SIGV4_UNSIGNED},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=" EX_AK "/20260101/us-east-1/s3/aws4_request,"
         "SignedHeaders=host;host;host;host;host;host;x-amz-date,"
         "Signature=0000000000000000000000000000000000000000000000000000000000000000"},
    };
    struct http_req r = {.method_name = "GET", .target = "/b/o", .query = "", .hdrs = h,
                         .n_hdrs = (int)ARRAY_LEN(h)};
    struct s3auth_result res;
    char msg[300];
    enum s3e e;
    CHECK(s3auth_check(&a, &r, now, &res, &e, msg, sizeof(msg)) == 403 &&
          !strcmp(err_s3_name(e), "SignatureDoesNotMatch") && strstr(msg, "twice"));
    s3auth_free(&a);
}

int main(void)
{
    test_streaming_example();
    test_round_trip();
    test_signed_headers_twice();
    test_presigned();
    test_v2_example();
    test_xml();
    return check_done("test_s3auth");
}
