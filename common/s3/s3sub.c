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
    {"ownershipControls", S3SUB_UNSERVED, 0, 0},
    {"publicAccessBlock", S3SUB_UNSERVED, 0, 0},
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

/* ---- ACL ------------------------------------------------------------------- */

void s3sub_acl_xml(struct gbuf *b, const char *owner, int public_read)
{
    gbuf_str(b, S3_XML_HEAD "<AccessControlPolicy xmlns=\"" S3_NS "\"><Owner>");
    s3_xml_elem(b, "ID", owner);
    s3_xml_elem(b, "DisplayName", owner);
    gbuf_str(b, "</Owner><AccessControlList><Grant><Grantee "
                "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                "xsi:type=\"CanonicalUser\">");
    s3_xml_elem(b, "ID", owner);
    s3_xml_elem(b, "DisplayName", owner);
    gbuf_str(b, "</Grantee><Permission>FULL_CONTROL</Permission></Grant>");
    if (public_read)
        gbuf_str(b, "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                    "xsi:type=\"Group\"><URI>" S3SUB_ALL_USERS "</URI></Grantee>"
                    "<Permission>READ</Permission></Grant>");
    gbuf_str(b, "</AccessControlList></AccessControlPolicy>\n");
}

int s3sub_canned(const char *v)
{
    /* a bucket has one owner, who owns its objects too: the bucket-owner
     * ACLs are private */
    if (!strcmp(v, "private") || !strcmp(v, "bucket-owner-full-control") ||
        !strcmp(v, "bucket-owner-read"))
        return 0;
    return !strcmp(v, "public-read") ? 1 : -1;
}

struct acl_ctx {
    const char *owner;
    int owner_full;              /* a grant of FULL_CONTROL to the owner */
    int public_read;             /* a grant of READ to AllUsers */
    int other;                   /* any other grant */
};

static int acl_grant(void *arg, char **f, char *err, size_t errlen)
{
    struct acl_ctx *a = arg;
    (void)err;
    (void)errlen;
    /* fields: Grantee/ID, Grantee/URI, Grantee/EmailAddress, Permission */
    const char *perm = f[3] ? f[3] : "";
    if (f[0] && !f[1] && !f[2] && (!strcmp(f[0], a->owner) || !strcmp(f[0], S3_OWNER_ID)) &&
        !strcmp(perm, "FULL_CONTROL"))
        a->owner_full = 1;
    else if (!f[0] && f[1] && !f[2] && !strcmp(f[1], S3SUB_ALL_USERS) && !strcmp(perm, "READ"))
        a->public_read = 1;
    else
        a->other = 1;
    return 0;
}

int s3sub_acl_check(const struct http_req *r, const char *body, size_t len, const char *owner,
                    int *public_read, enum s3e *code, char *msg, size_t msglen)
{
    static const char *const grants[] = {
        "x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp",
        "x-amz-grant-write-acp", "x-amz-grant-full-control",
    };
    for (size_t i = 0; i < ARRAY_LEN(grants); i++) {
        if (http_req_header(r, grants[i])) {
            *code = S3E_NOT_IMPLEMENTED;
            snprintf(msg, msglen, "%s is not implemented: Shoal's ACLs are the canned private "
                                  "and public-read", grants[i]);
            return err_s3_status(*code);
        }
    }
    const char *canned = http_req_header(r, "x-amz-acl");
    if (canned) {
        if (len) {
            *code = S3E_UNEXPECTED_CONTENT;
            snprintf(msg, msglen, "a request with x-amz-acl takes no body");
            return err_s3_status(*code);
        }
        if ((*public_read = s3sub_canned(canned)) < 0) {
            *code = S3E_NOT_IMPLEMENTED;
            snprintf(msg, msglen, "the canned ACL '%.64s' is not implemented: Shoal's are "
                                  "private and public-read", canned);
            return err_s3_status(*code);
        }
        return 0;
    }
    if (!len) {
        *code = S3E_MISSING_SECURITY_HEADER;
        snprintf(msg, msglen, "the request needs x-amz-acl or an AccessControlPolicy body");
        return err_s3_status(*code);
    }
    static const struct s3xml_spec spec = {
        "AccessControlPolicy", "AccessControlList/Grant",
        {"Grantee/ID", "Grantee/URI", "Grantee/EmailAddress", "Permission"}, 4, "Owner/ID", 0};
    struct acl_ctx a = {.owner = owner};
    char oid[S3XML_FLAG_MAX];
    int n = s3xml_records(body, len, &spec, acl_grant, &a, oid, msg, msglen);
    if (n < 0) {
        *code = S3E_MALFORMED_ACL;
        return err_s3_status(*code);
    }
    if (!a.owner_full || a.other || (oid[0] && strcmp(oid, owner) && strcmp(oid, S3_OWNER_ID))) {
        *code = S3E_NOT_IMPLEMENTED;
        snprintf(msg, msglen, "only the owner's FULL_CONTROL, with AllUsers' READ or without "
                              "(the private and public-read ACLs), is implemented");
        return err_s3_status(*code);
    }
    *public_read = a.public_read;
    return 0;
}
