/*
 * listpage: writer and strict reader of compact listing pages (see listpage.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listpage.h"

#define HEAD "SL2 "
#define HEAD1 "SL1 "             /* the version before: no owners */

void listpage_begin(struct gbuf *b, int more)
{
    gbuf_str(b, more ? HEAD "1\n" : HEAD "0\n");
}

void listpage_set_more(struct gbuf *b, int more)
{
    if (b->n >= sizeof(HEAD))
        b->p[sizeof(HEAD) - 1] = more ? '1' : '0';
}

void listpage_add(struct gbuf *b, const struct listpage_ent *e)
{
    char line[128];
    int n = snprintf(line, sizeof(line), "%llu %016llx %llu %llu %zu %zu %zu\n",
                     (unsigned long long)e->size, (unsigned long long)e->cksum,
                     (unsigned long long)e->version, (unsigned long long)e->mtime_ns, e->elen,
                     e->nlen, e->olen);
    gbuf_add(b, line, (size_t)n);
    gbuf_add(b, e->etag, e->elen);
    gbuf_add(b, e->name, e->nlen);
    gbuf_add(b, e->owner, e->olen);
    gbuf_add(b, "\n", 1);
}

int listpage_name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

/* One field ending at sep: decimal (hex == 0) or exactly 16 hex digits.
 * Advances *p past sep. 0 or -1. */
static int field(const char **p, const char *end, char sep, int hex, uint64_t *out)
{
    const char *s = *p;
    const char *e = memchr(s, sep, (size_t)(end - s));
    if (!e || e == s)
        return -1;
    size_t n = (size_t)(e - s);
    if (hex) {
        if (n != 16)
            return -1;
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) {
            int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0'
                    : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
                                                 : -1;
            if (d < 0)
                return -1;
            v = v << 4 | (uint64_t)d;
        }
        *out = v;
    } else if (parse_u64(s, n, out)) {
        return -1;
    }
    *p = e + 1;
    return 0;
}

static int fail(struct listpage *pg, char *err, size_t errlen, size_t entry, const char *why)
{
    snprintf(err, errlen, "listing page entry %zu: %s", entry, why);
    listpage_free(pg);
    return -1;
}

int listpage_parse(const char *p, size_t n, struct listpage *pg, char *err, size_t errlen)
{
    const char *end = p + n;
    memset(pg, 0, sizeof(*pg));
    if (n < sizeof(HEAD) + 1 ||
        (memcmp(p, HEAD, sizeof(HEAD) - 1) && memcmp(p, HEAD1, sizeof(HEAD1) - 1)) ||
        (p[sizeof(HEAD) - 1] != '0' && p[sizeof(HEAD) - 1] != '1') || p[sizeof(HEAD)] != '\n') {
        snprintf(err, errlen, "not a listing page");
        return -1;
    }
    int owners = !memcmp(p, HEAD, sizeof(HEAD) - 1);
    pg->more = p[sizeof(HEAD) - 1] == '1';
    p += sizeof(HEAD) + 1;
    size_t cap = 0;
    while (p < end) {
        struct listpage_ent e;
        uint64_t elen, nlen, olen = 0;
        if (field(&p, end, ' ', 0, &e.size) || field(&p, end, ' ', 1, &e.cksum) ||
            field(&p, end, ' ', 0, &e.version) || field(&p, end, ' ', 0, &e.mtime_ns) ||
            field(&p, end, ' ', 0, &elen) || field(&p, end, owners ? ' ' : '\n', 0, &nlen) ||
            (owners && field(&p, end, '\n', 0, &olen)))
            return fail(pg, err, errlen, pg->n, "bad fields");
        if (elen > LISTPAGE_ETAG_MAX || nlen < 1 || nlen > LISTPAGE_NAME_MAX ||
            olen > LISTPAGE_OWNER_MAX)
            return fail(pg, err, errlen, pg->n, "length out of range");
        if ((size_t)(end - p) < elen + nlen + olen + 1 || p[elen + nlen + olen] != '\n')
            return fail(pg, err, errlen, pg->n, "truncated");
        e.etag = p;
        e.elen = (size_t)elen;
        e.name = p + elen;
        e.nlen = (size_t)nlen;
        e.owner = e.name + nlen;
        e.olen = (size_t)olen;
        if (memchr(e.name, '\0', e.nlen) || memchr(e.owner, '\0', e.olen))
            return fail(pg, err, errlen, pg->n, "NUL in a name or owner");
        if (pg->n && listpage_name_cmp(pg->v[pg->n - 1].name, pg->v[pg->n - 1].nlen, e.name,
                                       e.nlen) >= 0)
            return fail(pg, err, errlen, pg->n, "names out of order");
        p += elen + nlen + olen + 1;
        if (pg->n == cap) {
            cap = cap ? cap * 2 : 256;
            pg->v = xrealloc(pg->v, cap * sizeof(*pg->v));
        }
        pg->v[pg->n++] = e;
    }
    return 0;
}

void listpage_free(struct listpage *pg)
{
    free(pg->v);
    pg->v = NULL;
    pg->n = 0;
}
