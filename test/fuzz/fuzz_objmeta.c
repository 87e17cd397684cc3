/* libFuzzer target for object metadata records (target/store/objmeta.c): the
 * bytes a neighbour sends ahead of an object or a slice, and what a
 * mountpath's RocksDB holds. The harness checks that an accepted record
 * keeps its strings within their bounds and that encoding it again gives
 * a record that decodes to the same fields (an inline record's bytes too). Built and run by `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objmeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct objmeta m, again;
    static char buf[OBJMETA_MAX];
    if (objmeta_decode((const char *)data, size, &m))
        return 0;
    if (strlen(m.etag) > OBJMETA_ETAG_MAX || strlen(m.backend_etag) > OBJMETA_ETAG_MAX ||
        strlen(m.ctype) > OBJMETA_CTYPE_MAX || m.umeta_len > OBJMETA_UMETA_MAX ||
        m.tags_len > OBJMETA_TAGS_MAX || (m.ec.d && m.ec.idx >= m.ec.d + m.ec.p))
        abort();
    size_t n = objmeta_encode_full(&m, buf);
    if (n > OBJMETA_MAX || objmeta_decode(buf, n, &again))
        abort();
    if (again.size != m.size || again.cksum != m.cksum || again.version != m.version ||
        again.uid != m.uid || again.flags != m.flags || strcmp(again.etag, m.etag) ||
        strcmp(again.ctype, m.ctype) || again.umeta_len != m.umeta_len ||
        memcmp(again.umeta, m.umeta, m.umeta_len) || again.tags_len != m.tags_len ||
        memcmp(again.tags, m.tags, m.tags_len) || again.ec.d != m.ec.d ||
        (m.ec.d && (again.ec.p != m.ec.p || again.ec.idx != m.ec.idx ||
                    again.ec.len != m.ec.len || again.ec.cksum != m.ec.cksum)) ||
        again.inl_loaded != m.inl_loaded ||
        (m.inl_loaded && objmeta_inline(&m) &&
         (m.size > OBJMETA_INLINE_MAX || memcmp(again.inl, m.inl, (size_t)m.size))))
        abort();
    return 0;
}
