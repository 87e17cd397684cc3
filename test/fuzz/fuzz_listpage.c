/* libFuzzer target for compact listing pages (common/listpage.c): the bytes
 * a target answers a proxy's listing with. The harness checks what the
 * merge relies on: every accepted entry lies inside the input, its name
 * is 1..LISTPAGE_NAME_MAX bytes without NUL, its owner at most
 * LISTPAGE_OWNER_MAX without NUL, and writing the entries back
 * gives a page that parses to the same entries. Built and run by
 * `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "listpage.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const char *p, size_t n, const char *base, size_t size)
{
    return p >= base && p + n <= base + size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct listpage pg, again;
    char err[128];
    if (listpage_parse(in, size, &pg, err, sizeof(err)))
        return 0;
    struct gbuf b = {0};
    listpage_begin(&b, pg.more);
    for (size_t i = 0; i < pg.n; i++) {
        const struct listpage_ent *e = &pg.v[i];
        if (!inside(e->name, e->nlen, in, size) || !inside(e->etag, e->elen, in, size) ||
            !inside(e->owner, e->olen, in, size) || e->nlen < 1 ||
            e->nlen > LISTPAGE_NAME_MAX || e->elen > LISTPAGE_ETAG_MAX ||
            e->olen > LISTPAGE_OWNER_MAX || memchr(e->name, '\0', e->nlen) ||
            memchr(e->owner, '\0', e->olen))
            abort();
        listpage_add(&b, e);
    }
    if (listpage_parse(b.p, b.n, &again, err, sizeof(err)) || again.n != pg.n ||
        again.more != pg.more)
        abort();
    for (size_t i = 0; i < pg.n; i++)
        if (again.v[i].nlen != pg.v[i].nlen ||
            memcmp(again.v[i].name, pg.v[i].name, pg.v[i].nlen) ||
            again.v[i].olen != pg.v[i].olen ||
            memcmp(again.v[i].owner, pg.v[i].owner, pg.v[i].olen) ||
            again.v[i].size != pg.v[i].size || again.v[i].cksum != pg.v[i].cksum ||
            again.v[i].version != pg.v[i].version || again.v[i].mtime_ns != pg.v[i].mtime_ns)
            abort();
    listpage_free(&again);
    listpage_free(&pg);
    gbuf_free(&b);
    return 0;
}
