/*
 * s3list: a small state machine over expat events. Character data is
 * collected for the element being read; the path from the root (names
 * joined by "/") says which field an element is, by the dialect's table:
 *   S3:    ListBucketResult/{IsTruncated,NextContinuationToken,NextMarker}
 *          ListBucketResult/Contents/{Key,Size,ETag,LastModified}
 *          ListBucketResult/CommonPrefixes/Prefix
 *   Azure: EnumerationResults/NextMarker
 *          EnumerationResults/Blobs/Blob/{Name,Properties/Content-Length,
 *                                         Properties/Etag,Properties/Last-Modified}
 *          EnumerationResults/Blobs/BlobPrefix/Name
 */
#include "s3list.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define TEXT_MAX 4096
#define DEPTH_MAX 16
#define PATH_MAX_LEN 256

const struct s3list_dialect s3list_s3 = {
    "ListBucketResult", "Contents", "Key", "Size", "ETag", "LastModified",
    "CommonPrefixes/Prefix", {"NextContinuationToken", "NextMarker"}, "IsTruncated", 0,
};

const struct s3list_dialect s3list_azure = {
    "EnumerationResults", "Blobs/Blob", "Name", "Properties/Content-Length",
    "Properties/Etag", "Properties/Last-Modified", "Blobs/BlobPrefix/Name",
    {"NextMarker", NULL}, NULL, 1,
};

struct ps {
    const struct s3list_dialect *d;
    struct s3list *l;
    int depth;
    size_t mark[DEPTH_MAX + 1];  /* path's length at each depth */
    char path[PATH_MAX_LEN];     /* below the root: "Contents/Key" */
    char text[TEXT_MAX + 1];
    size_t tlen;
    int overflow;
    int bad;
    int in_entry;
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

static int is(const char *path, const char *want)
{
    return want && !strcmp(path, want);
}

/* The path below the entry, or NULL when outside one. */
static const char *in_entry(const struct ps *s)
{
    size_t el = strlen(s->d->entry);
    if (strncmp(s->path, s->d->entry, el) || s->path[el] != '/')
        return NULL;
    return s->path + el + 1;
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct ps *s = ud;
    (void)attrs;
    if (s->depth >= DEPTH_MAX)
        fail(s, "nesting too deep");
    if (s->bad) {                /* nothing more is read; ends still pair with starts */
        s->depth++;
        return;
    }
    const char *n = local(name);
    size_t at = s->mark[s->depth];
    if (s->depth == 0) {
        if (strcmp(n, s->d->root))
            fail(s, "not a listing document");
    } else {
        size_t nl = strlen(n);
        if (at + 1 + nl >= sizeof(s->path)) {
            fail(s, "element names too long");
            s->depth++;
            return;
        }
        if (at)
            s->path[at++] = '/';
        memcpy(s->path + at, n, nl + 1);
        at += nl;
    }
    s->depth++;
    s->mark[s->depth] = at;
    s->tlen = 0;
    s->overflow = 0;
    if (is(s->path, s->d->entry))
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

static void entry_done(struct ps *s)
{
    struct s3list *l = s->l;
    if (!s->cur.key) {
        fail(s, "an entry without a name");
        cur_reset(s);
        return;
    }
    l->objs = xrealloc(l->objs, sizeof(*l->objs) * (size_t)(l->n + 1));
    l->objs[l->n++] = s->cur; /* the list owns its strings now */
    memset(&s->cur, 0, sizeof(s->cur));
}

/* An entry's field ends (f: its path below the entry). */
static void entry_field(struct ps *s, const char *f)
{
    const struct s3list_dialect *d = s->d;
    if (!is(f, d->key) && !is(f, d->size) && !is(f, d->etag) && !is(f, d->last_modified))
        return;
    char *t = text(s);
    if (!t)
        return;
    if (is(f, d->key) && !s->cur.key) {
        if (s->tlen == 0 || s->tlen > 1024)
            fail(s, "bad Key");
        s->cur.key = t;
        t = NULL;
    } else if (is(f, d->size)) {
        uint64_t v;
        if (parse_u64(t, strlen(t), &v) || v > INT64_MAX)
            fail(s, "bad Size");
        else
            s->cur.size = (int64_t)v;
    } else if (is(f, d->etag) && !s->cur.etag) {
        s->cur.etag = d->bare_etag && t[0] != '"' ? xasprintf("\"%s\"", t) : t;
        if (s->cur.etag != t)
            free(t);
        t = NULL;
    } else if (is(f, d->last_modified) && !s->cur.last_modified) {
        s->cur.last_modified = t;
        t = NULL;
    }
    free(t);
}

static void on_end(void *ud, const XML_Char *name)
{
    struct ps *s = ud;
    (void)name;
    if (s->depth <= 0 || s->bad) {
        s->depth--;
        return;
    }
    const struct s3list_dialect *d = s->d;
    struct s3list *l = s->l;
    const char *f;
    if (is(s->path, d->truncated)) {
        l->truncated = s->tlen == 4 && !memcmp(s->text, "true", 4);
    } else if ((is(s->path, d->next[0]) || is(s->path, d->next[1])) && !l->next_token) {
        l->next_token = text(s);
        if (!d->truncated && l->next_token && !l->next_token[0]) {
            free(l->next_token);          /* an empty marker: the last page */
            l->next_token = NULL;
        }
        if (!d->truncated)
            l->truncated = l->next_token != NULL;
    } else if (is(s->path, d->entry)) {
        entry_done(s);
    } else if ((f = in_entry(s))) {
        entry_field(s, f);
    } else if (is(s->path, d->prefix)) {
        char *t = text(s);
        if (t) {
            l->prefixes = xrealloc(l->prefixes, sizeof(char *) * (size_t)(l->n_prefixes + 1));
            l->prefixes[l->n_prefixes++] = t;
        }
    }
    s->depth--;
    s->path[s->mark[s->depth]] = '\0';
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
    return s3list_parse_as(&s3list_s3, xml, len, out, err, errlen);
}

int s3list_parse_as(const struct s3list_dialect *d, const char *xml, size_t len,
                    struct s3list *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (len > S3LIST_MAX_DOC) {
        snprintf(err, errlen, "listing document over %u bytes", S3LIST_MAX_DOC);
        return -1;
    }
    struct ps *s = xcalloc(1, sizeof(*s));
    s->d = d;
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

void s3list_err_code(const char *body, size_t len, char *out, size_t n)
{
    static const char open_tag[] = "<Code>", close_tag[] = "</Code>";
    out[0] = '\0';
    const char *c = memmem(body, len, open_tag, sizeof(open_tag) - 1);
    if (!c)
        return;
    c += sizeof(open_tag) - 1;
    size_t left = len - (size_t)(c - body);
    const char *e = memmem(c, left, close_tag, sizeof(close_tag) - 1);
    if (!e)
        return;
    size_t k = (size_t)(e - c);
    for (size_t i = 0; i < k; i++)     /* a code is a word: anything else is not one */
        if (!((c[i] >= 'A' && c[i] <= 'Z') || (c[i] >= 'a' && c[i] <= 'z') ||
              (c[i] >= '0' && c[i] <= '9') || c[i] == '.' || c[i] == '_' || c[i] == '-'))
            return;
    snprintf(out, n, "%.*s", (int)(k < n ? k : n - 1), c);
}
