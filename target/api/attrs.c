/*
 * attrs: GetObjectAttributes (GET ?attributes), on the target that owns the
 * object: what x-amz-object-attributes asks for of its ETag (unquoted, as
 * S3 gives it), checksum, parts, storage class and size, of the latest
 * version or of ?versionId's, without its bytes.
 *
 * The parts are those a multipart upload made (partsizes.h), paged by
 * x-amz-max-parts and x-amz-part-number-marker, each with its checksum
 * when the join kept them (mpuchecksum.h); an object not uploaded in parts
 * has no ObjectParts, as in S3. The record is read on the I/O pool
 * (store_version_find: a version kept may be the latest).
 *
 * Thread: the request's worker; the lookup on the I/O pool.
 */
#include "attrs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "http.h"
#include "iopool.h"
#include "mpuchecksum.h"
#include "objmeta.h"
#include "partsizes.h"
#include "s3.h"
#include "s3ck.h"
#include "store.h"
#include "target.h"
#include "util.h"

#define MAX_PARTS_DEFAULT 1000
#define PARTS_MAX 10000

enum {
    A_ETAG = 1,
    A_CHECKSUM = 2,
    A_PARTS = 4,
    A_CLASS = 8,
    A_SIZE = 16,
};

static const struct {
    const char *name;
    int bit;
} names[] = {
    {"ETag", A_ETAG},
    {"Checksum", A_CHECKSUM},
    {"ObjectParts", A_PARTS},
    {"StorageClass", A_CLASS},
    {"ObjectSize", A_SIZE},
};

struct attreq {
    struct target *t;
    struct http_req *r;
    char *mkey;
    size_t klen;
    char vid[64];                /* "" for the latest */
    int asked;                   /* A_* */
    uint64_t max_parts, marker;
    struct objmeta *m;
    int rc;
};

/* x-amz-object-attributes (comma-separated names) into *asked: 0, or -1
 * with r answered 400. */
static int asked_of(struct http_req *r, int *asked)
{
    const char *h = http_req_header(r, "x-amz-object-attributes");
    *asked = 0;
    for (const char *p = h ? h : ""; *p;) {
        p += strspn(p, " \t,");
        size_t n = strcspn(p, ",");
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        int bit = 0;
        for (size_t i = 0; i < ARRAY_LEN(names) && n; i++)
            if (strlen(names[i].name) == n && !strncasecmp(p, names[i].name, n))
                bit = names[i].bit;
        if (n && !bit) {
            err_reply(r, S3E_INVALID_ARGUMENT, "Invalid attribute name specified.");
            return -1;
        }
        *asked |= bit;
        p += n;
        p += strcspn(p, ",");
    }
    if (!*asked) {
        err_reply(r, S3E_INVALID_REQUEST, "The x-amz-object-attributes header specifying the "
                                          "attributes to be retrieved is either missing or "
                                          "empty");
        return -1;
    }
    return 0;
}

/* A number header (absent: dflt) into *v, at most max: 0, or -1 answered. */
static int number_of(struct http_req *r, const char *name, uint64_t dflt, uint64_t max,
                     uint64_t *v)
{
    const char *h = http_req_header(r, name);
    *v = dflt;
    if (h && (parse_u64(h, strlen(h), v) || *v > max)) {
        err_reply(r, S3E_INVALID_ARGUMENT, "%s must be an integer from 0 to %llu", name,
                  (unsigned long long)max);
        return -1;
    }
    return 0;
}

static void find_work(void *arg)
{
    struct attreq *a = arg;
    struct store *st = &a->t->store;
    char *vkey = NULL;
    size_t vkl;
    a->rc = store_version_find(st, store_pick(st, a->mkey, a->klen), a->mkey, a->klen,
                               a->vid[0] ? a->vid : NULL, &vkey, &vkl, a->m);
    free(vkey);
}

/* ObjectParts: the page after the marker, each part with its size and
 * its checksum when kept. */
static void parts_xml(struct attreq *a, struct gbuf *b, int count)
{
    enum s3ck_alg alg;
    const char *ck = target_checksum_of(a->m, &alg);
    char num[32];
    gbuf_str(b, "<ObjectParts>");
    snprintf(num, sizeof(num), "%d", count);
    s3_xml_elem(b, "PartsCount", num);
    snprintf(num, sizeof(num), "%llu", (unsigned long long)a->marker);
    s3_xml_elem(b, "PartNumberMarker", num);
    snprintf(num, sizeof(num), "%llu", (unsigned long long)a->max_parts);
    s3_xml_elem(b, "MaxParts", num);
    uint64_t last = a->marker, shown = 0;
    for (uint64_t p = a->marker + 1; p <= (uint64_t)count && shown < a->max_parts; p++) {
        uint64_t len = 0;
        int c;
        partsizes_part(a->m, (int)p, &len, &c);
        char v[S3CK_VALUE_MAX];
        gbuf_str(b, "<Part>");
        if (ck && !mpuchecksum_part_value(a->m, alg, (int)p - 1, v))
            s3_xml_elem(b, s3ck_element(alg), v);
        snprintf(num, sizeof(num), "%llu", (unsigned long long)p);
        s3_xml_elem(b, "PartNumber", num);
        snprintf(num, sizeof(num), "%llu", (unsigned long long)len);
        s3_xml_elem(b, "Size", num);
        gbuf_str(b, "</Part>");
        last = p;
        shown++;
    }
    int more = last < (uint64_t)count;
    s3_xml_elem(b, "IsTruncated", more ? "true" : "false");
    if (more) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)last);
        s3_xml_elem(b, "NextPartNumberMarker", num);
    }
    gbuf_str(b, "</ObjectParts>");
}

static void answer(struct attreq *a)
{
    struct http_req *r = a->r;
    const struct objmeta *m = a->m;
    uint64_t len;
    int count = 0;
    int parts = partsizes_part(m, 1, &len, &count);
    if (parts < 0 && (a->asked & A_PARTS)) {
        err_reply(r, S3E_NOT_IMPLEMENTED, "ObjectParts of a multipart object whose part sizes "
                                          "were not kept: not implemented");
        return;
    }
    char date[64];
    s3_http_date(m->mtime_ns, date, sizeof(date));
    http_resp_header_str(r, "Last-Modified", date);
    const char *vid = objmeta_umeta_get(m, OBJMETA_VID);
    if (vid)
        http_resp_header_str(r, "x-amz-version-id", vid);
    struct gbuf b = {0};
    gbuf_str(&b, S3_XML_HEAD "<GetObjectAttributesResponse xmlns=\"" S3_NS "\">");
    if (a->asked & A_ETAG) {
        char etag[OBJMETA_ETAG_MAX + 1];
        objmeta_etag(m, etag, sizeof(etag));
        size_t n = strlen(etag);
        if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
            memmove(etag, etag + 1, n - 2);
            etag[n - 2] = '\0';
        }
        s3_xml_elem(&b, "ETag", etag);
    }
    enum s3ck_alg alg;
    if ((a->asked & A_CHECKSUM) && target_checksum_of(m, &alg)) {
        gbuf_str(&b, "<Checksum>");
        target_checksum_xml(&b, m);
        gbuf_str(&b, "</Checksum>");
    }
    if ((a->asked & A_PARTS) && parts == 0)
        parts_xml(a, &b, count);
    if (a->asked & A_CLASS)
        s3_xml_elem(&b, "StorageClass", "STANDARD");
    if (a->asked & A_SIZE) {
        char num[32];
        snprintf(num, sizeof(num), "%llu", (unsigned long long)m->size);
        s3_xml_elem(&b, "ObjectSize", num);
    }
    gbuf_str(&b, "</GetObjectAttributesResponse>\n");
    http_reply(r, 200, "application/xml", b.p, b.n);
    gbuf_free(&b);
}

static void find_done(void *arg)
{
    struct attreq *a = arg;
    struct http_req *r = a->r;
    if (a->rc == -ENOENT && a->vid[0]) {
        err_reply(r, S3E_NO_SUCH_VERSION, "The specified version does not exist.");
    } else if (a->rc == -ENOENT) {
        http_resp_header_str(r, "x-amz-delete-marker", "false");
        err_reply(r, S3E_NO_SUCH_KEY, "The specified key does not exist.");
    } else if (a->rc) {
        http_reply_error(r, err_status(a->rc), "cannot read the object's record: %s",
                         strerror(-a->rc));
    } else if (store_is_marker(a->m)) {   /* S3: 404 for the latest, 405 for its own id */
        http_resp_header_str(r, "x-amz-delete-marker", "true");
        http_resp_header_str(r, "x-amz-version-id", store_vid(a->m));
        if (a->vid[0])
            err_reply(r, S3E_METHOD_NOT_ALLOWED, "The specified method is not allowed "
                                                 "against this resource.");
        else
            err_reply(r, S3E_NO_SUCH_KEY, "The specified key does not exist.");
    } else {
        answer(a);
    }
    free(a->m);
    free(a->mkey);
    http_req_unref(r);
    free(a);
}

void attrs_get(struct target *t, struct http_req *r, char *mkey, size_t klen)
{
    struct attreq *a = xcalloc(1, sizeof(*a));
    a->t = t;
    a->r = r;
    a->mkey = mkey;
    a->klen = klen;
    int n = http_query_get(r, "versionId", a->vid, sizeof(a->vid));
    if (n == -1) {
        a->vid[0] = '\0';
    } else if (n <= 0 || !store_vid_valid(a->vid)) {
        err_reply(r, S3E_INVALID_ARGUMENT, "Invalid version id specified");
        goto refused;
    }
    if (asked_of(r, &a->asked) ||
        number_of(r, "x-amz-max-parts", MAX_PARTS_DEFAULT, PARTS_MAX, &a->max_parts) ||
        number_of(r, "x-amz-part-number-marker", 0, PARTS_MAX, &a->marker))
        goto refused;             /* answered */
    a->m = xmalloc(sizeof(*a->m));
    http_req_ref(r);
    iopool_submit(t->io, r->w->q, find_work, find_done, a);
    return;
refused:
    free(a->mkey);
    free(a);
}
