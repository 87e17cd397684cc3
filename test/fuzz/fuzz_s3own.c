/* libFuzzer target for PutPublicAccessBlock's and
 * PutBucketOwnershipControls's bodies: what parses must pass the check
 * the native API applies to the property, and the GET's XML of it must
 * parse back into the same value. Built and run by `make fuzz`. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "s3own.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    char msg[300];
    enum s3e code;
    json_t *v, *again;
    if (!s3own_pab_parse(body, size, &v, &code, msg, sizeof(msg))) {
        struct gbuf b = {0};
        if (s3own_pab_check(v, msg, sizeof(msg)))
            abort();
        s3own_pab_xml(&b, v);
        if (s3own_pab_parse(b.p, b.n, &again, &code, msg, sizeof(msg)) ||
            !json_equal(v, again))
            abort();
        json_decref(again);
        json_decref(v);
        gbuf_free(&b);
    }
    if (!s3own_ownership_parse(body, size, &v, &code, msg, sizeof(msg))) {
        struct gbuf b = {0};
        if (!s3own_ownership_valid(json_string_value(v)))
            abort();
        s3own_ownership_xml(&b, json_string_value(v));
        if (s3own_ownership_parse(b.p, b.n, &again, &code, msg, sizeof(msg)) ||
            !json_equal(v, again))
            abort();
        json_decref(again);
        json_decref(v);
        gbuf_free(&b);
    }
    return 0;
}
