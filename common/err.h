/*
 * err: Shoal's one error convention, shared by the native API and the S3
 * API. Functions fail with a negative errno; err_status turns it into the
 * HTTP status to answer; an S3 error is named by its enum s3e row, which
 * gives both its status and its <Code>, so the two cannot disagree. A
 * status answered without a row (a failure's errno, a status passed on
 * from another node) takes the code err_s3_code says fits it.
 *
 * Threads: any (the tables are constant; err_reply on r's worker).
 */
#ifndef SHOAL_ERR_H
#define SHOAL_ERR_H

struct http_req;

/* The HTTP status for a failure's negative errno: -ENOENT 404, -ENOSPC
 * and -EDQUOT 507, anything else 500. */
int err_status(int rc);

/* The S3 error codes Shoal answers with; err.c's table gives each one's
 * status and code string. */
enum s3e {
    S3E_ACCESS_DENIED,                  /* 403 AccessDenied */
    S3E_AUTH_HEADER_MALFORMED,          /* 400 AuthorizationHeaderMalformed */
    S3E_AUTH_QUERY_ERROR,               /* 400 AuthorizationQueryParametersError */
    S3E_BAD_DIGEST,                     /* 400 BadDigest */
    S3E_BAD_REQUEST,                    /* 400 BadRequest */
    S3E_BUCKET_ALREADY_EXISTS,          /* 409 BucketAlreadyExists */
    S3E_BUCKET_ALREADY_OWNED_BY_YOU,    /* 409 BucketAlreadyOwnedByYou */
    S3E_BUCKET_NOT_EMPTY,               /* 409 BucketNotEmpty */
    S3E_CORS_RESPONSE,                  /* 403 CORSResponse */
    S3E_ENTITY_TOO_LARGE,               /* 400 EntityTooLarge */
    S3E_ENTITY_TOO_SMALL,               /* 400 EntityTooSmall */
    S3E_INCOMPLETE_BODY,                /* 400 IncompleteBody */
    S3E_INSUFFICIENT_STORAGE,           /* 507 InsufficientStorage */
    S3E_INTERNAL_ERROR,                 /* 500 InternalError */
    S3E_INVALID_ACCESS_KEY_ID,          /* 403 InvalidAccessKeyId */
    S3E_INVALID_ARGUMENT,               /* 400 InvalidArgument */
    S3E_INVALID_BUCKET_NAME,            /* 400 InvalidBucketName */
    S3E_INVALID_DIGEST,                 /* 400 InvalidDigest */
    S3E_INVALID_OBJECT_NAME,            /* 400 InvalidObjectName */
    S3E_INVALID_PART,                   /* 400 InvalidPart */
    S3E_INVALID_PART_NUMBER,            /* 400 InvalidPartNumber */
    S3E_INVALID_PART_ORDER,             /* 400 InvalidPartOrder */
    S3E_INVALID_RANGE,                  /* 416 InvalidRange */
    S3E_INVALID_REQUEST,                /* 400 InvalidRequest */
    S3E_INVALID_TAG,                    /* 400 InvalidTag */
    S3E_KEY_TOO_LONG,                   /* 400 KeyTooLongError */
    S3E_MALFORMED_ACL,                  /* 400 MalformedACLError */
    S3E_MALFORMED_XML,                  /* 400 MalformedXML */
    S3E_METADATA_TOO_LARGE,             /* 400 MetadataTooLarge */
    S3E_METHOD_NOT_ALLOWED,             /* 405 MethodNotAllowed */
    S3E_MISSING_CONTENT_LENGTH,         /* 411 MissingContentLength */
    S3E_MISSING_SECURITY_HEADER,        /* 400 MissingSecurityHeader */
    S3E_NO_SUCH_BUCKET,                 /* 404 NoSuchBucket */
    S3E_NO_SUCH_KEY,                    /* 404 NoSuchKey */
    S3E_NO_SUCH_TAG_SET,                /* 404 NoSuchTagSet */
    S3E_NO_SUCH_CORS,                   /* 404 NoSuchCORSConfiguration */
    S3E_NO_SUCH_PAB,                    /* 404 NoSuchPublicAccessBlockConfiguration */
    S3E_NO_OWNERSHIP,                   /* 404 OwnershipControlsNotFoundError */
    S3E_ACL_NOT_SUPPORTED,              /* 400 AccessControlListNotSupported */
    S3E_ACL_WITH_OWNERSHIP,             /* 400 InvalidBucketAclWithObjectOwnership */
    S3E_NO_SUCH_UPLOAD,                 /* 404 NoSuchUpload */
    S3E_NO_SUCH_VERSION,                /* 404 NoSuchVersion */
    S3E_NOT_IMPLEMENTED,                /* 501 NotImplemented */
    S3E_OPERATION_ABORTED,              /* 409 OperationAborted */
    S3E_PRECONDITION_FAILED,            /* 412 PreconditionFailed */
    S3E_REQUEST_HEADER_TOO_LARGE,       /* 431 RequestHeaderSectionTooLarge */
    S3E_REQUEST_TIME_TOO_SKEWED,        /* 403 RequestTimeTooSkewed */
    S3E_SERVICE_UNAVAILABLE,            /* 503 ServiceUnavailable */
    S3E_SIGNATURE_DOES_NOT_MATCH,       /* 403 SignatureDoesNotMatch */
    S3E_SLOW_DOWN,                      /* 503 SlowDown */
    S3E_UNEXPECTED_CONTENT,             /* 400 UnexpectedContent */
    S3E_UNRESOLVABLE_EMAIL,             /* 400 UnresolvableGrantByEmailAddress */
    S3E_X_AMZ_CONTENT_SHA256_MISMATCH,  /* 400 XAmzContentSHA256Mismatch */
    S3E_COUNT
};

/* e's status and its code string (e < S3E_COUNT). */
int err_s3_status(enum s3e e);
const char *err_s3_name(enum s3e e);
/* The code that fits a status answered without a row of its own
 * (InvalidRequest for an unlisted 4xx, InternalError for an unlisted
 * 5xx). The row it names may give another status: 413 is EntityTooLarge,
 * whose row (S3's own) is 400. */
const char *err_s3_code(int status);

/*
 * Answer r with e and a message, in the API r speaks: with e's code in S3
 * mode (r->on_error set by s3_mode), as the native API's JSON error
 * otherwise. For handlers that serve both APIs; s3_fail (s3.h) also
 * switches r to S3 mode. err_reply_status answers with a status decided at
 * run time, e giving only the code.
 */
void err_reply(struct http_req *r, enum s3e e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void err_reply_status(struct http_req *r, int status, enum s3e e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
