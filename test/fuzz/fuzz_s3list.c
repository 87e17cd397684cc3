/* libFuzzer target for the ListObjectsV2 parser (bytes from a remote
 * backend are untrusted). Built and run by `make fuzz`. */
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
    return 0;
}
