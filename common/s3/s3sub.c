#include "s3sub.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "s3.h"
#include "s3xml.h"
#include "util.h"

#define GET S3SUB_M(HTTP_M_GET)
#define PUT S3SUB_M(HTTP_M_PUT)
#define POST S3SUB_M(HTTP_M_POST)
#define DEL S3SUB_M(HTTP_M_DELETE)

/* Unserved first: see s3sub_find. */
static const struct s3sub table[] = {
    {"policy", S3SUB_UNSERVED, 0, 0},
    {"policyStatus", S3SUB_UNSERVED, 0, 0},
    {"lifecycle", S3SUB_UNSERVED, 0, 0},
    {"website", S3SUB_UNSERVED, 0, 0},
    {"logging", S3SUB_UNSERVED, 0, 0},
    {"notification", S3SUB_UNSERVED, 0, 0},
    {"replication", S3SUB_UNSERVED, 0, 0},
    {"encryption", S3SUB_UNSERVED, 0, 0},
    {"object-lock", S3SUB_UNSERVED, 0, 0},
    {"retention", S3SUB_UNSERVED, 0, 0},
    {"legal-hold", S3SUB_UNSERVED, 0, 0},
    {"accelerate", S3SUB_UNSERVED, 0, 0},
    {"requestPayment", S3SUB_UNSERVED, 0, 0},
    {"analytics", S3SUB_UNSERVED, 0, 0},
    {"metrics", S3SUB_UNSERVED, 0, 0},
    {"inventory", S3SUB_UNSERVED, 0, 0},
    {"intelligent-tiering", S3SUB_UNSERVED, 0, 0},
    {"restore", S3SUB_UNSERVED, 0, 0},
    {"select", S3SUB_UNSERVED, 0, 0},
    {"select-type", S3SUB_UNSERVED, 0, 0},
    {"torrent", S3SUB_UNSERVED, 0, 0},
    {"renameObject", S3SUB_UNSERVED, 0, 0},
    {"session", S3SUB_UNSERVED, 0, 0},
    {"metadataTable", S3SUB_UNSERVED, 0, 0},
    {"metadataConfiguration", S3SUB_UNSERVED, 0, 0},
    /* served; uploadId before uploads (?uploads&uploadId= is the upload) */
    {"uploadId", S3SUB_UPLOAD_ID, 0, GET | PUT | POST | DEL},
    {"uploads", S3SUB_UPLOADS, GET, POST},
    {"acl", S3SUB_ACL, GET | PUT, GET | PUT},
    {"tagging", S3SUB_TAGGING, GET | PUT | DEL, GET | PUT | DEL},
    {"cors", S3SUB_CORS, GET | PUT | DEL, 0},
    {"publicAccessBlock", S3SUB_PAB, GET | PUT | DEL, 0},
    {"ownershipControls", S3SUB_OWNERSHIP, GET | PUT | DEL, 0},
    {"attributes", S3SUB_ATTRIBUTES, 0, GET},
    {"location", S3SUB_LOCATION, GET, 0},
    {"versioning", S3SUB_VERSIONING, GET | PUT, 0},
    {"versions", S3SUB_VERSIONS, GET, 0},
    {"delete", S3SUB_DELETE, POST, 0},
};

/* A value-less query key that names no subresource Shoal knows: S3 adds
 * subresources over time, and one taken for the plain operation would
 * write or delete what the client did not ask to. */
static const struct s3sub unknown = {"", S3SUB_UNSERVED, 0, 0};

const struct s3sub *s3sub_named(const char *k, size_t kl)
{
    for (size_t i = 0; i < ARRAY_LEN(table); i++)
        if (strlen(table[i].name) == kl && !memcmp(table[i].name, k, kl))
            return &table[i];
    return NULL;
}

/* The keys are normalized already (http_query_normalize): an escaped
 * name is its plain self here, whatever its length. */
const struct s3sub *s3sub_find(const struct http_req *r)
{
    const struct s3sub *best = NULL;
    int flag = 0;                /* an unknown value-less key */
    for (const char *q = r->query; *q;) {
        size_t n = strcspn(q, "&");
        size_t kn = strcspn(q, "=&");
        const struct s3sub *s = kn ? s3sub_named(q, kn) : NULL;
        if (s && (!best || s < best))
            best = s;
        flag |= !s && kn && kn == n;
        q += n + (q[n] == '&');
    }
    if (flag && (!best || best->id != S3SUB_UNSERVED))
        return &unknown;
    return best;
}

int s3sub_serves(const struct s3sub *s, int on_object, int method)
{
    unsigned set = on_object ? s->object : s->bucket;
    return method >= 0 && method < 32 && (set & S3SUB_M(method));
}

void s3sub_refuse(struct http_req *r, const struct s3sub *s, int on_object)
{
    if (s == &unknown)
        s3_fail(r, S3E_NOT_IMPLEMENTED, "%s with a query parameter Shoal does not know, with no "
                "value (a subresource?), on %s is not implemented", r->method_name,
                on_object ? "an object" : "a bucket");
    else
        s3_fail(r, S3E_NOT_IMPLEMENTED, "%s ?%s on %s is not implemented", r->method_name,
                s->name, on_object ? "an object" : "a bucket");
}
