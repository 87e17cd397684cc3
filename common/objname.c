#include "objname.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "http.h"
#include "util.h"

static int name_valid(const char *name, size_t len, int internal, char *err, size_t errlen)
{
    if (len == 0) {
        snprintf(err, errlen, "object name is empty");
        return -1;
    }
    if (len > (internal ? OBJNAME_STORED_MAX : OBJNAME_MAX)) {
        snprintf(err, errlen, "object name is %zu bytes, over the %d-byte limit", len,
                 OBJNAME_MAX);
        return -1;
    }
    if (memchr(name, '\0', len)) {
        snprintf(err, errlen, "object name contains a NUL byte");
        return -1;
    }
    if (!internal && memchr(name, OBJNAME_VERSION_SEP, len)) {
        snprintf(err, errlen, "object name contains the byte 0x01, which names object "
                              "versions");
        return -1;
    }
    size_t ok = utf8_valid_prefix(name, len);
    if (ok != len) {
        snprintf(err, errlen, "object name is not valid UTF-8 (byte 0x%02X at offset %zu)",
                 (unsigned char)name[ok], ok);
        return -1;
    }
    const char *p = name, *end = name + len;
    while (p <= end) {
        const char *s = memchr(p, '/', (size_t)(end - p));
        size_t seg = s ? (size_t)(s - p) : (size_t)(end - p);
        if ((seg == 1 && p[0] == '.') || (seg == 2 && p[0] == '.' && p[1] == '.')) {
            snprintf(err, errlen, "object name has a '.' or '..' segment");
            return -1;
        }
        if (!s)
            break;
        p = s + 1;
    }
    return 0;
}

int objname_valid(const char *name, size_t len, char *err, size_t errlen)
{
    return name_valid(name, len, 0, err, errlen);
}

static int parse(const char *rest, size_t len, struct objname *o, int internal, char *err,
                 size_t errlen)
{
    const char *slash = memchr(rest, '/', len);
    size_t bl = slash ? (size_t)(slash - rest) : len;
    if (!bmd_valid_name(rest, bl)) {
        char shown[64];
        snprintf(shown, sizeof(shown), "%.*s", (int)(bl > 63 ? 63 : bl), rest);
        char *p = utf8_printable(shown);
        snprintf(err, errlen, "invalid bucket name '%s' (1..63 of A-Z a-z 0-9 . - _)", p);
        free(p);
        return -1;
    }
    memcpy(o->bucket, rest, bl);
    o->bucket[bl] = '\0';
    o->name = slash ? slash + 1 : rest + len;
    o->name_len = slash ? len - bl - 1 : 0;
    return name_valid(o->name, o->name_len, internal, err, errlen);
}

int objname_parse(const char *rest, size_t len, struct objname *o, char *err, size_t errlen)
{
    return parse(rest, len, o, 0, err, errlen);
}

int objname_parse_internal(const char *rest, size_t len, struct objname *o, char *err,
                           size_t errlen)
{
    return parse(rest, len, o, 1, err, errlen);
}

size_t objname_base_len(const char *name, size_t len)
{
    const char *sep = memchr(name, OBJNAME_VERSION_SEP, len);
    return sep ? (size_t)(sep - name) : len;
}

int objname_provider(const struct http_req *r, char *out, char *err, size_t errlen)
{
    int n = http_query_get(r, "provider", out, 16);
    if (n == -1 || (n == 0)) {
        strcpy(out, BMD_PROVIDER_SHOAL);
        return 0;
    }
    if (n < 0 || !bmd_valid_provider(out)) {
        snprintf(err, errlen, "unknown provider '%s' (this cluster knows: %s, %s, %s)",
                 n < 0 ? "?" : out, BMD_PROVIDER_SHOAL, BMD_PROVIDER_S3, BMD_PROVIDER_AZURE);
        return -1;
    }
    return 0;
}
