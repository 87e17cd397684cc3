/*
 * url: splits the http:// and https:// URLs Shoal's nodes and the loader
 * call into host, port and path; pure functions, no I/O.
 */
#ifndef SHOAL_URL_H
#define SHOAL_URL_H

#include <stddef.h>

/* Split an http:// or https:// URL: host (brackets of an IPv6 literal
 * removed) into host (hostlen bytes), the port (80 or 443 when absent)
 * and where the path starts ("/" when the URL has none). 0, or -1 when it
 * is not such a URL (another scheme, user info, a fragment, a bad port, a
 * host too long). */
int url_split(const char *url, char *host, size_t hostlen, int *port, const char **path);

/* Is url an https:// one? */
int url_is_https(const char *url);

#endif
