/*
 * nativelist: jansson reads the page (its size checked first); each entry
 * must carry a name and a size of the right types, the ETag and the time
 * are taken when present. A held object's time is its mtime in
 * nanoseconds and is given as S3 gives LastModified (ISO 8601, UTC).
 */
#include "nativelist.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

#define NAME_MAX_LEN 1024

static int fail(struct s3list *out, char *err, size_t errlen, const char *msg)
{
    s3list_free(out);
    snprintf(err, errlen, "%s", msg);
    return -1;
}

/* The entry's time: its last_modified, or its mtime (ns) in ISO 8601;
 * NULL when it has neither. */
static char *entry_time(const json_t *o)
{
    const char *lm = json_string_value(json_object_get(o, "last_modified"));
    if (lm && lm[0] && strlen(lm) < 64)
        return xstrdup(lm);
    const json_t *mt = json_object_get(o, "mtime");
    if (!json_is_integer(mt) || json_integer_value(mt) <= 0)
        return NULL;
    json_int_t ns = json_integer_value(mt);
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    char buf[96];
    if (!gmtime_r(&s, &tm) || tm.tm_year > 8099)
        return NULL;
    snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)((ns / 1000000) % 1000));
    return xstrdup(buf);
}

/* One entry into l->objs[l->n]: 0, or -1 when it is malformed. */
static int entry(const json_t *o, struct s3list *l)
{
    const json_t *nj = json_object_get(o, "name"), *sj = json_object_get(o, "size");
    const char *etag = json_string_value(json_object_get(o, "etag"));
    size_t nl = json_string_length(nj);
    if (!json_is_string(nj) || !nl || nl > NAME_MAX_LEN ||
        strlen(json_string_value(nj)) != nl || !json_is_integer(sj) ||
        json_integer_value(sj) < 0 || (etag && strlen(etag) > 1024))
        return -1;
    struct s3list_obj *e = &l->objs[l->n++];
    e->key = xstrdup(json_string_value(nj));
    e->size = (int64_t)json_integer_value(sj);
    e->etag = etag ? xstrdup(etag) : NULL;
    e->last_modified = entry_time(o);
    return 0;
}

int nativelist_parse(const char *body, size_t len, struct s3list *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (len > S3LIST_MAX_DOC)
        return fail(out, err, errlen, "listing page too large");
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    json_t *objs = json_object_get(j, "objects"), *next = json_object_get(j, "next");
    if (!json_is_object(j) || !json_is_array(objs) || (next && !json_is_string(next))) {
        json_decref(j);
        return fail(out, err, errlen, "not a listing page (objects and next)");
    }
    if (json_is_false(json_object_get(j, "complete"))) {
        json_decref(j);
        return fail(out, err, errlen, "listing incomplete: the cluster has targets down");
    }
    out->objs = xcalloc(json_array_size(objs) + 1, sizeof(*out->objs));
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o) {
        if (entry(o, out)) {
            json_decref(j);
            return fail(out, err, errlen, "a listing entry without a name and size");
        }
    }
    const char *nt = json_string_value(next);
    if (nt && nt[0] && strlen(nt) == json_string_length(next) && strlen(nt) <= NAME_MAX_LEN) {
        out->next_token = xstrdup(nt);
        out->truncated = 1;
    } else if (nt && nt[0]) {
        json_decref(j);
        return fail(out, err, errlen, "a listing page's next token is malformed");
    }
    json_decref(j);
    return 0;
}

void nativelist_err(const char *body, size_t len, char *out, size_t n)
{
    out[0] = '\0';
    json_t *j = json_loadb(body, len, 0, NULL);
    const char *e = json_string_value(json_object_get(j, "error"));
    if (e)
        snprintf(out, n, "%s", e);
    json_decref(j);
}
