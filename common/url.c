/*
 * url: the one parser of http:// URLs (see url.h).
 */
#include <string.h>

#include "url.h"
#include "util.h"

int url_is_https(const char *url)
{
    return !strncmp(url, "https://", 8);
}

int url_split(const char *url, char *host, size_t hostlen, int *port, const char **path)
{
    int tls = url_is_https(url);
    if (!tls && strncmp(url, "http://", 7))
        return -1;
    const char *a = url + (tls ? 8 : 7);
    size_t alen = strcspn(a, "/?");
    const char *aend = a + alen, *hs = a, *he, *portp = NULL;
    if (memchr(a, '@', alen) || memchr(a, '#', alen) || strchr(aend, '#'))
        return -1;               /* no user info, no fragments */
    if (alen && a[0] == '[') {   /* an IPv6 literal */
        const char *rb = memchr(a, ']', alen);
        if (!rb || (rb + 1 < aend && rb[1] != ':'))
            return -1;
        hs = a + 1;
        he = rb;
        portp = rb + 1 < aend ? rb + 2 : NULL;
    } else {
        const char *colon = memchr(a, ':', alen);
        he = colon ? colon : aend;
        portp = colon ? colon + 1 : NULL;
    }
    if (he == hs || (size_t)(he - hs) >= hostlen)
        return -1;
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    *port = tls ? 443 : 80;
    if (portp) {
        uint64_t v;
        if (parse_u64(portp, (size_t)(aend - portp), &v) || v < 1 || v > 65535)
            return -1;
        *port = (int)v;
    }
    *path = *aend ? aend : "/";
    return 0;
}
