/* libFuzzer target for object-name parsing (common/objname.c): the rest of
 * a /v1/objects/{bucket}/{object} path as decoded from the request target
 * (any bytes, NUL included), and a ?provider= query.
 *
 * Input: the path rest, then optionally a NUL byte and a raw query string.
 * The harness checks what callers rely on: an accepted bucket is a
 * NUL-terminated name inside struct objname, an accepted object name lies
 * within the input and passes objname_valid on its own. Built and run by
 * `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "objname.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes, so reads past the end are caught */
    char *rest = malloc(size ? size : 1);
    memcpy(rest, data, size);
    struct objname o;
    char err[256];
    if (objname_parse(rest, size, &o, err, sizeof(err)) == 0) {
        if (!memchr(o.bucket, '\0', sizeof(o.bucket)) || o.name < rest ||
            o.name + o.name_len > rest + size ||
            objname_valid(o.name, o.name_len, err, sizeof(err)))
            abort();
    }
    objname_valid(rest, size, err, sizeof(err));

    const char *nul = memchr(data, '\0', size);
    if (nul) {
        size_t ql = size - (size_t)(nul + 1 - (const char *)data);
        char *query = malloc(ql + 1);
        memcpy(query, nul + 1, ql);
        query[ql] = '\0';
        struct http_req r = {.method_name = "GET", .target = "/", .path = "/", .path_len = 1,
                             .query = query};
        char prov[16];
        if (objname_provider(&r, prov, err, sizeof(err)) == 0 && !memchr(prov, '\0', 16))
            abort();
        free(query);
    }
    free(rest);
    return 0;
}
