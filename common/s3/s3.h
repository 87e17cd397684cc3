/*
 * s3: what the proxy's S3 API and the targets' S3 mode share: error
 * replies as S3 XML (code, message, resource, request id), XML escaping,
 * dates in S3's two formats, base64 and MD5 ETags.
 */
#ifndef SHOAL_S3_H
#define SHOAL_S3_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"

struct gbuf;
struct http_req;

/* Requests the proxy forwards to a target in S3 mode carry this header. */
#define S3_MODE_HEADER "X-Shoal-S3"
/* ... and redirected ones this query parameter. */
#define S3_MODE_QUERY "shoal_s3=1"
/* CopyObject: the proxy names the source as a signed URL on its target. */
#define COPY_FROM_HEADER "X-Shoal-Copy-From"
/* ... whose target answers the source's tags (x-amz-tagging form) in this
 * header when the request carries it. */
#define COPY_TAGS_HEADER "X-Shoal-Tagging"

/* S3's XML: the declaration, the namespace, and the owner of what has
 * no other (s3own.h: a bucket made through S3 with keys is its key's). */
#define S3_XML_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define S3_NS "http://s3.amazonaws.com/doc/2006-03-01/"
#define S3_OWNER_ID "shoal"

/* <name>escaped value</name> */
void s3_xml_elem(struct gbuf *b, const char *name, const char *value);
/* value, XML-escaped, into b. */
void s3_xml_add(struct gbuf *b, const char *value);

/* The S3 error reply: status, XML body with the code (r->err_code, or
 * err_s3_code's for the status), message, resource and request id. Usable
 * as http_req.on_error. */
void s3_error_reply(struct http_req *r, int status, const char *msg);
/* Switch r to S3 mode and answer it with e (err.h: its status and code)
 * and a message. s3_fail_status answers with a status decided at run time
 * (passed on from another node), e giving only the code. */
void s3_fail(struct http_req *r, enum s3e e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void s3_fail_status(struct http_req *r, int status, enum s3e e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 307 with S3's TemporaryRedirect body naming target_url's host:port as
 * <Endpoint> (s3cmd follows that); the caller sets Location. */
void s3_redirect_reply(struct http_req *r, const char *target_url, const char *bucket);
/* Switch r's errors to S3 XML. */
void s3_mode(struct http_req *r);

/* "Sun, 06 Nov 1994 08:49:37 GMT" and "2009-10-12T17:50:30.000Z". */
void s3_http_date(uint64_t ns, char *out, size_t n);
void s3_iso_date(uint64_t ns, char *out, size_t n);
/* A UTC time in strptime's fmt, or an HTTP date (RFC 1123 form), into
 * seconds; 0 or -1. */
int s3_parse_time(const char *s, const char *fmt, time_t *out);
int s3_parse_http_date(const char *s, time_t *out);
/* A raw query string without the parameters whose "name=value" starts
 * with prefix (a new string). */
char *s3_query_without(const char *q, const char *prefix);

/*
 * aws-chunked uploads. payload: the request's x-amz-content-sha256. 0 when
 * it names no streaming body; 1 when it names one Shoal decodes, with
 * *decoded the declared x-amz-decoded-content-length and *is_signed set
 * for STREAMING-AWS4-HMAC-SHA256-PAYLOAD (a signature per chunk); -1 with
 * r answered: 501 for the STREAMING-* variants not served, 411 without a
 * decoded length.
 */
int s3_streaming(struct http_req *r, const char *payload, uint64_t *decoded, int *is_signed);
/* The answer to an awschunk failure (rc < 0): its error, and *msg. */
enum s3e s3_chunk_error(int rc, const char **msg);

/* A small body against the request's Content-MD5, if any: 0, or 400
 * answered (InvalidDigest, BadDigest). */
int s3_check_md5(struct http_req *r, const char *body, size_t len);

/* Strict base64 decode of a short value (up to 72 bytes decoded); the
 * decoded length, or -1 (bad input or longer than cap). */
int s3_b64_decode(const char *in, unsigned char *out, size_t cap);
/* "\"<hex md5>\"" (35 bytes with the NUL). */
void s3_md5_etag(const unsigned char md5[16], char out[35]);


#endif
