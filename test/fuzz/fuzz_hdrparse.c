/* libFuzzer target for the parsers of client header values in
 * common/hdrparse.c: Range against an object size, and entity-tag lists
 * (If-Match, If-None-Match) against an ETag.
 *
 * Input: 8 bytes of object size (little-endian; the top byte is cleared
 * every other input so sizes near 2^64 and ordinary ones both come up),
 * then the header value, then optionally '\n' and the object's ETag. The
 * harness checks what a caller relies on: a satisfiable range lies within
 * the object and is not empty. Built and run by `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hdrparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t obj = 0;
    for (int i = 0; i < 8; i++)
        obj |= (uint64_t)data[i] << (8 * i);
    if (data[0] & 1)
        obj &= 0x00ffffffffffffffull;
    /* a NUL-terminated copy, as header values arrive */
    char *h = strndup((const char *)data + 8, size - 8);
    char *nl = strchr(h, '\n');
    const char *etag = "\"d41d8cd98f00b204e9800998ecf8427e\"";
    if (nl) {
        *nl = '\0';
        etag = nl + 1;
    }

    uint64_t off = 0, len = 0;
    int rc = hdr_parse_range(h, obj, &off, &len);
    if (rc < -1 || rc > 1)
        abort();
    if (rc == 1 && (len == 0 || off >= obj || len > obj - off))
        abort();
    hdr_etag_listed(h, etag);
    hdr_etag_listed(h, "");
    free(h);
    return 0;
}
