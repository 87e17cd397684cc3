/* libFuzzer target for the listing parser in both dialects, S3's
 * ListObjectsV2 and Azure's List Blobs, and for error bodies' codes (bytes
 * from a remote backend are untrusted). Built and run by `make fuzz`. */
#include <stddef.h>
#include <stdint.h>

#include "s3list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct s3list l;
    char err[256];
    if (s3list_parse((const char *)data, size, &l, err, sizeof(err)) == 0)
        s3list_free(&l);
    if (s3list_parse_as(&s3list_azure, (const char *)data, size, &l, err, sizeof(err)) == 0)
        s3list_free(&l);
    char code[64];
    s3list_err_code((const char *)data, size, code, sizeof(code));
    return 0;
}
