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
    if (s->depth == 1 && strcmp(n, s->spec->root)) {
        char m[128];
        snprintf(m, sizeof(m), "expected <%s>, not <%.60s>", s->spec->root, n);
        stop(s, m);
        return;
    }
    if (s->depth == 2 && s->spec->record && !strcmp(n, s->spec->record)) {
        if (++s->count > S3XML_RECORDS_MAX) {
            stop(s, "too many entries");
            return;
        }
        clear_vals(s);
    }
    s->field = -1;
    if (s->depth == 2 && s->spec->flag && !strcmp(n, s->spec->flag))
        s->field = -2;
    if (s->depth == 3)
        for (int i = 0; i < s->spec->n_fields; i++)
            if (!strcmp(n, s->spec->fields[i]))
                s->field = i;
    s->text.n = 0;
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
    const char *n = local(name);
    if (s->field >= 0) {
        free(s->vals[s->field]);
        s->vals[s->field] = xstrndup(s->text.p ? s->text.p : "", s->text.n);
    } else if (s->field == -2 && s->flag_out) {
        snprintf(s->flag_out, 16, "%.*s", (int)(s->text.n < 15 ? s->text.n : 15),
                 s->text.p ? s->text.p : "");
    }
    s->field = -1;
    if (s->depth == 2 && s->spec->record && !strcmp(n, s->spec->record) &&
        s->cb(s->arg, s->vals, s->err, s->errlen))
        stop(s, NULL);
    s->depth--;
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
