#include "hdrparse.h"

#include <string.h>

#include "util.h"

/*
 * Range: one "bytes=a-b", "bytes=a-" or "bytes=-n". Returns 1 with
 * [*off, *off+*len) for a satisfiable range, 0 to serve the whole object
 * (no header, several ranges, or syntax we ignore as RFC 9110 allows), -1
 * for an unsatisfiable one (416).
 */
int hdr_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (!h || strncmp(h, "bytes=", 6) || strchr(h, ','))
        return 0;
    const char *s = h + 6, *dash = strchr(s, '-');
    if (!dash)
        return 0;
    uint64_t a, b;
    size_t al = (size_t)(dash - s), bl = strlen(dash + 1);
    if (al == 0) {
        if (parse_u64(dash + 1, bl, &b) || b == 0)
            return bl ? (b == 0 ? -1 : 0) : 0;
        if (size == 0)
            return -1;
        *len = b > size ? size : b;
        *off = size - *len;
        return 1;
    }
    if (parse_u64(s, al, &a))
        return 0;
    if (bl == 0) {
        b = size ? size - 1 : 0;
    } else {
        if (parse_u64(dash + 1, bl, &b) || b < a)
            return 0;
        if (b >= size)
            b = size ? size - 1 : 0;
    }
    if (a >= size)
        return -1;
    *off = a;
    *len = b - a + 1;
    return 1;
}

/* Does the entity-tag list h (If-Match, If-None-Match) name etag; "*"
 * names any. Weak tags compare by their opaque part. */
int hdr_etag_listed(const char *h, const char *etag)
{
    const char *e = etag;
    size_t el = strlen(e);
    if (el >= 2 && e[0] == '"') {
        e++;
        el -= 2;
    }
    while (*h) {
        h += strspn(h, " \t,");
        if (!*h)
            break;
        if (*h == '*')
            return 1;
        if (!strncmp(h, "W/", 2))
            h += 2;
        const char *s = h, *q;
        if (*s == '"') {
            s++;
            if (!(q = strchr(s, '"')))
                return 0;
            h = q + 1;
        } else {
            q = s + strcspn(s, " \t,");
            h = q;
        }
        if ((size_t)(q - s) == el && !memcmp(s, e, el))
            return 1;
    }
    return 0;
}

