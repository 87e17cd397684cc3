/*
 * mpuchecksum: a multipart upload's checksums (see mpuchecksum.h).
 */
#include "mpuchecksum.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "objmeta.h"
#include "s3.h"
#include "target.h"
#include "util.h"

int mpuchecksum_create(struct http_req *r, json_t *upload)
{
    const char *an = http_req_header(r, "x-amz-checksum-algorithm");
    const char *tn = http_req_header(r, "x-amz-checksum-type");
    enum s3ck_alg a = s3ck_alg_named(an);
    if (an && a == S3CK_NONE) {
        s3_fail(r, S3E_INVALID_REQUEST, "Checksum algorithm provided is unsupported.");
        return -1;
    }
    if (tn && strcasecmp(tn, "COMPOSITE") && strcasecmp(tn, "FULL_OBJECT")) {
        s3_fail(r, S3E_INVALID_REQUEST, "Value for x-amz-checksum-type header is invalid.");
        return -1;
    }
    if (tn && a == S3CK_NONE) {
        s3_fail(r, S3E_INVALID_REQUEST, "The x-amz-checksum-type header can only be used with "
                                        "the x-amz-checksum-algorithm header.");
        return -1;
    }
    if (a == S3CK_NONE)
        return 0;
    /* S3's defaults and combinations: CRC64NVME is only whole, the SHAs
     * only composite */
    int full = tn ? !strcasecmp(tn, "FULL_OBJECT") : a == S3CK_CRC64NVME;
    if ((full && !s3ck_is_crc(a)) || (!full && a == S3CK_CRC64NVME)) {
        s3_fail(r, S3E_INVALID_REQUEST, "The %s checksum type cannot be used with the %s "
                "checksum algorithm.", full ? "FULL_OBJECT" : "COMPOSITE", s3ck_name(a));
        return -1;
    }
    json_object_set_new(upload, "ckalg", json_string(s3ck_name(a)));
    json_object_set_new(upload, "cktype", json_string(full ? "FULL_OBJECT" : "COMPOSITE"));
    return 0;
}

void mpuchecksum_create_headers(struct http_req *r, const json_t *upload)
{
    enum s3ck_alg a = mpuchecksum_alg(upload);
    if (a == S3CK_NONE)
        return;
    http_resp_header_str(r, "x-amz-checksum-algorithm", s3ck_name(a));
    http_resp_header_str(r, "x-amz-checksum-type",
                     json_string_value(json_object_get(upload, "cktype")) ?: "COMPOSITE");
}

enum s3ck_alg mpuchecksum_alg(const json_t *upload)
{
    return s3ck_alg_named(json_string_value(json_object_get(upload, "ckalg")));
}

void mpuchecksum_part_record(json_t *part, const struct objmeta *m)
{
    enum s3ck_alg a;
    const char *v = target_checksum_of(m, &a);
    if (v)
        json_object_set_new(part, "ck", json_pack("{s:s, s:s}", "alg", s3ck_name(a), "v", v));
}

void mpuchecksum_part_xml(struct gbuf *b, const json_t *part)
{
    json_t *ck = json_object_get(part, "ck");
    enum s3ck_alg a = s3ck_alg_named(json_string_value(json_object_get(ck, "alg")));
    if (a != S3CK_NONE)
        s3_xml_elem(b, s3ck_element(a), json_string_value(json_object_get(ck, "v")) ?: "");
}

/* ---- the join ----------------------------------------------------------------- */

void mpuchecksum_join_start(struct mpuchecksum_join *jn, const json_t *upload)
{
    memset(jn, 0, sizeof(*jn));
    jn->alg = mpuchecksum_alg(upload);
    if (jn->alg == S3CK_NONE)
        return;
    jn->full = !strcmp(json_string_value(json_object_get(upload, "cktype")) ?: "",
                       "FULL_OBJECT");
    if (jn->full)
        s3ck_init(&jn->run, jn->alg);
}

int mpuchecksum_join_part(struct mpuchecksum_join *jn, const json_t *pj, enum s3ck_alg given_alg,
                          const char *given, const char **msg)
{
    json_t *ck = json_object_get(pj, "ck");
    enum s3ck_alg a = s3ck_alg_named(json_string_value(json_object_get(ck, "alg")));
    const char *v = json_string_value(json_object_get(ck, "v"));
    if (given && (given_alg != a || !v || strcmp(given, v))) {
        *msg = "one or more of the specified parts could not be found, or its checksum did "
               "not match the one the part was uploaded with";
        return -1;
    }
    if (jn->alg == S3CK_NONE)
        return 0;
    unsigned char raw[S3CK_RAW_MAX];
    if (a != jn->alg || !v || s3ck_decode(a, v, raw)) {
        if (jn->full) {          /* the object's value needs none; the parts' go unkept */
            jn->partless = 1;
            return 0;
        }
        *msg = "a part has no checksum of the upload's algorithm";
        return -1;
    }
    size_t len = s3ck_raw_len(a);
    jn->cat = xrealloc(jn->cat, len * (size_t)(jn->parts + 1));
    memcpy(jn->cat + len * (size_t)jn->parts++, raw, len);
    return 0;
}

void mpuchecksum_join_data(struct mpuchecksum_join *jn, const void *p, size_t n)
{
    if (jn->full)
        s3ck_update(&jn->run, p, n);
}

int mpuchecksum_join_end(struct mpuchecksum_join *jn, struct objmeta *m)
{
    char v[S3CK_VALUE_MAX];
    if (jn->alg == S3CK_NONE)
        return 0;
    if (jn->full) {
        unsigned char raw[S3CK_RAW_MAX];
        s3ck_b64(raw, s3ck_final(&jn->run, raw), v);
    } else {
        s3ck_composite(jn->alg, jn->cat, jn->parts, v);
    }
    int rc = target_keep_checksum(m, jn->alg, v);
    size_t len = s3ck_raw_len(jn->alg), w = (len + 2) / 3 * 4;
    if (!rc && !jn->partless && jn->parts && w * (size_t)jn->parts < PARTCK_MAX) {
        char *text = xmalloc(w * (size_t)jn->parts + 1);   /* each part's value, in turn */
        for (int i = 0; i < jn->parts; i++)
            s3ck_b64(jn->cat + len * (size_t)i, len, text + w * (size_t)i);
        objmeta_umeta_add(m, PARTCK_KEY, text);   /* none when it does not fit */
        free(text);
    }
    return rc;
}

int mpuchecksum_part_value(const struct objmeta *m, enum s3ck_alg alg, int i,
                           char out[S3CK_VALUE_MAX])
{
    const char *text = objmeta_umeta_get(m, PARTCK_KEY);
    size_t w = (s3ck_raw_len(alg) + 2) / 3 * 4;
    if (!text || !w || i < 0 || strlen(text) < w * (size_t)(i + 1) || w >= S3CK_VALUE_MAX)
        return -1;
    memcpy(out, text + w * (size_t)i, w);
    out[w] = '\0';
    return 0;
}

void mpuchecksum_join_free(struct mpuchecksum_join *jn)
{
    s3ck_free(&jn->run);
    free(jn->cat);
    jn->cat = NULL;
}
