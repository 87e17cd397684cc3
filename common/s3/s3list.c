/*
 * s3list: a small state machine over expat events. Character data is
 * collected for the element being read; an element's text is kept only
 * for the fields we use, at the depth where S3 puts them:
 *   ListBucketResult/{IsTruncated,NextContinuationToken,NextMarker}
 *   ListBucketResult/Contents/{Key,Size,ETag,LastModified}
 *   ListBucketResult/CommonPrefixes/Prefix
 */
#include "s3list.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define TEXT_MAX 4096
#define DEPTH_MAX 16

struct ps {
    struct s3list *l;
    int depth;
    char path[DEPTH_MAX][32];    /* element names from the root */
    char text[TEXT_MAX + 1];
    size_t tlen;
    int overflow;
    int bad;
    char err[128];
    struct s3list_obj cur;
};

static void fail(struct ps *s, const char *msg)
{
    if (!s->bad)
        snprintf(s->err, sizeof(s->err), "%s", msg);
    s->bad = 1;
}

static const char *local(const char *name)
{
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

static void cur_reset(struct ps *s)
{
    free(s->cur.key);
    free(s->cur.etag);
    free(s->cur.last_modified);
    memset(&s->cur, 0, sizeof(s->cur));
    s->cur.size = -1;
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct ps *s = ud;
    (void)attrs;
    if (s->depth >= DEPTH_MAX) {
        fail(s, "nesting too deep");
        return;
    }
    snprintf(s->path[s->depth], sizeof(s->path[0]), "%s", local(name));
    s->depth++;
    s->tlen = 0;
    s->overflow = 0;
    if (s->depth == 1 && strcmp(s->path[0], "ListBucketResult"))
        fail(s, "not a ListBucketResult document");
    if (s->depth == 2 && !strcmp(s->path[1], "Contents"))
        cur_reset(s); /* a previous entry may be pending after an error */
}

static void on_text(void *ud, const XML_Char *p, int n)
{
    struct ps *s = ud;
    if (s->tlen + (size_t)n > TEXT_MAX) {
        s->overflow = 1;
        return;
    }
    memcpy(s->text + s->tlen, p, (size_t)n);
    s->tlen += (size_t)n;
}

static char *text(struct ps *s)
{
    if (s->overflow) {
        fail(s, "element text too long");
        return NULL;
    }
    return xstrndup(s->text, s->tlen);
}

static void on_end(void *ud, const XML_Char *name)
{
    struct ps *s = ud;
    (void)name;
    if (s->depth <= 0 || s->bad) {
        s->depth--;
        return;
    }
    const char *el = s->path[s->depth - 1];
    struct s3list *l = s->l;
    if (s->depth == 2) {
        if (!strcmp(el, "IsTruncated")) {
            l->truncated = s->tlen == 4 && !memcmp(s->text, "true", 4);
        } else if ((!strcmp(el, "NextContinuationToken") || !strcmp(el, "NextMarker")) &&
                   !l->next_token) {
            l->next_token = text(s);
        } else if (!strcmp(el, "Contents")) {
            if (!s->cur.key) {
                fail(s, "Contents without a Key");
                cur_reset(s);
            } else {
                l->objs = xrealloc(l->objs, sizeof(*l->objs) * (size_t)(l->n + 1));
                l->objs[l->n++] = s->cur; /* the list owns its strings now */
                memset(&s->cur, 0, sizeof(s->cur));
            }
        }
    } else if (s->depth == 3 && !strcmp(s->path[1], "Contents")) {
        char *t = text(s);
        if (!t) {
            s->depth--;
            return;
        }
        if (!strcmp(el, "Key") && !s->cur.key) {
            if (s->tlen == 0 || s->tlen > 1024)
                fail(s, "bad Key");
            s->cur.key = t;
            t = NULL;
        } else if (!strcmp(el, "Size")) {
            uint64_t v;
            if (parse_u64(t, strlen(t), &v) || v > INT64_MAX)
                fail(s, "bad Size");
            else
                s->cur.size = (int64_t)v;
        } else if (!strcmp(el, "ETag") && !s->cur.etag) {
            s->cur.etag = t;
            t = NULL;
        } else if (!strcmp(el, "LastModified") && !s->cur.last_modified) {
            s->cur.last_modified = t;
            t = NULL;
        }
        free(t);
    } else if (s->depth == 3 && !strcmp(s->path[1], "CommonPrefixes") &&
               !strcmp(el, "Prefix")) {
        char *t = text(s);
        if (t) {
            l->prefixes = xrealloc(l->prefixes, sizeof(char *) * (size_t)(l->n_prefixes + 1));
            l->prefixes[l->n_prefixes++] = t;
        }
    }
    s->depth--;
    s->tlen = 0;
}

void s3list_free(struct s3list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->objs[i].key);
        free(l->objs[i].etag);
        free(l->objs[i].last_modified);
    }
    free(l->objs);
    for (int i = 0; i < l->n_prefixes; i++)
        free(l->prefixes[i]);
    free(l->prefixes);
    free(l->next_token);
    memset(l, 0, sizeof(*l));
}

int s3list_parse(const char *xml, size_t len, struct s3list *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (len > S3LIST_MAX_DOC) {
        snprintf(err, errlen, "listing document over %u bytes", S3LIST_MAX_DOC);
        return -1;
    }
    struct ps *s = xcalloc(1, sizeof(*s));
    s->l = out;
    XML_Parser p = XML_ParserCreate(NULL);
    XML_SetUserData(p, s);
    XML_SetElementHandler(p, on_start, on_end);
    XML_SetCharacterDataHandler(p, on_text);
    int ok = XML_Parse(p, xml, (int)len, 1) == XML_STATUS_OK;
    if (!ok)
        snprintf(err, errlen, "malformed XML at line %lu: %s",
                 (unsigned long)XML_GetCurrentLineNumber(p),
                 XML_ErrorString(XML_GetErrorCode(p)));
    else if (s->bad)
        snprintf(err, errlen, "%s", s->err);
    else if (s->depth != 0)
        snprintf(err, errlen, "unbalanced document");
    int rc = ok && !s->bad ? 0 : -1;
    cur_reset(s);
    XML_ParserFree(p);
    free(s);
    if (rc)
        s3list_free(out);
    return rc;
}
