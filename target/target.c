/*
 * target: helpers shared by the target's handlers (see target.h). They
 * are small and pure but for the response headers they add; keeping them
 * here, apart from the handlers, lets every handler use them without any
 * handler calling another one's file, or main.c, for them.
 *
 * Threads: any; the http_req ones on the request's worker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "http.h"
#include "s3.h"
#include "s3tag.h"
#include "target.h"

struct hcli *target_cli(struct http_req *r)
{
    return ((struct target_worker *)r->w->local)->cli;
}

struct hc *target_hc(struct http_req *r)
{
    return ((struct target_worker *)r->w->local)->hc;
}

int target_is_s3(const struct http_req *r)
{
    return r->on_error == s3_error_reply;
}

/* S3 mode: the headers an object's tags make. */
static void tag_headers(struct http_req *r, const struct ometa *m)
{
    if (!m->tags_len || !target_is_s3(r))
        return;
    http_resp_header(r, "x-amz-tagging-count", "%d", s3tag_count(m->tags, m->tags_len));
    if (http_req_header(r, COPY_TAGS_HEADER)) {
        char *h = s3tag_header(m->tags, m->tags_len);
        http_resp_header(r, COPY_TAGS_HEADER, "%s", h);
        free(h);
    }
}

void target_meta_headers(struct http_req *r, const struct ometa *m)
{
    char date[64], etag[OMETA_ETAG_MAX + 1];
    s3_http_date(m->mtime_ns, date, sizeof(date));
    ometa_etag(m, etag, sizeof(etag));
    http_resp_header(r, "ETag", "%s", etag);
    http_resp_header(r, "X-Shoal-Checksum", "xxh3-64:%016llx", (unsigned long long)m->cksum);
    http_resp_header(r, "X-Shoal-Version", "%llu", (unsigned long long)m->version);
    http_resp_header(r, "Last-Modified", "%s", date);
    http_resp_header(r, "Accept-Ranges", "bytes");
    for (size_t off = 0; off < m->umeta_len;) {
        const char *k = m->umeta + off;
        const char *v = k + strlen(k) + 1;
        char name[OMETA_UMETA_MAX + 16];
        snprintf(name, sizeof(name), "x-amz-meta-%s", k);
        http_resp_header(r, name, "%s", v);
        off = (size_t)(v - m->umeta) + strlen(v) + 1;
    }
    tag_headers(r, m);
}

int target_s3_meta(struct http_req *r, struct ometa *m)
{
    static const char pre[] = "x-amz-meta-";
    for (int i = 0; i < r->n_hdrs; i++) {
        const char *n = r->hdrs[i].name;
        if (strncasecmp(n, pre, sizeof(pre) - 1) || !n[sizeof(pre) - 1])
            continue;
        if (ometa_umeta_add(m, n + sizeof(pre) - 1, r->hdrs[i].value)) {
            err_reply(r, S3E_METADATA_TOO_LARGE, "your metadata headers exceed the maximum "
                                                 "allowed metadata size (%zu bytes)",
                      sizeof(m->umeta));
            return err_s3_status(S3E_METADATA_TOO_LARGE);
        }
    }
    return 0;
}

int target_s3_tags(struct http_req *r, struct ometa *m)
{
    const char *h = http_req_header(r, "x-amz-tagging");
    if (!h)
        return 0;
    struct s3tags tags = {0};
    enum s3e code;
    char msg[300];
    int st = s3tag_parse_header(h, S3TAG_OBJECT_MAX, &tags, &code, msg, sizeof(msg));
    if (!st && ometa_tags_set(m, tags.pairs.p, tags.pairs.n))
        abort(); /* S3TAG_OBJECT_BYTES fits OMETA_TAGS_MAX (subres.c) */
    s3tags_free(&tags);
    if (st)
        s3_fail(r, code, "%s", msg);
    return st;
}
