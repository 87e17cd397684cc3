/*
 * tmpl: brace-range name templates (see tmpl.h). A template is kept as its
 * literal pieces and up to TMPL_MAX_RANGES ranges; the i-th name is i
 * written in the mixed radix of the ranges' counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl.h"
#include "util.h"

#define BOUND_DIGITS 18          /* a bound fits in uint64_t with room to step */

/* A bound: 1..BOUND_DIGITS decimal digits at *p, which moves past them.
 * *padded says whether it was written with a leading zero. */
static int parse_bound(const char **p, uint64_t *v, int *ndigits, int *padded)
{
    const char *s = *p;
    uint64_t x = 0;
    int n = 0;
    while (s[n] >= '0' && s[n] <= '9') {
        if (n == BOUND_DIGITS)
            return -1;
        x = x * 10 + (uint64_t)(s[n] - '0');
        n++;
    }
    if (!n)
        return -1;
    *v = x;
    *ndigits = n;
    *padded = n > 1 && s[0] == '0';
    *p = s + n;
    return 0;
}

/* "{A..B}" or "{A..B..S}" at *p (just past the '{'); *p moves past '}'. */
static int parse_range(const char **p, struct tmpl_range *r, char *err, size_t errlen)
{
    const char *s = *p;
    uint64_t a, b, step = 1;
    int wa, wb, pa, pb, ws, ps;
    if (parse_bound(&s, &a, &wa, &pa) || strncmp(s, "..", 2))
        goto bad;
    s += 2;
    if (parse_bound(&s, &b, &wb, &pb))
        goto bad;
    if (!strncmp(s, "..", 2)) {
        s += 2;
        if (parse_bound(&s, &step, &ws, &ps))
            goto bad;
        if (!step) {
            snprintf(err, errlen, "template: a range's step must be at least 1");
            return -1;
        }
    }
    if (*s != '}')
        goto bad;
    r->first = a;
    r->step = step;
    r->down = b < a;
    r->count = (r->down ? a - b : b - a) / step + 1;
    r->width = pa || pb ? (wa > wb ? wa : wb) : 0;
    *p = s + 1;
    return 0;
bad:
    snprintf(err, errlen,
             "template: a brace must hold a range of non-negative numbers, {A..B} or {A..B..STEP}");
    return -1;
}

static void add_lit(struct tmpl *t, int i, const char *from, size_t n)
{
    t->lit[i] = xmalloc(n + 1);
    memcpy(t->lit[i], from, n);
    t->lit[i][n] = '\0';
    t->lit_len[i] = n;
}

int tmpl_parse(struct tmpl *t, const char *s, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    t->count = 1;
    const char *lit = s;
    for (const char *p = s;;) {
        const char *brace = p + strcspn(p, "{}");
        if (!*brace) {
            add_lit(t, t->nranges, lit, (size_t)(brace - lit));
            return 0;
        }
        if (*brace == '}') {
            snprintf(err, errlen, "template: '}' without '{'");
            goto fail;
        }
        if (t->nranges == TMPL_MAX_RANGES) {
            snprintf(err, errlen, "template: at most %d ranges", TMPL_MAX_RANGES);
            goto fail;
        }
        struct tmpl_range *r = &t->range[t->nranges];
        p = brace + 1;
        if (parse_range(&p, r, err, errlen))
            goto fail;
        if (r->count > TMPL_MAX_NAMES / t->count) {
            snprintf(err, errlen, "template: more than %llu names", TMPL_MAX_NAMES);
            goto fail;
        }
        t->count *= r->count;
        add_lit(t, t->nranges, lit, (size_t)(brace - lit));
        t->nranges++;
        lit = p;
    }
fail:
    tmpl_free(t);
    return -1;
}

void tmpl_free(struct tmpl *t)
{
    for (int i = 0; i <= TMPL_MAX_RANGES; i++) {
        free(t->lit[i]);
        t->lit[i] = NULL;
    }
    t->nranges = 0;
    t->count = 0;
}

int tmpl_name(const struct tmpl *t, uint64_t i, char *out, size_t outlen)
{
    if (i >= t->count)
        return -1;
    uint64_t digit[TMPL_MAX_RANGES];
    for (int k = t->nranges - 1; k >= 0; k--) {
        digit[k] = i % t->range[k].count;
        i /= t->range[k].count;
    }
    size_t n = 0;
    for (int k = 0;; k++) {
        if (n + t->lit_len[k] >= outlen)
            return -1;
        memcpy(out + n, t->lit[k], t->lit_len[k]);
        n += t->lit_len[k];
        if (k == t->nranges)
            break;
        const struct tmpl_range *r = &t->range[k];
        uint64_t off = digit[k] * r->step;
        uint64_t v = r->down ? r->first - off : r->first + off;
        int w = snprintf(out + n, outlen - n, "%0*llu", r->width, (unsigned long long)v);
        if (w < 0 || (size_t)w >= outlen - n)
            return -1;
        n += (size_t)w;
    }
    out[n] = '\0';
    return (int)n;
}

/* ---- matching ------------------------------------------------------------ */

/* Is v one of r's numbers? */
static int in_range(const struct tmpl_range *r, uint64_t v)
{
    if (r->down ? v > r->first : v < r->first)
        return 0;
    uint64_t off = r->down ? r->first - v : v - r->first;
    return off % r->step == 0 && off / r->step < r->count;
}

static size_t ndigits(uint64_t v)
{
    size_t d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

struct matcher {
    const struct tmpl *t;
    const char *s;
    size_t n;
    unsigned char *memo;         /* (k, pos): 0 unknown, 1 no, 2 yes */
};

/* Does s[pos..] match the template from its k-th literal on? */
static int match_from(struct matcher *m, int k, size_t pos)
{
    unsigned char *seen = &m->memo[(size_t)k * (m->n + 1) + pos];
    if (*seen)
        return *seen == 2;
    const struct tmpl *t = m->t;
    int ok = 0;
    if (m->n - pos >= t->lit_len[k] && !memcmp(m->s + pos, t->lit[k], t->lit_len[k])) {
        size_t at = pos + t->lit_len[k];
        if (k == t->nranges) {
            ok = at == m->n;
        } else {
            const struct tmpl_range *r = &t->range[k];
            uint64_t v = 0;
            /* every run of digits that is a number of the range as the
             * range writes it (padded to its width, else without leading
             * zeros), followed by a match of the rest */
            for (size_t d = 1; !ok && at + d <= m->n && d <= 20; d++) {
                char c = m->s[at + d - 1];
                if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10)
                    break;
                v = v * 10 + (uint64_t)(c - '0');
                size_t want = ndigits(v) > (size_t)r->width ? ndigits(v) : (size_t)r->width;
                if (d == want && in_range(r, v))
                    ok = match_from(m, k + 1, at + d);
            }
        }
    }
    *seen = ok ? 2 : 1;
    return ok;
}

int tmpl_match(const struct tmpl *t, const char *name, size_t n)
{
    struct matcher m = {t, name, n, xcalloc((size_t)(t->nranges + 1) * (n + 1), 1)};
    int ok = match_from(&m, 0, 0);
    free(m.memo);
    return ok;
}
