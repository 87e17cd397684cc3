/*
 * s3fwd: S3 object requests on a proxy (s3fwd.c): checked, then streamed
 * to the owning target (or redirected there in s3_redirect mode).
 */
#ifndef SHOAL_PROXY_S3FWD_H
#define SHOAL_PROXY_S3FWD_H

#include <stddef.h>

struct http_req;
struct s3auth_result;
struct authz_who;

/* r on bucket/key (klen bytes, as the path had it), signed by auth and
 * sent by who (both read during the call only); object_decides: what the
 * target does only if the object's own ACL grants it to who (authz.h:
 * AUTHZ_IF_OBJECT); a copy's source is held to who too. Answers r, now or
 * later. */
void s3fwd_object(struct http_req *r, const char *bucket, const struct s3auth_result *auth,
                  const struct authz_who *who, const char *key, size_t klen, int object_decides);

#endif
