/* libFuzzer target for the URL parser (common/url.c): a Location header
 * the loader follows, a target's URL from the cluster map. Any bytes up to
 * the first NUL. The harness checks what nodeclient relies on: an accepted URL
 * names a non-empty host that fits its buffer and holds no '/', a port in
 * 1..65535, and a path inside the input that starts with '/' or '?'.
 * Built and run by `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    char host[64];
    int port = 0;
    const char *path = NULL;
    if (url_split(s, host, sizeof(host), &port, &path) == 0) {
        size_t hl = strlen(host);
        int inside = path >= s && path <= s + strlen(s);
        if (hl == 0 || hl >= sizeof(host) || strchr(host, '/') || port < 1 || port > 65535 ||
            (!inside && strcmp(path, "/")) || (path[0] != '/' && path[0] != '?'))
            abort();
    }
    free(s);
    return 0;
}
