#include "s3xml.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct px {
    const struct s3xml_spec *spec;
    int (*cb)(void *arg, char **fields, char *err, size_t errlen);
    void *arg;
    XML_Parser xp;
    int depth;
    char path[S3XML_PATH_MAX];   /* of the open element, below the root ("" at it) */
    size_t plen[S3XML_PATH_MAX]; /* path's length at each depth, to pop */
    int record_depth;            /* of the open record, 0 none */
    size_t record_plen;          /* path's length at the record */
    int field;                   /* the field being read, -1 none; -2 the flag */
    char *vals[S3XML_FIELDS_MAX];
    struct gbuf text;
    int count;
    char *flag_out;
    char *err;
    size_t errlen;
    int bad;
};

static const char *local(const char *name)
{
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

static void stop(struct px *s, const char *msg)
{
    if (!s->bad && msg)
        snprintf(s->err, s->errlen, "%s", msg);
    s->bad = 1;
    XML_StopParser(s->xp, XML_FALSE);
}

static void clear_vals(struct px *s)
{
    for (int i = 0; i < S3XML_FIELDS_MAX; i++) {
        free(s->vals[i]);
        s->vals[i] = NULL;
    }
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    struct px *s = ud;
    (void)attrs;
    const char *n = local(name);
    s->depth++;
    s->field = -1;
    s->text.n = 0;
    if (s->depth == 1) {
        if (strcmp(n, s->spec->root)) {
            char m[128];
            snprintf(m, sizeof(m), "expected <%s>, not <%.60s>", s->spec->root, n);
            stop(s, m);
        }
        return;
    }
    /* the path below the root grows by /name */
    size_t at = s->plen[s->depth - 2], nl = strlen(n);
    if (s->depth >= S3XML_PATH_MAX || at + 1 + nl >= sizeof(s->path)) {
        stop(s, "elements are nested too deeply");
        return;
    }
    if (at)
        s->path[at++] = '/';
    memcpy(s->path + at, n, nl + 1);
    s->plen[s->depth - 1] = at + nl;
    if (!s->record_depth && s->spec->record && !strcmp(s->path, s->spec->record)) {
        if (++s->count > S3XML_RECORDS_MAX) {
            stop(s, "too many entries");
            return;
        }
        clear_vals(s);
        s->record_depth = s->depth;
        s->record_plen = at + nl;
        return;
    }
    if (s->spec->flag && !strcmp(s->path, s->spec->flag))
        s->field = -2;
    if (s->record_depth)
        for (int i = 0; i < s->spec->n_fields; i++)
            if (!strcmp(s->path + s->record_plen + 1, s->spec->fields[i]))
                s->field = i;
}

static void on_text(void *ud, const XML_Char *t, int len)
{
    struct px *s = ud;
    if (s->field == -1)
        return;
    if (s->text.n + (size_t)len > S3XML_TEXT_MAX) {
        stop(s, "a value is too long");
        return;
    }
    gbuf_add(&s->text, t, (size_t)len);
}

static void on_end(void *ud, const XML_Char *name)
{
    struct px *s = ud;
    (void)name;
    if (s->field >= 0 && (s->spec->multi & (1u << s->field)) && s->vals[s->field]) {
        char *joined = xasprintf("%s" S3XML_MULTI_SEP "%.*s", s->vals[s->field], (int)s->text.n,
                                 s->text.p ? s->text.p : "");
        free(s->vals[s->field]);
        s->vals[s->field] = joined;
        if (strlen(joined) > S3XML_TEXT_MAX)
            stop(s, "a value is too long");
    } else if (s->field >= 0) {
        free(s->vals[s->field]);
        s->vals[s->field] = xstrndup(s->text.p ? s->text.p : "", s->text.n);
    } else if (s->field == -2 && s->flag_out) {
        snprintf(s->flag_out, S3XML_FLAG_MAX, "%.*s",
                 (int)(s->text.n < S3XML_FLAG_MAX - 1 ? s->text.n : S3XML_FLAG_MAX - 1),
                 s->text.p ? s->text.p : "");
    }
    s->field = -1;
    if (s->depth == s->record_depth) {
        s->record_depth = 0;
        if (s->cb(s->arg, s->vals, s->err, s->errlen))
            stop(s, NULL);
    }
    s->depth--;
    if (s->depth >= 1)
        s->path[s->plen[s->depth - 1]] = '\0';
}

/* No DTDs: entities are a way to make a small body expand. */
static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                       const XML_Char *pubid, int has_internal)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal;
    stop(ud, "document type declarations are not allowed");
}

int s3xml_records(const char *body, size_t len, const struct s3xml_spec *spec,
                  int (*cb)(void *arg, char **fields, char *err, size_t errlen), void *arg,
                  char *flag_out, char *err, size_t errlen)
{
    struct px s = {.spec = spec, .cb = cb, .arg = arg, .field = -1, .flag_out = flag_out,
                   .err = err, .errlen = errlen};
    if (flag_out)
        flag_out[0] = '\0';
    s.xp = XML_ParserCreateNS(NULL, ':');
    if (!s.xp)
        abort();
    XML_SetUserData(s.xp, &s);
    XML_SetElementHandler(s.xp, on_start, on_end);
    XML_SetCharacterDataHandler(s.xp, on_text);
    XML_SetStartDoctypeDeclHandler(s.xp, on_doctype);
    int ok = XML_Parse(s.xp, body, (int)len, 1) == XML_STATUS_OK;
    if (!ok && !s.bad)
        snprintf(err, errlen, "malformed XML: %s at line %lu", XML_ErrorString(XML_GetErrorCode(s.xp)),
                 (unsigned long)XML_GetCurrentLineNumber(s.xp));
    if (ok && s.bad == 0 && s.depth != 0)
        ok = 0;
    XML_ParserFree(s.xp);
    clear_vals(&s);
    gbuf_free(&s.text);
    return ok && !s.bad ? s.count : -1;
}
