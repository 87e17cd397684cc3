/* libFuzzer target for PutBucketAcl's and PutObjectAcl's body (a client's
 * AccessControlPolicy): whatever it parses into must pass the check the
 * native API applies to the "acl" property, and GetBucketAcl's XML of it
 * must parse back into the same grants. Built and run by `make fuzz`. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "http.h"
#include "s3acl.h"
#include "s3user.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int users;
    char err[200];
    if (!users) {
        char *keys[] = {"alice:a", "bob:b"};
        char *entries[] = {"alice:alice-id:Alice:alice@example.org"};
        if (s3user_init(entries, 1, keys, 2, err, sizeof(err)))
            abort();
        users = 1;
    }
    struct http_req r = {.query = ""};
    json_t *g, *again;
    enum s3e code;
    if (s3acl_of_request(&r, (const char *)data, size, 1, "alice", "bob", &g, &code, err,
                         sizeof(err)))
        return 0;
    if (!g && !size)
        return 0;                /* no body: no ACL asked for */
    if (!g || s3acl_check(g, err, sizeof(err)))
        abort();
    struct gbuf b = {0};
    s3acl_xml(&b, "alice", g);
    if (s3acl_of_request(&r, b.p, b.n, 1, "alice", "bob", &again, &code, err, sizeof(err)) ||
        !json_equal(g, again))
        abort();
    json_decref(again);
    json_decref(g);
    gbuf_free(&b);
    return 0;
}
