/*
 * tmpl: object-name templates with brace ranges, the way batch jobs select
 * names: "shard-{0000..9999}.tar", several ranges ("d{0..9}/f{00..99}"),
 * steps ("{0..100..10}"), descending bounds ("{9..0}"). Names come out in
 * the order of nested loops, the last range varying fastest, as a shell
 * expands them. A bound written with a leading zero pads every number of
 * its range to the wider bound's width.
 *
 * Names are produced by index, so a job walks ten million of them without
 * holding any. Text outside braces is literal; a brace that does not open
 * a well-formed range is an error (there is no escape for literal braces).
 *
 * Thread: a parsed template is read-only; share it freely.
 */
#ifndef SHOAL_TMPL_H
#define SHOAL_TMPL_H

#include <stddef.h>
#include <stdint.h>

#define TMPL_MAX_RANGES 8
#define TMPL_MAX_NAMES 1000000000ULL   /* names one template may produce */

struct tmpl_range {
    uint64_t first;      /* the first number produced */
    uint64_t step;       /* distance between numbers, > 0 */
    uint64_t count;      /* numbers produced, >= 1 */
    int down;            /* counts down from first */
    int width;           /* zero-padded to this many digits (0: no padding) */
};

struct tmpl {
    char *lit[TMPL_MAX_RANGES + 1];     /* literal text before each range, and after the last */
    size_t lit_len[TMPL_MAX_RANGES + 1];
    struct tmpl_range range[TMPL_MAX_RANGES];
    int nranges;
    uint64_t count;                     /* names produced: the product of the ranges' counts */
};

/* Parse s. 0, or -1 with err set (and nothing to free). */
int tmpl_parse(struct tmpl *t, const char *s, char *err, size_t errlen);
void tmpl_free(struct tmpl *t);

/* The i-th name (0 <= i < t->count) into out, NUL-terminated: its length,
 * or -1 when it does not fit in outlen bytes or i is out of range. */
int tmpl_name(const struct tmpl *t, uint64_t i, char *out, size_t outlen);

/* Is name (n bytes) one of t's names? Each number must be written as the
 * template writes it (padded to its range's width, or with no leading
 * zero). Linear in n times the ranges, whatever the name. */
int tmpl_match(const struct tmpl *t, const char *name, size_t n);

/* The literal text every name starts with (t->lit[0]). */
static inline const char *tmpl_prefix(const struct tmpl *t)
{
    return t->lit[0];
}

#endif
