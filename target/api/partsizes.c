/*
 * partsizes: a multipart object's part sizes (see partsizes.h).
 */
#include "partsizes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "http.h"
#include "objmeta.h"
#include "util.h"

#define KEY ":parts"
#define PARTS_MAX 10000

void partsizes_keep(struct objmeta *m, const uint64_t *sizes, int n)
{
    char text[PARTSIZES_MAX];
    size_t at = 0;
    for (int i = 0; i < n;) {
        int run = 1;
        while (i + run < n && sizes[i + run] == sizes[i])
            run++;
        int w = snprintf(text + at, sizeof(text) - at, "%s%llu*%d", at ? "," : "",
                         (unsigned long long)sizes[i], run);
        if (w < 0 || (size_t)w >= sizeof(text) - at)
            return;              /* does not fit: none kept */
        at += (size_t)w;
        i += run;
    }
    objmeta_umeta_add(m, KEY, text);
}

/* A run of digits at *p (moved past it) into *v: 0, or -1 (none, or
 * past UINT64_MAX). */
static int digits(const char **p, uint64_t *v)
{
    const char *s = *p;
    *v = 0;
    while (*s >= '0' && *s <= '9') {
        if (*v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return -1;
        *v = *v * 10 + (uint64_t)(*s++ - '0');
    }
    if (s == *p)
        return -1;
    *p = s;
    return 0;
}

/* Part num's place in text, whose parts must add up to total: 0 with
 * *off and *len, and *count the parts; -1 when text is not well formed. */
static int locate(const char *text, uint64_t total, int num, uint64_t *off, uint64_t *len,
                  int *count)
{
    uint64_t at = 0, size, run;
    int seen = 0;
    *len = 0;
    for (const char *p = text; *p;) {
        if (digits(&p, &size) || *p++ != '*' || digits(&p, &run) || run < 1 ||
            run > PARTS_MAX - (uint64_t)seen || (*p && *p++ != ','))
            return -1;
        if (size && run > (total - at) / size)
            return -1;           /* past the object's size */
        if (num > seen && (uint64_t)num <= seen + run) {
            *off = at + size * (uint64_t)(num - seen - 1);
            *len = size;
        }
        at += size * run;
        seen += (int)run;
    }
    *count = seen;
    return at == total ? 0 : -1;
}

int partsizes_range(struct http_req *r, const struct objmeta *m, uint64_t *off, uint64_t *len)
{
    char v[16];
    int n = http_query_get(r, "partNumber", v, sizeof(v));
    if (n == -1)
        return 0;
    uint64_t num;
    if (n <= 0 || parse_u64(v, (size_t)n, &num) || num < 1 || num > PARTS_MAX) {
        err_reply(r, S3E_INVALID_ARGUMENT, "Part number must be an integer between 1 and %d, "
                                           "inclusive", PARTS_MAX);
        return -1;
    }
    if (http_req_header(r, "Range")) {
        err_reply(r, S3E_INVALID_REQUEST, "Cannot specify both Range header and partNumber "
                                          "query parameter");
        return -1;
    }
    const char *text = objmeta_umeta_get(m, KEY);
    int count;
    int in_parts = strchr(m->etag, '-') != NULL;   /* S3's multipart ETag: "...-N" */
    if (!text && !in_parts) {
        if (num == 1) {
            *off = 0;
            *len = m->size;
            return 2;
        }
    } else if (!text || locate(text, m->size, (int)num, off, len, &count)) {
        err_reply(r, S3E_NOT_IMPLEMENTED, "partNumber on a multipart object whose part sizes "
                                          "were not kept: not implemented");
        return -1;
    } else if ((int)num <= count) {
        http_resp_header(r, "x-amz-mp-parts-count", "%d", count);
        return *len ? 1 : 2;     /* an empty part: no range to name */
    }
    err_reply(r, S3E_INVALID_PART_NUMBER, "The requested partnumber is not satisfiable");
    return -1;
}

int partsizes_part(const struct objmeta *m, int num, uint64_t *len, int *count)
{
    const char *text = objmeta_umeta_get(m, KEY);
    uint64_t off;
    if (!text)
        return strchr(m->etag, '-') ? -1 : 1;    /* S3's multipart ETag: "...-N" */
    return locate(text, m->size, num, &off, len, count) ? -1 : 0;
}
