/*
 * headblock: head strings gathered from llhttp's pieces (see headblock.h).
 */
#include <string.h>

#include "headblock.h"

void headblock_reset(struct headblock *h)
{
    h->b.n = 0;
}

void headblock_free(struct headblock *h)
{
    gbuf_free(&h->b);
}

int headblock_add(struct headblock *h, const char *p, size_t n)
{
    if (h->b.n + n + 1 > h->max)
        return -1;
    gbuf_add(&h->b, p, n);
    return 0;
}

int headblock_end(struct headblock *h)
{
    return headblock_add(h, "", 1);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

int headblock_pairs(char *p, size_t len, size_t skip, int n, struct http_hdr *out)
{
    size_t nul = 0;
    for (size_t i = 0; i < len; i++)
        nul += p[i] == '\0';
    if (nul < skip + 2 * (size_t)n)
        return -1;
    char *q = p;
    for (size_t i = 0; i < skip; i++)
        q += strlen(q) + 1;
    for (int i = 0; i < n; i++) {
        char *name = q;
        q += strlen(q) + 1;
        char *value = q;
        q += strlen(q) + 1;      /* past the value before trimming cuts it */
        out[i].name = name;
        out[i].value = trim(value);
    }
    return 0;
}
