/* libFuzzer target for PutBucketCors's body (a client's CORSConfiguration):
 * whatever it parses into must pass the check the native API applies to
 * the "cors" property, and GetBucketCors's XML of it must parse back into
 * the same rules. Built and run by `make fuzz`. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "s3cors.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *rules, *again;
    enum s3e code;
    char msg[300];
    if (s3cors_parse((const char *)data, size, &rules, &code, msg, sizeof(msg)))
        return 0;
    if (s3cors_check(rules, msg, sizeof(msg)))
        abort();
    struct gbuf b = {0};
    s3cors_xml(&b, rules);
    if (s3cors_parse(b.p, b.n, &again, &code, msg, sizeof(msg)) || !json_equal(rules, again))
        abort();
    json_decref(again);
    json_decref(rules);
    gbuf_free(&b);
    return 0;
}
