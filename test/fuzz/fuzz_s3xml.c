/* libFuzzer target for the S3 API's request-body reader (bodies of
 * CompleteMultipartUpload and DeleteObjects come from clients). Built and
 * run by `make fuzz`. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "s3xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int take(void *arg, char **f, char *err, size_t errlen)
{
    size_t *n = arg;
    (void)err;
    (void)errlen;
    for (int i = 0; i < S3XML_FIELDS_MAX; i++)
        if (f[i])
            *n += strlen(f[i]);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct s3xml_spec specs[] = {
        {"CompleteMultipartUpload", "Part", {"PartNumber", "ETag"}, 2, NULL, 0},
        {"Delete", "Object", {"Key", "VersionId"}, 2, "Quiet", 0},
        {"AccessControlPolicy", "AccessControlList/Grant",
         {"Grantee/ID", "Grantee/URI", "Grantee/EmailAddress", "Permission"}, 4, "Owner/ID", 0},
    };
    char err[256], flag[S3XML_FLAG_MAX];
    size_t n = 0;
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
        s3xml_records((const char *)data, size, &specs[i], take, &n, flag, err, sizeof(err));
    return 0;
}
