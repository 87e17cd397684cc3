/* err: errno -> status, the S3 code table's rows, the status -> default
 * code mapping, and err_reply's answer in S3 mode. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "err.h"
#include "http.h"
#include "util.h"

static void test_status(void)
{
    CHECK(err_status(-ENOENT) == 404);
    CHECK(err_status(-ENOSPC) == 507);
    CHECK(err_status(-EDQUOT) == 507);
    CHECK(err_status(-EIO) == 500);
    CHECK(err_status(-EACCES) == 500);
    CHECK(err_status(0) == 500);
    CHECK(err_status(ENOENT) == 500); /* a positive errno is not a failure's rc */
}

static void test_rows(void)
{
    for (int e = 0; e < S3E_COUNT; e++) {
        const char *c = err_s3_name((enum s3e)e);
        int st = err_s3_status((enum s3e)e);
        CHECK(c && c[0]);
        CHECK(st >= 400 && st <= 599);
        if (!c || !c[0] || st < 400 || st > 599)
            fprintf(stderr, "row %d: %d %s\n", e, st, c ? c : "(null)");
        int twice = 0;
        for (int f = 0; f < e; f++)
            twice += c && !strcmp(c, err_s3_name((enum s3e)f));
        CHECK(twice == 0);
    }
    /* a few rows by name, as the call sites rely on them */
    CHECK(err_s3_status(S3E_NO_SUCH_BUCKET) == 404 &&
          !strcmp(err_s3_name(S3E_NO_SUCH_BUCKET), "NoSuchBucket"));
    CHECK(err_s3_status(S3E_BUCKET_NOT_EMPTY) == 409 &&
          !strcmp(err_s3_name(S3E_BUCKET_NOT_EMPTY), "BucketNotEmpty"));
    CHECK(err_s3_status(S3E_ENTITY_TOO_LARGE) == 400);
    CHECK(err_s3_status(S3E_KEY_TOO_LONG) == 400 &&
          !strcmp(err_s3_name(S3E_KEY_TOO_LONG), "KeyTooLongError"));
    CHECK(err_s3_status(S3E_MALFORMED_ACL) == 400 &&
          !strcmp(err_s3_name(S3E_MALFORMED_ACL), "MalformedACLError"));
    CHECK(!strcmp(err_s3_name(S3E_X_AMZ_CONTENT_SHA256_MISMATCH), "XAmzContentSHA256Mismatch"));
    CHECK(!strcmp(err_s3_name(S3E_REQUEST_HEADER_TOO_LARGE), "RequestHeaderSectionTooLarge"));
}

static void test_default_code(void)
{
    static const struct {
        int status;
        const char *code;
    } want[] = {
        {400, "InvalidRequest"},
        {403, "AccessDenied"},
        {404, "NoSuchKey"},
        {405, "MethodNotAllowed"},
        {409, "OperationAborted"},
        {411, "MissingContentLength"},
        {412, "PreconditionFailed"},
        {413, "EntityTooLarge"},
        {416, "InvalidRange"},
        {431, "RequestHeaderSectionTooLarge"},
        {501, "NotImplemented"},
        {502, "ServiceUnavailable"},
        {503, "SlowDown"},
        {504, "ServiceUnavailable"},
        {507, "InsufficientStorage"},
        /* unlisted */
        {401, "InvalidRequest"},
        {418, "InvalidRequest"},
        {499, "InvalidRequest"},
        {500, "InternalError"},
        {505, "InternalError"},
        {599, "InternalError"},
        {0, "InvalidRequest"},
    };
    for (size_t i = 0; i < ARRAY_LEN(want); i++) {
        const char *c = err_s3_code(want[i].status);
        CHECK(c && !strcmp(c, want[i].code));
        if (!c || strcmp(c, want[i].code))
            fprintf(stderr, "status %d: %s, want %s\n", want[i].status, c ? c : "(null)",
                    want[i].code);
    }
}

/* err_reply sets the code and hands the status and message to the
 * request's error formatter (here a recorder instead of S3 XML). */
static int seen_status;
static char seen_msg[64];

static void record(struct http_req *r, int status, const char *msg)
{
    (void)r;
    seen_status = status;
    snprintf(seen_msg, sizeof(seen_msg), "%s", msg);
}

static void test_reply(void)
{
    struct http_req r = {.method_name = "GET", .target = "/b/k", .on_error = record};
    err_reply(&r, S3E_NO_SUCH_UPLOAD, "upload %s", "u1");
    CHECK(seen_status == 404 && !strcmp(seen_msg, "upload u1") &&
          !strcmp(r.err_code, "NoSuchUpload"));
    err_reply_status(&r, 413, S3E_ENTITY_TOO_LARGE, "over %d", 5);
    CHECK(seen_status == 413 && !strcmp(seen_msg, "over 5") &&
          !strcmp(r.err_code, "EntityTooLarge"));
}

int main(void)
{
    test_status();
    test_rows();
    test_default_code();
    test_reply();
    return check_done("test_err");
}
