/* s3sub: the subresource table; s3tag: tag sets from XML and headers,
 * S3's limits; s3xml: records and fields named by paths; objmeta: tags
 * kept with an object's metadata. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "err.h"
#include "http.h"
#include "objmeta.h"
#include "s3sub.h"
#include "s3tag.h"
#include "s3xml.h"
#include "util.h"

/* As the HTTP layer hands a query over: its keys normalized. */
static const struct s3sub *find(const char *query)
{
    char q[4096];
    snprintf(q, sizeof(q), "%s", query);
    if (http_query_normalize(q))
        return NULL;
    struct http_req r = {.query = q};
    return s3sub_find(&r);
}

/* Every spelling of a key is one key: the decision is the same. */
static void test_encodings(void)
{
    static const char *const same[][2] = {
        {"%69%6E%74%65%6C%6C%69%67%65%6E%74%2D%74%69%65%72%69%6E%67", "intelligent-tiering"},
        {"%6f%77%6e%65%72%73%68%69%70%43%6f%6e%74%72%6f%6c%73=", "ownershipControls"},
        {"%6D%65%74%61%64%61%74%61%43%6F%6E%66%69%67%75%72%61%74%69%6F%6E&x=1",
         "metadataConfiguration"},
        {"t%61gging", "tagging"},
        {"%61cl=&prefix=a", "acl"},
    };
    for (size_t i = 0; i < ARRAY_LEN(same); i++) {
        const struct s3sub *s = find(same[i][0]);
        CHECK(s && !strcmp(s->name, same[i][1]));
    }
    char q[64] = "a%2fb=%41&%7e%2F=1";
    CHECK(http_query_normalize(q) == 0 && !strcmp(q, "a%2Fb=%41&~%2F=1")); /* values as sent */
    char bad1[] = "ac%4", bad2[] = "%zzl", bad3[] = "x=1&%";
    CHECK(http_query_normalize(bad1) == -1 && http_query_normalize(bad2) == -1 &&
          http_query_normalize(bad3) == -1);
    char ok[] = "x=%zz";         /* a value is the handler's to judge */
    CHECK(http_query_normalize(ok) == 0 && !strcmp(ok, "x=%zz"));
    /* value-less keys that name nothing Shoal knows: refused, never plain */
    const struct s3sub *s = find("abac");
    CHECK(s && s->id == S3SUB_UNSERVED);
    CHECK((s = find("uploads&abac")) && s->id == S3SUB_UNSERVED);
    CHECK((s = find("x-id=PutObject&tagging")) && s->id == S3SUB_TAGGING);
    CHECK(find("abac=1&prefix=") == NULL);
}

static void test_table(void)
{
    CHECK(find("") == NULL);
    CHECK(find("prefix=a&max-keys=3&list-type=2") == NULL);
    CHECK(find("partNumber=1&versionId=null&x-id=GetObject") == NULL);
    CHECK(find("response-content-type=a&X-Amz-Date=1") == NULL);
    CHECK(find("aclx=1&tagging2=&xacl=1") == NULL);
    CHECK(find("aclx&tagging2&xacl=1")->id == S3SUB_UNSERVED);   /* unknown, value-less */
    const struct s3sub *s = find("tagging");
    CHECK(s && s->id == S3SUB_TAGGING && s3sub_serves(s, 1, HTTP_M_DELETE) &&
          s3sub_serves(s, 0, HTTP_M_PUT) && !s3sub_serves(s, 1, HTTP_M_POST) &&
          !s3sub_serves(s, 1, HTTP_M_HEAD));
    CHECK((s = find("versionId=3&acl=")) && s->id == S3SUB_ACL);
    CHECK((s = find("upload%49d=abc")) && s->id == S3SUB_UPLOAD_ID); /* encoded */
    /* an upload's part: uploadId wins over uploads */
    CHECK((s = find("uploads&uploadId=x")) && s->id == S3SUB_UPLOAD_ID);
    CHECK(s3sub_serves(s, 1, HTTP_M_PUT) && !s3sub_serves(s, 0, HTTP_M_PUT));
    CHECK((s = find("uploads")) && s3sub_serves(s, 0, HTTP_M_GET) &&
          !s3sub_serves(s, 1, HTTP_M_GET) && s3sub_serves(s, 1, HTTP_M_POST));
    /* an unserved one refuses the whole request */
    CHECK((s = find("tagging&website")) && s->id == S3SUB_UNSERVED);
    CHECK((s = find("acl&policy=1")) && s->id == S3SUB_UNSERVED && !strcmp(s->name, "policy"));
    /* CORS rules: a bucket's, never an object's */
    CHECK((s = find("cors")) && s->id == S3SUB_CORS && s3sub_serves(s, 0, HTTP_M_PUT) &&
          s3sub_serves(s, 0, HTTP_M_GET) && s3sub_serves(s, 0, HTTP_M_DELETE) &&
          !s3sub_serves(s, 0, HTTP_M_POST) && !s3sub_serves(s, 1, HTTP_M_GET));
    CHECK((s = find("publicAccessBlock")) && s->id == S3SUB_PAB &&
          s3sub_serves(s, 0, HTTP_M_DELETE) && !s3sub_serves(s, 1, HTTP_M_PUT));
    CHECK((s = find("ownershipControls")) && s->id == S3SUB_OWNERSHIP &&
          s3sub_serves(s, 0, HTTP_M_PUT) && !s3sub_serves(s, 1, HTTP_M_GET));
    static const char *const unserved[] = {
        "policy", "policyStatus", "lifecycle", "website", "logging", "notification",
        "replication", "encryption", "object-lock", "retention", "legal-hold",
        "accelerate", "requestPayment", "analytics",
        "metrics", "inventory", "intelligent-tiering", "restore", "select", "select-type",
        "torrent", "renameObject",
    };
    int methods[] = {HTTP_M_GET, HTTP_M_HEAD, HTTP_M_PUT, HTTP_M_POST, HTTP_M_DELETE};
    for (size_t i = 0; i < ARRAY_LEN(unserved); i++) {
        s = find(unserved[i]);
        CHECK(s && !strcmp(s->name, unserved[i]));
        for (size_t j = 0; s && j < ARRAY_LEN(methods); j++)
            CHECK(!s3sub_serves(s, 0, methods[j]) && !s3sub_serves(s, 1, methods[j]));
    }
    s = find("attributes");      /* GetObjectAttributes: GET on an object only */
    CHECK(s && s->id == S3SUB_ATTRIBUTES && s3sub_serves(s, 1, HTTP_M_GET) &&
          !s3sub_serves(s, 1, HTTP_M_PUT) && !s3sub_serves(s, 0, HTTP_M_GET));
    s = find("versioning");      /* GetBucketVersioning and PutBucketVersioning */
    CHECK(s && s3sub_serves(s, 0, HTTP_M_GET) && s3sub_serves(s, 0, HTTP_M_PUT) &&
          !s3sub_serves(s, 1, HTTP_M_GET) && !s3sub_serves(s, 0, HTTP_M_DELETE));
    static const char *const bucket_get[] = {"location", "versions"};
    for (size_t i = 0; i < ARRAY_LEN(bucket_get); i++) {
        s = find(bucket_get[i]);
        CHECK(s && s3sub_serves(s, 0, HTTP_M_GET) && !s3sub_serves(s, 0, HTTP_M_PUT) &&
              !s3sub_serves(s, 1, HTTP_M_GET) && !s3sub_serves(s, 0, HTTP_M_DELETE));
    }
    CHECK((s = find("delete")) && s3sub_serves(s, 0, HTTP_M_POST) &&
          !s3sub_serves(s, 0, HTTP_M_DELETE) && !s3sub_serves(s, 1, HTTP_M_POST));
    CHECK(!s3sub_serves(find("acl"), 1, HTTP_M_DELETE) && !s3sub_serves(find("acl"), 1, -1));
}

/* The parsers' status, with *code the S3 code as it goes on the wire. */
static int parse_hdr(const char *h, int max, struct s3tags *t, const char **code)
{
    char msg[300];
    enum s3e e;
    memset(t, 0, sizeof(*t));
    int st = s3tag_parse_header(h, max, t, &e, msg, sizeof(msg));
    *code = st ? err_s3_name(e) : "";
    return st;
}

static int parse_xml(const char *x, int max, struct s3tags *t, const char **code)
{
    char msg[300];
    enum s3e e;
    memset(t, 0, sizeof(*t));
    int st = s3tag_parse_xml(x, strlen(x), max, t, &e, msg, sizeof(msg));
    *code = st ? err_s3_name(e) : "";
    return st;
}

static void test_tags(void)
{
    struct s3tags t;
    const char *code = "";
    CHECK(parse_hdr("a=1&b%20c=d%26e&empty=&plus+sign=x+y", 10, &t, &code) == 0 && t.n == 4);
    CHECK(t.pairs.n == 33 && !memcmp(t.pairs.p, "a\0" "1\0" "b c\0" "d&e\0" "empty\0\0"
                                                "plus sign\0" "x y\0", 33));
    char *h = s3tag_header(t.pairs.p, t.pairs.n);
    CHECK(!strcmp(h, "a=1&b%20c=d%26e&empty=&plus%20sign=x%20y"));
    struct s3tags back;
    CHECK(parse_hdr(h, 10, &back, &code) == 0 && back.pairs.n == t.pairs.n &&
          !memcmp(back.pairs.p, t.pairs.p, t.pairs.n));
    free(h);
    s3tags_free(&back);
    CHECK(s3tag_count(t.pairs.p, t.pairs.n) == 4);
    struct gbuf x = {0};
    s3tag_xml(&x, t.pairs.p, t.pairs.n);
    CHECK(strstr(x.p, "<Tag><Key>b c</Key><Value>d&amp;e</Value></Tag>") != NULL);
    /* the XML form reads back the same */
    struct s3tags fromx;
    CHECK(parse_xml(x.p, 10, &fromx, &code) == 0 && fromx.pairs.n == t.pairs.n &&
          !memcmp(fromx.pairs.p, t.pairs.p, t.pairs.n));
    s3tags_free(&fromx);
    gbuf_free(&x);
    s3tags_free(&t);
    CHECK(parse_hdr("", 10, &t, &code) == 0 && t.n == 0);
    CHECK(parse_hdr("k", 10, &t, &code) == 0 && t.n == 1 && !memcmp(t.pairs.p, "k\0\0", 3));
    s3tags_free(&t);
    /* kept sorted by key, as S3 returns them, whatever the order given */
    CHECK(parse_hdr("foo=bar&bar&fo=1&a=2", 10, &t, &code) == 0 && t.n == 4);
    CHECK(t.pairs.n == 22 && !memcmp(t.pairs.p, "a\0" "2\0" "bar\0\0" "fo\0" "1\0" "foo\0" "bar\0",
                                     22));
    s3tags_free(&t);

    /* limits */
    char many[200] = "";
    for (int i = 0; i < 11; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sk%d=v", i ? "&" : "", i);
    CHECK(parse_hdr(many, 10, &t, &code) == 400 && !strcmp(code, "InvalidTag"));
    s3tags_free(&t);
    CHECK(parse_hdr(many, 50, &t, &code) == 0 && t.n == 11);
    s3tags_free(&t);
    char key[300], val[600];
    memset(key, 'k', 128), key[128] = '\0';
    memset(val, 'v', 256), val[256] = '\0';
    char *ok = xasprintf("%s=%s", key, val);
    CHECK(parse_hdr(ok, 10, &t, &code) == 0);
    s3tags_free(&t);
    free(ok);
    char *long_key = xasprintf("%sk=v", key), *long_val = xasprintf("k=%sv", val);
    CHECK(parse_hdr(long_key, 10, &t, &code) == 400 && !strcmp(code, "InvalidTag"));
    s3tags_free(&t);
    CHECK(parse_hdr(long_val, 10, &t, &code) == 400 && !strcmp(code, "InvalidTag"));
    s3tags_free(&t);
    free(long_key);
    free(long_val);
    /* characters, not bytes: 128 two-byte characters are a valid key */
    struct gbuf u = {0};
    for (int i = 0; i < 128; i++)
        gbuf_str(&u, "%C3%BC");
    gbuf_str(&u, "=v");
    CHECK(parse_hdr(u.p, 10, &t, &code) == 0 && t.pairs.n == 256 + 3);
    s3tags_free(&t);
    gbuf_free(&u);
    static const char *const refused[][2] = {
        {"a=1&a=2", "InvalidTag"},   /* a key twice */
        {"=v", "InvalidTag"},        /* an empty key */
        {"aws:x=v", "InvalidTag"},   /* reserved */
        {"k=%ff", "InvalidTag"},     /* not UTF-8 */
        {"k=%00", "InvalidTag"},     /* a control character */
        {"k=%zz", "InvalidArgument"}, /* not URL-encoded */
    };
    for (size_t i = 0; i < ARRAY_LEN(refused); i++) {
        CHECK(parse_hdr(refused[i][0], 10, &t, &code) == 400 && !strcmp(code, refused[i][1]));
        s3tags_free(&t);
    }

    /* XML */
    CHECK(parse_xml("<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>"
                    "<Tag><Key>a</Key><Value>1</Value></Tag><Tag><Value/><Key>b</Key></Tag>"
                    "</TagSet></Tagging>", 10, &t, &code) == 0 &&
          t.n == 2 && !memcmp(t.pairs.p, "a\0" "1\0" "b\0", 7));
    s3tags_free(&t);
    CHECK(parse_xml("<Tagging><TagSet></TagSet></Tagging>", 10, &t, &code) == 0 && t.n == 0);
    static const char *const bad[] = {
        "<Tagging><TagSet><Tag><Key>a</Key></Tag></TagSet></Tagging>",
        "<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag>",
        "<Other/>", "", "junk",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        CHECK(parse_xml(bad[i], 10, &t, &code) == 400 && !strcmp(code, "MalformedXML"));
        s3tags_free(&t);
    }
    CHECK(parse_xml("<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>a</Key>"
                    "<Value>2</Value></Tag></TagSet></Tagging>", 10, &t, &code) == 400 &&
          !strcmp(code, "InvalidTag"));
    s3tags_free(&t);
}

struct grants {
    int n;
    char ids[4][32];
};

static int grant_cb(void *arg, char **f, char *err, size_t errlen)
{
    struct grants *g = arg;
    (void)err;
    (void)errlen;
    snprintf(g->ids[g->n++ & 3], 32, "%s|%s", f[0] ? f[0] : "-", f[1] ? f[1] : "-");
    return 0;
}

/* Records and fields below the root by path. */
static void test_xml_paths(void)
{
    static const struct s3xml_spec spec = {"P", "L/G", {"E/ID", "Perm"}, 2, "O/ID", 0};
    struct grants g = {0};
    char owner[S3XML_FLAG_MAX], err[200];
    const char *x = "<P><O><ID>me</ID></O><L><G><E><ID>a</ID></E><Perm>R</Perm></G>"
                    "<G><Perm>W</Perm><ID>not-a-field</ID></G></L>"
                    "<G><E><ID>outside</ID></E></G></P>";
    CHECK(s3xml_records(x, strlen(x), &spec, grant_cb, &g, owner, err, sizeof(err)) == 2);
    CHECK(g.n == 2 && !strcmp(g.ids[0], "a|R") && !strcmp(g.ids[1], "-|W") &&
          !strcmp(owner, "me"));
    /* nesting past the path limit is refused */
    struct gbuf deep = {0};
    gbuf_str(&deep, "<P>");
    for (int i = 0; i < 200; i++)
        gbuf_str(&deep, "<L>");
    for (int i = 0; i < 200; i++)
        gbuf_str(&deep, "</L>");
    gbuf_str(&deep, "</P>");
    CHECK(s3xml_records(deep.p, deep.n, &spec, grant_cb, &g, NULL, err, sizeof(err)) == -1);
    gbuf_free(&deep);
}

static void test_ometa_tags(void)
{
    struct objmeta *m = xcalloc(1, sizeof(*m)), *d = xmalloc(sizeof(*d));
    m->size = 5;
    memcpy(m->umeta, "k\0v\0", 4);
    m->umeta_len = 4;
    CHECK(objmeta_tags_set(m, "a\0" "1\0", 4) == 0);
    char *buf = xmalloc(OBJMETA_MAX);
    size_t n = objmeta_encode(m, buf);
    CHECK(objmeta_decode(buf, n, d) == 0 && d->tags_len == 4 && !memcmp(d->tags, "a\0" "1\0", 4) &&
          d->umeta_len == 4 && d->size == 5);
    /* the largest tag set S3 allows fits, and so does the largest record */
    CHECK(S3TAG_OBJECT_BYTES <= OBJMETA_TAGS_MAX);
    memset(m->tags, 't', OBJMETA_TAGS_MAX);
    CHECK(objmeta_tags_set(m, m->tags, OBJMETA_TAGS_MAX) == 0);
    CHECK(objmeta_tags_set(m, m->tags, OBJMETA_TAGS_MAX + 1) == -E2BIG);
    memset(m->umeta, 'u', OBJMETA_UMETA_MAX), m->umeta_len = OBJMETA_UMETA_MAX;
    memset(m->etag, 'e', OBJMETA_ETAG_MAX), m->etag[OBJMETA_ETAG_MAX] = '\0';
    memset(m->backend_etag, 'b', OBJMETA_ETAG_MAX), m->backend_etag[OBJMETA_ETAG_MAX] = '\0';
    memset(m->ctype, 'c', OBJMETA_CTYPE_MAX), m->ctype[OBJMETA_CTYPE_MAX] = '\0';
    n = objmeta_encode(m, buf);
    CHECK(n <= OBJMETA_MAX && objmeta_decode(buf, n, d) == 0 && d->tags_len == OBJMETA_TAGS_MAX);
    /* no tags: a record as before tags existed, and decoded without any */
    m->tags_len = 0;
    n = objmeta_encode(m, buf);
    CHECK(objmeta_decode(buf, n, d) == 0 && d->tags_len == 0);
    free(buf);
    free(m);
    free(d);
}

int main(void)
{
    test_encodings();
    test_table();
    test_tags();
    test_xml_paths();
    test_ometa_tags();
    return check_done("test_s3sub");
}
