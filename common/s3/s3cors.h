/*
 * s3cors: a bucket's CORS configuration (PutBucketCors, GetBucketCors,
 * DeleteBucketCors), kept as its "cors" property, a JSON array of rules
 * ({"id", "methods", "origins", "headers", "expose", "max_age"}), and the
 * answers it makes: to a preflight (OPTIONS, never signed: a presigned
 * URL's too) and to an actual request that carries an Origin.
 *
 * As S3 matches them: the first rule whose AllowedOrigin matches the
 * Origin (one '*' anywhere in a pattern stands for any run of
 * characters; "*" alone for every origin, answered "*"), whose
 * AllowedMethod names the method (a preflight's
 * Access-Control-Request-Method; an actual request's own, or that header
 * when it carries it), and, for a preflight, whose AllowedHeader patterns
 * cover every Access-Control-Request-Headers name (case-insensitive).
 */
#ifndef SHOAL_S3CORS_H
#define SHOAL_S3CORS_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

#define S3CORS_RULES_MAX 100
#define S3CORS_AGE_MAX 0x7fffffff   /* MaxAgeSeconds, at most */
#define S3CORS_BODY_MAX (64u << 10)

struct gbuf;
struct http_req;

/* A CORSConfiguration body into *rules (a new JSON array): 0, or the
 * status (400) of *code (MalformedXML, InvalidRequest) with msg. */
int s3cors_parse(const char *body, size_t len, json_t **rules, enum s3e *code, char *msg,
                 size_t msglen);
/* Are rules (a bucket's "cors" property, as the native API may set it)
 * well formed? 0, or -1 with err. */
int s3cors_check(const json_t *rules, char *err, size_t errlen);
/* GetBucketCors's answer for rules. */
void s3cors_xml(struct gbuf *b, const json_t *rules);

/* A preflight r (OPTIONS) to bucket (NULL: the service, or no bucket name):
 * answered, 200 with the Access-Control-* headers of the rule that allows
 * it, 403 CORSResponse when none does, 404 NoSuchBucket, 400 without
 * Origin or Access-Control-Request-Method. */
void s3cors_preflight(struct http_req *r, const char *bucket);
/* An actual request r to bucket: the Access-Control-* headers of the rule
 * that matches its Origin and method, added to its answer (whatever the
 * answer is); nothing without an Origin or a rule. */
void s3cors_actual(struct http_req *r, const char *bucket);

#endif
