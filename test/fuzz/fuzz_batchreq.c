/* libFuzzer target for GetBatch requests (common/batchreq.c): the body of
 * POST /v1/batch as a client sends it. The harness checks what the
 * assembler relies on: an accepted request has 1..BATCHREQ_MAX entries,
 * each with a bucket and a name within bounds, and its re-encoding of
 * every entry parses again to the same entries. Built and run by
 * `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batchreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct batch_req q;
    char err[256];
    if (batchreq_parse(&q, (const char *)data, size, err, sizeof(err)))
        return 0;
    if (!q.n || q.n > BATCHREQ_MAX)
        abort();
    uint32_t *idx = malloc(q.n * sizeof(*idx));
    for (size_t i = 0; i < q.n; i++) {
        const struct batch_entry *e = &q.e[i];
        if (!e->bucket[0] || !e->name[0] || strlen(e->name) > BATCHREQ_NAME_MAX || !e->provider)
            abort();
        free(batchreq_member_name(&q, e));
        idx[i] = (uint32_t)i;
    }
    size_t len;
    char *enc = batchreq_encode(&q, idx, q.n, &len);
    struct batch_req r;
    if (batchreq_parse(&r, enc, len, err, sizeof(err)) || r.n != q.n)
        abort();
    for (size_t i = 0; i < q.n; i++)
        if (strcmp(r.e[i].name, q.e[i].name) || strcmp(r.e[i].bucket, q.e[i].bucket) ||
            r.e[i].start != q.e[i].start || r.e[i].length != q.e[i].length ||
            !r.e[i].archpath != !q.e[i].archpath)
            abort();
    batchreq_free(&r);
    free(enc);
    free(idx);
    batchreq_free(&q);
    return 0;
}
