#include "s3tag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "s3.h"
#include "s3xml.h"

/* Characters in n bytes of valid UTF-8 without control characters; -1
 * when they are not that. */
static long utf8_chars(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    long chars = 0;
    for (size_t i = 0; i < n; chars++) {
        unsigned c = p[i];
        size_t len;
        unsigned cp;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f)
                return -1;
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            len = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4, cp = c & 0x07;
        else
            return -1;
        if (n - i < len)
            return -1;
        for (size_t j = 1; j < len; j++) {
            if ((p[i + j] & 0xc0) != 0x80)
                return -1;
            cp = cp << 6 | (p[i + j] & 0x3f);
        }
        /* overlong forms, surrogates, past U+10FFFF */
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return -1;
        i += len;
    }
    return chars;
}

static int bad_tag(enum s3e *code, char *msg, size_t msglen, const char *fmt, const char *k,
                   size_t kl)
{
    *code = S3E_INVALID_TAG;
    snprintf(msg, msglen, fmt, (int)(kl > 64 ? 64 : kl), k);
    return err_s3_status(*code);
}

/* Add one tag, checked against the limits s3tag.h lists: 0, or 400 with
 * *code and msg. */
static int s3tag_add(struct s3tags *t, int max, const char *k, size_t kl, const char *v,
                     size_t vl, enum s3e *code, char *msg, size_t msglen)
{
    if (t->n == max) {
        *code = S3E_INVALID_TAG;
        snprintf(msg, msglen, "at most %d tags are allowed", max);
        return err_s3_status(*code);
    }
    long kc = utf8_chars(k, kl), vc = utf8_chars(v, vl);
    if (kc < 1 || kc > S3TAG_KEY_MAX)
        return bad_tag(code, msg, msglen,
                       "the tag key '%.*s' must be 1 to 128 characters of UTF-8 text", k, kl);
    if (vc < 0 || vc > S3TAG_VALUE_MAX)
        return bad_tag(code, msg, msglen,
                       "the value of tag '%.*s' must be 0 to 256 characters of UTF-8 text", k,
                       kl);
    if (kl >= 4 && !strncmp(k, "aws:", 4))
        return bad_tag(code, msg, msglen, "the tag key '%.*s' is in the reserved aws: space",
                       k, kl);
    const char *ek, *ev;
    size_t off = 0, at = t->pairs.n;   /* where it goes: before the first key after it */
    while (s3tag_next(t->pairs.p, t->pairs.n, &off, &ek, &ev)) {
        size_t el = strlen(ek);
        int c = memcmp(ek, k, el < kl ? el : kl);
        if (!c && el == kl)
            return bad_tag(code, msg, msglen, "the tag key '%.*s' is given more than once", k,
                           kl);
        if (at == t->pairs.n && (c > 0 || (!c && el > kl)))
            at = (size_t)(ek - t->pairs.p);
    }
    struct gbuf b = {0};
    gbuf_add(&b, t->pairs.p, at);
    gbuf_add(&b, k, kl);
    gbuf_add(&b, "", 1);
    gbuf_add(&b, v, vl);
    gbuf_add(&b, "", 1);
    gbuf_add(&b, t->pairs.p + at, t->pairs.n - at);
    gbuf_free(&t->pairs);
    t->pairs = b;
    t->n++;
    return 0;
}

struct xml_ctx {
    struct s3tags *t;
    int max;
    enum s3e *code;
    int status;
};

static int xml_tag(void *arg, char **f, char *err, size_t errlen)
{
    struct xml_ctx *x = arg;
    if (!f[0] || !f[1]) {
        snprintf(err, errlen, "each Tag needs a Key and a Value");
        return -1;
    }
    x->status = s3tag_add(x->t, x->max, f[0], strlen(f[0]), f[1], strlen(f[1]), x->code, err,
                          errlen);
    return x->status ? -1 : 0;
}

int s3tag_parse_xml(const char *body, size_t len, int max, struct s3tags *t, enum s3e *code,
                    char *msg, size_t msglen)
{
    static const struct s3xml_spec spec = {"Tagging", "TagSet/Tag", {"Key", "Value"}, 2, NULL, 0};
    struct xml_ctx x = {t, max, code, 0};
    if (s3xml_records(body, len, &spec, xml_tag, &x, NULL, msg, msglen) >= 0)
        return 0;
    if (!x.status)
        *code = S3E_MALFORMED_XML;
    return err_s3_status(*code);
}

/* One part of an x-amz-tagging value, '+' and %XX decoded, into out (at
 * least n + 1 bytes); its length or -1. */
static int form_decode(const char *s, size_t n, char *out)
{
    char *tmp = xstrndup(s, n);
    for (size_t i = 0; i < n; i++)
        if (tmp[i] == '+')
            tmp[i] = ' ';
    int l = http_pct_decode(tmp, n, out);
    free(tmp);
    return l;
}

int s3tag_parse_header(const char *h, int max, struct s3tags *t, enum s3e *code, char *msg,
                       size_t msglen)
{
    size_t hl = strlen(h);
    char *k = xmalloc(hl + 1), *v = xmalloc(hl + 1);
    int rc = 0;
    while (*h && !rc) {
        size_t n = strcspn(h, "&");
        const char *eq = memchr(h, '=', n);
        size_t kn = eq ? (size_t)(eq - h) : n;
        int kl = form_decode(h, kn, k);
        int vl = eq ? form_decode(eq + 1, n - kn - 1, v) : 0;
        if (kl < 0 || vl < 0) {
            *code = S3E_INVALID_ARGUMENT;
            snprintf(msg, msglen, "x-amz-tagging is not a valid URL-encoded query");
            rc = err_s3_status(*code);
        } else if (n > 0) {
            rc = s3tag_add(t, max, k, (size_t)kl, v, (size_t)vl, code, msg, msglen);
        }
        h += n + (h[n] == '&');
    }
    free(k);
    free(v);
    return rc;
}

void s3tags_free(struct s3tags *t)
{
    gbuf_free(&t->pairs);
    t->n = 0;
}

int s3tag_next(const char *pairs, size_t len, size_t *off, const char **k, const char **v)
{
    if (*off >= len)
        return 0;
    *k = pairs + *off;
    *v = *k + strlen(*k) + 1;
    *off = (size_t)(*v - pairs) + strlen(*v) + 1;
    return 1;
}

int s3tag_count(const char *pairs, size_t len)
{
    const char *k, *v;
    size_t off = 0;
    int n = 0;
    while (s3tag_next(pairs, len, &off, &k, &v))
        n++;
    return n;
}

void s3tag_xml(struct gbuf *b, const char *pairs, size_t len)
{
    const char *k, *v;
    size_t off = 0;
    gbuf_str(b, S3_XML_HEAD "<Tagging xmlns=\"" S3_NS "\"><TagSet>");
    while (s3tag_next(pairs, len, &off, &k, &v)) {
        gbuf_str(b, "<Tag>");
        s3_xml_elem(b, "Key", k);
        s3_xml_elem(b, "Value", v);
        gbuf_str(b, "</Tag>");
    }
    gbuf_str(b, "</TagSet></Tagging>\n");
}

char *s3tag_header(const char *pairs, size_t len)
{
    struct gbuf b = {0};
    const char *k, *v;
    size_t off = 0;
    while (s3tag_next(pairs, len, &off, &k, &v)) {
        char *ek = http_pct_encode(k, strlen(k), 0), *ev = http_pct_encode(v, strlen(v), 0);
        if (b.n)
            gbuf_add(&b, "&", 1);
        gbuf_str(&b, ek);
        gbuf_add(&b, "=", 1);
        gbuf_str(&b, ev);
        free(ek);
        free(ev);
    }
    return gbuf_take(&b);
}
