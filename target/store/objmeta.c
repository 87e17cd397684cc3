#include "objmeta.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum {
    FORMAT = 1, TAG_BACKEND_ETAG = 1, TAG_ETAG = 2, TAG_CTYPE = 3, TAG_UMETA = 4, TAG_TAGS = 5,
    TAG_EC = 6, TAG_BSUMS = 7, TAG_DATA = 8
};

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

static char *put_field(char *p, int tag, const char *v, size_t l)
{
    if (l == 0)
        return p;
    *p++ = (char)tag;
    *p++ = (char)(l & 0xff);
    *p++ = (char)(l >> 8);
    memcpy(p, v, l);
    return p + l;
}

/* A string field into out (cap bytes with its NUL); -EINVAL if too long. */
static int get_str(const char *p, size_t l, char *out, size_t cap)
{
    if (l >= cap)
        return -EINVAL;
    memcpy(out, p, l);
    out[l] = '\0';
    return 0;
}

/* with: 0 without the bytes or their flag, 1 with the flag, 2 with the
 * flag and the bytes */
static size_t encode(const struct objmeta *m, char *buf, int with)
{
    char *p = buf;
    uint32_t flags = m->flags;
    if (!with || m->size > OBJMETA_INLINE_MAX)
        flags &= ~OBJMETA_F_INLINE;
    *p++ = FORMAT;
    put64(p, m->size), p += 8;
    put64(p, m->cksum), p += 8;
    put64(p, m->version), p += 8;
    put64(p, m->mtime_ns), p += 8;
    put64(p, m->uid), p += 8;
    for (int i = 0; i < 4; i++)
        *p++ = (char)(flags >> (8 * i));
    p = put_field(p, TAG_BACKEND_ETAG, m->backend_etag, strnlen(m->backend_etag, OBJMETA_ETAG_MAX));
    p = put_field(p, TAG_ETAG, m->etag, strnlen(m->etag, OBJMETA_ETAG_MAX));
    p = put_field(p, TAG_CTYPE, m->ctype, strnlen(m->ctype, OBJMETA_CTYPE_MAX));
    p = put_field(p, TAG_UMETA, m->umeta, m->umeta_len);
    p = put_field(p, TAG_TAGS, m->tags, m->tags_len);
    if (m->ec.d) {
        char ec[OBJMETA_EC_LEN];
        ec[0] = (char)m->ec.d;
        ec[1] = (char)m->ec.p;
        ec[2] = (char)m->ec.idx;
        put64(ec + 3, m->ec.len);
        put64(ec + 11, m->ec.cksum);
        p = put_field(p, TAG_EC, ec, sizeof(ec));
    }
    if (m->nbs && m->nbs <= OBJMETA_BS_MAX) {
        *p++ = (char)TAG_BSUMS;
        size_t l = 1 + 8 * (size_t)m->nbs;
        *p++ = (char)(l & 0xff);
        *p++ = (char)(l >> 8);
        *p++ = (char)m->bs_level;
        for (uint16_t i = 0; i < m->nbs; i++, p += 8)
            put64(p, m->bs[i]);
    }
    if ((flags & OBJMETA_F_INLINE) && with == 2 && m->inl_loaded)
        p = put_field(p, TAG_DATA, m->inl, (size_t)m->size);
    return (size_t)(p - buf);
}

size_t objmeta_encode(const struct objmeta *m, char *buf)
{
    return encode(m, buf, 1);
}

size_t objmeta_encode_full(const struct objmeta *m, char *buf)
{
    return encode(m, buf, 2);
}

size_t objmeta_encode_meta(const struct objmeta *m, char *buf)
{
    return encode(m, buf, 0);
}

/* A decoded record starts from this: the byte arrays are not cleared
 * whole (a warm GET decodes one per request), only made empty. */
static void objmeta_clear(struct objmeta *m)
{
    m->backend_etag[0] = m->etag[0] = m->ctype[0] = '\0';
    m->umeta_len = m->tags_len = 0;
    m->ec.d = 0;
    m->nbs = 0;
    m->inl_loaded = 0;
}

int objmeta_decode(const char *buf, size_t len, struct objmeta *m)
{
    objmeta_clear(m);
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
    if ((m->flags & OBJMETA_F_INLINE) && m->size > OBJMETA_INLINE_MAX)
        return -EINVAL;
    while (p < end) {
        if (end - p < 3)
            return -EINVAL;
        int tag = (uint8_t)p[0];
        size_t l = (size_t)(uint8_t)p[1] | (size_t)(uint8_t)p[2] << 8;
        p += 3;
        if ((size_t)(end - p) < l)
            return -EINVAL;
        int rc = 0;
        if (tag == TAG_BACKEND_ETAG)
            rc = get_str(p, l, m->backend_etag, sizeof(m->backend_etag));
        else if (tag == TAG_ETAG)
            rc = get_str(p, l, m->etag, sizeof(m->etag));
        else if (tag == TAG_CTYPE)
            rc = get_str(p, l, m->ctype, sizeof(m->ctype));
        else if (tag == TAG_UMETA) {
            if (l > sizeof(m->umeta))
                return -EINVAL;
            memcpy(m->umeta, p, l);
            m->umeta_len = l;
        } else if (tag == TAG_EC) {
            if (l != OBJMETA_EC_LEN || !p[0] || !p[1] || (uint8_t)p[0] > OBJMETA_EC_DATA_MAX ||
                (uint8_t)p[1] > OBJMETA_EC_PARITY_MAX ||
                (uint8_t)p[2] >= (uint8_t)p[0] + (uint8_t)p[1])
                return -EINVAL;
            m->ec.d = (uint8_t)p[0];
            m->ec.p = (uint8_t)p[1];
            m->ec.idx = (uint8_t)p[2];
            m->ec.len = get64(p + 3);
            m->ec.cksum = get64(p + 11);
        } else if (tag == TAG_BSUMS) {
            if (l < 9 || (l - 1) % 8 || (l - 1) / 8 > OBJMETA_BS_MAX || (uint8_t)p[0] > 40)
                return -EINVAL;
            m->bs_level = (uint8_t)p[0];
            m->nbs = (uint16_t)((l - 1) / 8);
            for (uint16_t i = 0; i < m->nbs; i++)
                m->bs[i] = get64(p + 1 + 8 * (size_t)i);
        } else if (tag == TAG_TAGS) {
            if (l > sizeof(m->tags))
                return -EINVAL;
            memcpy(m->tags, p, l);
            m->tags_len = l;
        } else if (tag == TAG_DATA) {
            if (!(m->flags & OBJMETA_F_INLINE) || l != m->size || l > OBJMETA_INLINE_MAX)
                return -EINVAL;
            memcpy(m->inl, p, l);
            m->inl_loaded = 1;
        }
        if (rc)
            return rc;
        p += l;
    }
    if ((m->flags & OBJMETA_F_INLINE) && !m->size)
        m->inl_loaded = 1;       /* an empty object's bytes: none */
    return 0;
}

void objmeta_etag(const struct objmeta *m, char *out, size_t n)
{
    if (m->etag[0])
        snprintf(out, n, "%s", m->etag);
    else if (m->backend_etag[0])
        snprintf(out, n, "%s", m->backend_etag);
    else
        snprintf(out, n, "\"%016llx\"", (unsigned long long)m->cksum);
}

int objmeta_umeta_add(struct objmeta *m, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    if (m->umeta_len + nl + vl + 2 > sizeof(m->umeta))
        return -E2BIG;
    char *p = m->umeta + m->umeta_len;
    for (size_t i = 0; i < nl; i++)
        p[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    p[nl] = '\0';
    memcpy(p + nl + 1, value, vl + 1);
    m->umeta_len += nl + vl + 2;
    return 0;
}

const char *objmeta_umeta_get(const struct objmeta *m, const char *name)
{
    for (size_t off = 0; off < m->umeta_len;) {
        const char *k = m->umeta + off;
        const char *v = k + strlen(k) + 1;
        if (!strcmp(k, name))
            return v;
        off = (size_t)(v - m->umeta) + strlen(v) + 1;
    }
    return NULL;
}

void objmeta_umeta_del(struct objmeta *m, const char *name)
{
    size_t w = 0;
    for (size_t off = 0; off < m->umeta_len;) {   /* the other pairs, moved up in place */
        const char *k = m->umeta + off;
        size_t n = strlen(k) + 1;
        n += strlen(k + n) + 1;
        if (strcmp(k, name)) {
            memmove(m->umeta + w, k, n);
            w += n;
        }
        off += n;
    }
    m->umeta_len = w;
}

int objmeta_tags_set(struct objmeta *m, const char *pairs, size_t len)
{
    if (len > sizeof(m->tags))
        return -E2BIG;
    if (len)
        memcpy(m->tags, pairs, len);
    m->tags_len = len;
    return 0;
}
