/*
 * target: helpers shared by the target's handlers (see target.h). They
 * are small and pure but for the response headers they add; keeping them
 * here, apart from the handlers, lets every handler use them without any
 * handler calling another one's file, or main.c, for them.
 *
 * Threads: any; the http_req ones on the request's worker.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bmd.h"
#include "err.h"
#include "http.h"
#include "s3.h"
#include "s3ck.h"
#include "s3acl.h"
#include "s3auth.h"
#include "s3own.h"
#include "s3tag.h"
#include "store.h"
#include "target.h"

struct curlclient *target_cli(struct http_req *r)
{
    return ((struct target_worker *)r->w->local)->cli;
}

struct nodeclient *target_hc(struct http_req *r)
{
    return ((struct target_worker *)r->w->local)->hc;
}

int target_is_s3(const struct http_req *r)
{
    return r->on_error == s3_error_reply;
}

/* S3 mode: the headers an object's tags make. */
static void tag_headers(struct http_req *r, const struct objmeta *m)
{
    if (!m->tags_len || !target_is_s3(r))
        return;
    http_resp_header(r, "x-amz-tagging-count", "%d", s3tag_count(m->tags, m->tags_len));
    if (http_req_header(r, COPY_TAGS_HEADER)) {
        char *h = s3tag_header(m->tags, m->tags_len);
        http_resp_header_str(r, COPY_TAGS_HEADER, h);
        free(h);
    }
}

#define KEPT_VALUE_MAX 2048      /* a kept header's value, bytes */

/* The standard headers an object keeps (see target_s3_meta). */
static const char *const kept[] = {"Cache-Control", "Content-Disposition", "Content-Encoding",
                                   "Content-Language", "Expires"};

static const char *kept_name(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(kept); i++)
        if (!strcasecmp(name, kept[i]))
            return kept[i];
    return NULL;
}

/* value's codings but aws-chunked (which framed the body only), into
 * out, each kept as it was sent: with the separator that came before it
 * ("deflate, gzip" stays so). */
static void strip_aws_chunked(const char *value, char *out, size_t outlen)
{
    size_t n = 0;
    out[0] = '\0';
    for (const char *p = value, *sep = value; *p;) {
        size_t l = strcspn(p, ",");
        const char *s = p, *e = p + l;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        int skip = e == s || ((size_t)(e - s) == 11 && !strncasecmp(s, "aws-chunked", 11));
        const char *from = n ? sep : s;     /* the first kept one: no separator */
        if (!skip && n + (size_t)(e - from) < outlen)
            n += (size_t)snprintf(out + n, outlen - n, "%.*s", (int)(e - from), from);
        sep = p += l;            /* at the comma before the next one */
        if (*p == ',')
            p++;
    }
}

/* Does r override header std with a response-* query parameter (a GET's
 * response-content-disposition...)? */
static int overridden(const struct http_req *r, const char *std)
{
    char q[48], v[KEPT_VALUE_MAX];
    size_t n = (size_t)snprintf(q, sizeof(q), "response-%s", std);
    for (size_t i = 0; i < n; i++)
        q[i] = (char)(q[i] >= 'A' && q[i] <= 'Z' ? q[i] + 32 : q[i]);
    return target_is_s3(r) && http_query_get(r, q, v, sizeof(v)) >= 0;
}

int target_keep_header(struct objmeta *m, const char *name, const char *value)
{
    const char *canon = kept_name(name);
    if (!canon)
        return 0;
    if (strlen(value) >= KEPT_VALUE_MAX)
        return -E2BIG;           /* never stored cut short */
    char key[40], v[KEPT_VALUE_MAX];
    snprintf(key, sizeof(key), ":%s", canon);
    if (!strcmp(canon, "Content-Encoding"))
        strip_aws_chunked(value, v, sizeof(v));
    else
        snprintf(v, sizeof(v), "%s", value);
    if (!v[0] && !strcmp(canon, "Content-Encoding"))
        return 0;
    return objmeta_umeta_add(m, key, v);
}

const char *target_checksum_of(const struct objmeta *m, enum s3ck_alg *alg)
{
    for (int a = S3CK_CRC32; a < S3CK_ALGS; a++) {
        char key[48];
        snprintf(key, sizeof(key), ":%s", s3ck_header((enum s3ck_alg)a));
        const char *v = objmeta_umeta_get(m, key);
        if (v) {
            *alg = (enum s3ck_alg)a;
            return v;
        }
    }
    return NULL;
}

int target_keep_checksum(struct objmeta *m, enum s3ck_alg alg, const char *value)
{
    char key[48];                /* where target_checksum_of looks */
    snprintf(key, sizeof(key), ":%s", s3ck_header(alg));
    return objmeta_umeta_add(m, key, value);
}

void target_checksum_headers(struct http_req *r, const struct objmeta *m)
{
    enum s3ck_alg a;
    const char *v = target_checksum_of(m, &a);
    if (v) {
        http_resp_header_str(r, s3ck_header(a), v);
        http_resp_header_str(r, "x-amz-checksum-type",
                         strchr(v, '-') ? "COMPOSITE" : "FULL_OBJECT");
    }
}

void target_checksum_xml(struct gbuf *b, const struct objmeta *m)
{
    enum s3ck_alg a;
    const char *v = target_checksum_of(m, &a);
    if (v) {
        s3_xml_elem(b, s3ck_element(a), v);
        s3_xml_elem(b, "ChecksumType", strchr(v, '-') ? "COMPOSITE" : "FULL_OBJECT");
    }
}

/* Does r's answer carry the object's S3 checksum? */
static int checksum_asked(struct http_req *r)
{
    if (!target_is_s3(r))
        return 0;
    if (r->method == HTTP_M_PUT)
        return 1;
    const char *mode = http_req_header(r, "x-amz-checksum-mode");
    char pn[8];
    return (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD) && mode &&
           !strcasecmp(mode, "ENABLED") && !http_req_header(r, "Range") &&
           http_query_get(r, "partNumber", pn, sizeof(pn)) == -1;   /* the whole object */
}

void target_vid_header(struct http_req *r, const char *vid)
{
    /* a write to a bucket whose versioning is suspended makes the null
     * version, and S3 answers it without a version id */
    int write = r->method != HTTP_M_GET && r->method != HTTP_M_HEAD;
    if (vid && !(write && !strcmp(vid, "null")))
        http_resp_header_str(r, "x-amz-version-id", vid);
}

void target_meta_headers(struct http_req *r, const struct objmeta *m)
{
    char date[64], etag[OBJMETA_ETAG_MAX + 1];
    s3_http_date(m->mtime_ns, date, sizeof(date));
    objmeta_etag(m, etag, sizeof(etag));
    http_resp_header_str(r, "ETag", etag);
    unsigned char be[8];
    for (int i = 0; i < 8; i++)
        be[i] = (unsigned char)(m->cksum >> (56 - 8 * i));
    char ck[8 + 17] = "xxh3-64:", ver[21];
    hex_encode(be, sizeof(be), ck + 8);
    http_resp_header_str(r, "X-Shoal-Checksum", ck);
    ver[fmt_u64(ver, m->version)] = '\0';
    http_resp_header_str(r, "X-Shoal-Version", ver);
    http_resp_header_str(r, "Last-Modified", date);
    http_resp_header_str(r, "Accept-Ranges", "bytes");
    for (size_t off = 0; off < m->umeta_len;) {
        const char *k = m->umeta + off;
        const char *v = k + strlen(k) + 1;
        char name[OBJMETA_UMETA_MAX + 16];
        const char *std = k[0] == ':' ? kept_name(k + 1) : NULL;
        if (std && (r->method == HTTP_M_GET || r->method == HTTP_M_HEAD) && !overridden(r, std))
            http_resp_header_str(r, std, v);
        else if (!strcmp(k, OBJMETA_VID))
            target_vid_header(r, v);
        else if (k[0] != ':') {
            snprintf(name, sizeof(name), "x-amz-meta-%s", k);
            http_resp_header_str(r, name, v);
        }
        off = (size_t)(v - m->umeta) + strlen(v) + 1;
    }
    if (checksum_asked(r))
        target_checksum_headers(r, m);
    tag_headers(r, m);
}

#define USER_META_MAX 2048       /* S3's: names and values of x-amz-meta-*, in bytes */
#define ACL_KEY ":acl"           /* an object's ACL, when not its owner's private one */
#define OWNER_KEY OBJMETA_OWNER

json_t *target_acl(const struct objmeta *m, const char *owner)
{
    return s3acl_grants_text(objmeta_umeta_get(m, ACL_KEY), owner);
}

const char *target_object_owner(const struct objmeta *m, const json_t *props)
{
    const char *o = objmeta_umeta_get(m, OWNER_KEY);
    return o ? o : s3own_owner(props);
}

int target_set_acl(struct objmeta *m, const json_t *grants, const char *owner)
{
    objmeta_umeta_del(m, ACL_KEY);
    if (!grants || s3acl_private(grants, owner))
        return 0;
    char *text = json_dumps(grants, JSON_COMPACT);
    int rc = objmeta_umeta_add(m, ACL_KEY, text);
    free(text);
    return rc;
}

int target_meta_reset(struct objmeta *m)
{
    const char *a = objmeta_umeta_get(m, ACL_KEY), *o = objmeta_umeta_get(m, OWNER_KEY);
    char *acl = a ? xstrdup(a) : NULL, *owner = o ? xstrdup(o) : NULL;
    m->umeta_len = 0;
    int rc = (acl && objmeta_umeta_add(m, ACL_KEY, acl)) ||
             (owner && objmeta_umeta_add(m, OWNER_KEY, owner));
    free(acl);
    free(owner);
    return rc ? -E2BIG : 0;
}

int target_acl_allows(const struct objmeta *m, const json_t *props, const char *who,
                      enum authz_op op)
{
    const char *owner = target_object_owner(m, props);
    json_t *g = target_acl(m, owner);
    int ok = authz_object_allows(g, owner, who, op, s3own_ignore_public(props));
    json_decref(g);
    return ok;
}

const char *target_writer(const struct http_req *r, char *buf, size_t n)
{
    const struct s3auth_result *a = r->auth;
    const struct target *t = r->w->ctx;
    if (a)                       /* an admin key writes for the bucket's owner */
        return a->anonymous || authz_is_admin(t->conf.admin_keys, t->conf.n_admin_keys, a->access)
                   ? NULL
                   : a->access;
    char sig[8];
    if (http_query_get(r, "shoal_sig", sig, sizeof(sig)) == -1)
        return NULL;             /* not a node's request: nobody vouches for a writer */
    return http_query_get(r, S3OWN_WRITER, buf, n) > 0 ? buf : NULL;
}

int target_routed_who(const struct http_req *r, char *buf, size_t n, const char **who)
{
    int l = http_query_get(r, S3OWN_WHO, buf, n);
    *who = l > 0 ? buf : NULL;   /* one it cannot read (-2) is nobody's: anonymous */
    return l != -1;
}

int target_routed_allows(const struct http_req *r, const char *mkey, const struct objmeta *m)
{
    char buf[160];
    const char *who;
    if (!target_routed_who(r, buf, sizeof(buf), &who))
        return 1;
    const char *provider = mkey + 1, *bucket = provider + strlen(provider) + 1;   /* store_mkey */
    struct bmd *b = bmd_current();
    const struct bmd_bucket *bk = b ? bmd_find(b, provider, bucket) : NULL;
    int ok = bk && target_acl_allows(m, bk->props, who, authz_op_of(r, 1));
    bmd_unref(b);
    return ok;
}

/* x-amz-acl and x-amz-grant-* of a write into m: 0, or the status of the
 * error answered. */
static int write_acl(struct http_req *r, struct objmeta *m, const json_t *props)
{
    const char *bo = s3own_owner(props);
    char wbuf[160];
    const char *writer = target_writer(r, wbuf, sizeof(wbuf));
    const char *owner = writer ? writer : bo;
    json_t *g;
    enum s3e code;
    char msg[300];
    int st = s3acl_of_request(r, NULL, 0, 0, owner, bo, &g, &code, msg, sizeof(msg));
    const char *oo = st ? owner : s3own_object_owner(props, writer, g);
    if (!st && g && strcmp(oo ? oo : "", owner ? owner : "")) {
        json_decref(g);          /* the bucket's owner's after all: its canned grants */
        st = s3acl_of_request(r, NULL, 0, 0, oo, bo, &g, &code, msg, sizeof(msg));
    }
    if (st) {
        err_reply(r, code, "%s", msg);
        return err_s3_status(code);
    }
    if (g && s3own_acls_disabled(props) && !s3acl_private(g, oo)) {
        json_decref(g);
        err_reply(r, S3E_ACL_NOT_SUPPORTED, "The bucket does not allow ACLs");
        return err_s3_status(S3E_ACL_NOT_SUPPORTED);
    }
    if (g && s3own_block_public(props) && s3acl_public(g)) {
        json_decref(g);
        err_reply(r, S3E_ACCESS_DENIED, "the bucket's PublicAccessBlock refuses public ACLs");
        return err_s3_status(S3E_ACCESS_DENIED);
    }
    objmeta_umeta_del(m, OWNER_KEY);
    int rc = target_set_acl(m, g, oo) ||
             (oo && bo && strcmp(oo, bo) && objmeta_umeta_add(m, OWNER_KEY, oo));
    json_decref(g);
    if (rc) {
        err_reply(r, S3E_METADATA_TOO_LARGE, "the object's metadata leaves no room for its ACL");
        return err_s3_status(S3E_METADATA_TOO_LARGE);
    }
    return 0;
}

int target_s3_meta(struct http_req *r, struct objmeta *m, const json_t *props)
{
    static const char pre[] = "x-amz-meta-";
    size_t user = 0;
    int rc = 0;
    for (int i = 0; i < r->n_hdrs && !rc; i++) {
        const char *n = r->hdrs[i].name;
        if (strncasecmp(n, pre, sizeof(pre) - 1) || !n[sizeof(pre) - 1]) {
            rc = target_keep_header(m, n, r->hdrs[i].value);
            continue;
        }
        user += strlen(n) - (sizeof(pre) - 1) + strlen(r->hdrs[i].value);   /* S3's count */
        rc = user > USER_META_MAX ? -E2BIG
                                  : objmeta_umeta_add(m, n + sizeof(pre) - 1, r->hdrs[i].value);
    }
    if (rc) {
        err_reply(r, S3E_METADATA_TOO_LARGE, "your metadata headers exceed the maximum allowed "
                                             "metadata size (%d bytes)", USER_META_MAX);
        return err_s3_status(S3E_METADATA_TOO_LARGE);
    }
    return write_acl(r, m, props);
}

int target_s3_tags(struct http_req *r, struct objmeta *m)
{
    const char *h = http_req_header(r, "x-amz-tagging");
    if (!h)
        return 0;
    struct s3tags tags = {0};
    enum s3e code;
    char msg[300];
    int st = s3tag_parse_header(h, S3TAG_OBJECT_MAX, &tags, &code, msg, sizeof(msg));
    if (!st && objmeta_tags_set(m, tags.pairs.p, tags.pairs.n))
        abort(); /* S3TAG_OBJECT_BYTES fits OBJMETA_TAGS_MAX (subres.c) */
    s3tags_free(&tags);
    if (st)
        s3_fail(r, code, "%s", msg);
    return st;
}

void target_write_conditions(struct http_req *r, struct store_x *x)
{
    const char *inm = http_req_header(r, "If-None-Match");
    const char *im = http_req_header(r, "If-Match");
    x->if_none = inm && !strcmp(inm, "*");
    x->if_none_match = inm && !x->if_none ? xstrdup(inm) : NULL;
    x->if_match = im ? xstrdup(im) : NULL;
}

void target_conditions_clear(struct store_x *x)
{
    free((char *)x->if_none_match);
    free((char *)x->if_match);
    x->if_none = 0;
    x->if_none_match = x->if_match = NULL;
}

int target_write_refused(struct http_req *r, const struct store_x *x, int rc)
{
    if (!store_x_conditional(x) && !x->vers)
        return 0;
    if (rc == -ECANCELED) {
        err_reply(r, S3E_PRECONDITION_FAILED,
                  "At least one of the pre-conditions you specified did not hold");
    } else if (rc == -ENODATA) {
        err_reply(r, S3E_NO_SUCH_KEY, "If-Match names an object that does not exist");
    } else if (rc == -EBUSY) {
        http_resp_header_str(r, "Retry-After", "2");
        err_reply(r, S3E_SERVICE_UNAVAILABLE, "objects are moving between drives or targets: "
                                              "a conditional or versioned write waits until "
                                              "they are placed");
    } else {
        return 0;
    }
    return 1;
}
