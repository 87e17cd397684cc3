#include "ometa.h"

#include <errno.h>
#include <string.h>

enum { FORMAT = 1, TAG_BACKEND_ETAG = 1 };

static void put64(char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (char)(v >> (8 * i));
}

static uint64_t get64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)(uint8_t)p[i] << (8 * i);
    return v;
}

size_t ometa_encode(const struct ometa *m, char *buf)
{
    char *p = buf;
    *p++ = FORMAT;
    put64(p, m->size), p += 8;
    put64(p, m->cksum), p += 8;
    put64(p, m->version), p += 8;
    put64(p, m->mtime_ns), p += 8;
    put64(p, m->uid), p += 8;
    for (int i = 0; i < 4; i++)
        *p++ = (char)(m->flags >> (8 * i));
    size_t el = strnlen(m->backend_etag, OMETA_ETAG_MAX);
    if (el) {
        *p++ = TAG_BACKEND_ETAG;
        *p++ = (char)(el & 0xff);
        *p++ = (char)(el >> 8);
        memcpy(p, m->backend_etag, el);
        p += el;
    }
    return (size_t)(p - buf);
}

int ometa_decode(const char *buf, size_t len, struct ometa *m)
{
    memset(m, 0, sizeof(*m));
    if (len < 45 || buf[0] != FORMAT)
        return -EINVAL;
    const char *p = buf + 1, *end = buf + len;
    m->size = get64(p), p += 8;
    m->cksum = get64(p), p += 8;
    m->version = get64(p), p += 8;
    m->mtime_ns = get64(p), p += 8;
    m->uid = get64(p), p += 8;
    m->flags = 0;
    for (int i = 0; i < 4; i++)
        m->flags |= (uint32_t)(uint8_t)*p++ << (8 * i);
    while (p < end) {
        if (end - p < 3)
            return -EINVAL;
        int tag = (uint8_t)p[0];
        size_t l = (size_t)(uint8_t)p[1] | (size_t)(uint8_t)p[2] << 8;
        p += 3;
        if ((size_t)(end - p) < l)
            return -EINVAL;
        if (tag == TAG_BACKEND_ETAG) {
            if (l > OMETA_ETAG_MAX)
                return -EINVAL;
            memcpy(m->backend_etag, p, l);
            m->backend_etag[l] = '\0';
        }
        p += l;
    }
    return 0;
}
