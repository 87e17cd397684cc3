/* libFuzzer target for another Shoal cluster's listing pages and error
 * bodies as the shoal backend reads them (bytes from a remote cluster are
 * untrusted). Built and run by `make fuzz`. */
#include <stddef.h>
#include <stdint.h>

#include "nativelist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct s3list l;
    char err[256], msg[128];
    if (nativelist_parse((const char *)data, size, &l, err, sizeof(err)) == 0)
        s3list_free(&l);
    nativelist_err((const char *)data, size, msg, sizeof(msg));
    return 0;
}
