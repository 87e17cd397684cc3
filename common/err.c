/*
 * err: the errno -> HTTP status -> S3 code tables (see err.h). Two small
 * tables and a switch, kept apart from the S3 XML (s3.c) so that a
 * handler of either API names its errors the same way.
 */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "http.h"
#include "util.h"

int err_status(int rc)
{
    static const struct {
        int rc, status;
    } rows[] = {
        {-ENOENT, 404},
        {-ENOSPC, 507},
        {-EDQUOT, 507},
        {-EEXIST, 409},          /* a copy the store must keep (not yet written back) */
    };
    for (size_t i = 0; i < ARRAY_LEN(rows); i++)
        if (rows[i].rc == rc)
            return rows[i].status;
    return 500;
}

static const struct {
    int status;
    const char *code;
} s3e_rows[S3E_COUNT] = {
    [S3E_ACCESS_DENIED] = {403, "AccessDenied"},
    [S3E_AUTH_HEADER_MALFORMED] = {400, "AuthorizationHeaderMalformed"},
    [S3E_AUTH_QUERY_ERROR] = {400, "AuthorizationQueryParametersError"},
    [S3E_BAD_DIGEST] = {400, "BadDigest"},
    [S3E_BAD_REQUEST] = {400, "BadRequest"},
    [S3E_BUCKET_ALREADY_EXISTS] = {409, "BucketAlreadyExists"},
    [S3E_BUCKET_ALREADY_OWNED_BY_YOU] = {409, "BucketAlreadyOwnedByYou"},
    [S3E_BUCKET_NOT_EMPTY] = {409, "BucketNotEmpty"},
    [S3E_CORS_RESPONSE] = {403, "CORSResponse"},
    [S3E_ENTITY_TOO_LARGE] = {400, "EntityTooLarge"},
    [S3E_ENTITY_TOO_SMALL] = {400, "EntityTooSmall"},
    [S3E_INCOMPLETE_BODY] = {400, "IncompleteBody"},
    [S3E_INSUFFICIENT_STORAGE] = {507, "InsufficientStorage"},
    [S3E_INTERNAL_ERROR] = {500, "InternalError"},
    [S3E_INVALID_ACCESS_KEY_ID] = {403, "InvalidAccessKeyId"},
    [S3E_INVALID_ARGUMENT] = {400, "InvalidArgument"},
    [S3E_INVALID_BUCKET_NAME] = {400, "InvalidBucketName"},
    [S3E_INVALID_DIGEST] = {400, "InvalidDigest"},
    [S3E_INVALID_OBJECT_NAME] = {400, "InvalidObjectName"},
    [S3E_INVALID_PART] = {400, "InvalidPart"},
    [S3E_INVALID_PART_NUMBER] = {400, "InvalidPartNumber"},
    [S3E_INVALID_PART_ORDER] = {400, "InvalidPartOrder"},
    [S3E_INVALID_RANGE] = {416, "InvalidRange"},
    [S3E_INVALID_REQUEST] = {400, "InvalidRequest"},
    [S3E_INVALID_TAG] = {400, "InvalidTag"},
    [S3E_KEY_TOO_LONG] = {400, "KeyTooLongError"},
    [S3E_MALFORMED_ACL] = {400, "MalformedACLError"},
    [S3E_MALFORMED_XML] = {400, "MalformedXML"},
    [S3E_METADATA_TOO_LARGE] = {400, "MetadataTooLarge"},
    [S3E_METHOD_NOT_ALLOWED] = {405, "MethodNotAllowed"},
    [S3E_MISSING_CONTENT_LENGTH] = {411, "MissingContentLength"},
    [S3E_MISSING_SECURITY_HEADER] = {400, "MissingSecurityHeader"},
    [S3E_NO_SUCH_BUCKET] = {404, "NoSuchBucket"},
    [S3E_NO_SUCH_KEY] = {404, "NoSuchKey"},
    [S3E_NO_SUCH_TAG_SET] = {404, "NoSuchTagSet"},
    [S3E_NO_SUCH_CORS] = {404, "NoSuchCORSConfiguration"},
    [S3E_NO_SUCH_PAB] = {404, "NoSuchPublicAccessBlockConfiguration"},
    [S3E_NO_OWNERSHIP] = {404, "OwnershipControlsNotFoundError"},
    [S3E_ACL_NOT_SUPPORTED] = {400, "AccessControlListNotSupported"},
    [S3E_ACL_WITH_OWNERSHIP] = {400, "InvalidBucketAclWithObjectOwnership"},
    [S3E_NO_SUCH_UPLOAD] = {404, "NoSuchUpload"},
    [S3E_NO_SUCH_VERSION] = {404, "NoSuchVersion"},
    [S3E_NOT_IMPLEMENTED] = {501, "NotImplemented"},
    [S3E_OPERATION_ABORTED] = {409, "OperationAborted"},
    [S3E_PRECONDITION_FAILED] = {412, "PreconditionFailed"},
    [S3E_REQUEST_HEADER_TOO_LARGE] = {431, "RequestHeaderSectionTooLarge"},
    [S3E_REQUEST_TIME_TOO_SKEWED] = {403, "RequestTimeTooSkewed"},
    [S3E_SERVICE_UNAVAILABLE] = {503, "ServiceUnavailable"},
    [S3E_SIGNATURE_DOES_NOT_MATCH] = {403, "SignatureDoesNotMatch"},
    [S3E_SLOW_DOWN] = {503, "SlowDown"},
    [S3E_UNEXPECTED_CONTENT] = {400, "UnexpectedContent"},
    [S3E_UNRESOLVABLE_EMAIL] = {400, "UnresolvableGrantByEmailAddress"},
    [S3E_X_AMZ_CONTENT_SHA256_MISMATCH] = {400, "XAmzContentSHA256Mismatch"},
};

int err_s3_status(enum s3e e)
{
    return s3e_rows[e].status;
}

const char *err_s3_name(enum s3e e)
{
    return s3e_rows[e].code;
}

static enum s3e default_row(int status)
{
    switch (status) {
    case 400: return S3E_INVALID_REQUEST;
    case 403: return S3E_ACCESS_DENIED;
    case 404: return S3E_NO_SUCH_KEY;
    case 405: return S3E_METHOD_NOT_ALLOWED;
    case 409: return S3E_OPERATION_ABORTED;
    case 411: return S3E_MISSING_CONTENT_LENGTH;
    case 412: return S3E_PRECONDITION_FAILED;
    case 413: return S3E_ENTITY_TOO_LARGE;
    case 416: return S3E_INVALID_RANGE;
    case 431: return S3E_REQUEST_HEADER_TOO_LARGE;
    case 501: return S3E_NOT_IMPLEMENTED;
    case 502:
    case 504: return S3E_SERVICE_UNAVAILABLE;
    case 503: return S3E_SLOW_DOWN;
    case 507: return S3E_INSUFFICIENT_STORAGE;
    default: return status >= 500 ? S3E_INTERNAL_ERROR : S3E_INVALID_REQUEST;
    }
}

const char *err_s3_code(int status)
{
    return err_s3_name(default_row(status));
}

/* The message is formatted here, into the 512 bytes http_reply_error
 * would format it into itself. */
static void vreply(struct http_req *r, int status, enum s3e e, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    r->err_code = err_s3_name(e);
    http_reply_error(r, status, "%s", msg);
}

void err_reply(struct http_req *r, enum s3e e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreply(r, err_s3_status(e), e, fmt, ap);
    va_end(ap);
}

void err_reply_status(struct http_req *r, int status, enum s3e e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreply(r, status, e, fmt, ap);
    va_end(ap);
}
