/* libFuzzer target for the one spelling of a query's keys
 * (http_query_normalize, common/httpresp.c) and the subresource decision
 * made on them (s3sub_find, common/s3/s3sub.c). The input, up to its first
 * NUL, is a query string. The harness checks what every gate relies on:
 * normalizing never lengthens a query and is idempotent; and any other
 * spelling of the same keys (unreserved bytes escaped, in either case of
 * hex, chosen by the input's own bytes) normalizes to the same string and
 * gets the same decision, so no encoding reaches the plain operation where
 * the plain spelling is refused. Built and run by `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "s3sub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.' || c == '~';
}

/* Another spelling of normalized query a into b: each unreserved byte of
 * a key escaped when the next bit of seed says so. */
static void respell(const char *a, char *b, const uint8_t *seed, size_t sn)
{
    static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
    size_t bit = 0;
    int in_key = 1;
    for (; *a; a++) {
        unsigned char c = (unsigned char)*a;
        uint8_t s = sn ? seed[(bit / 8) % sn] >> (bit % 8) : 0;
        bit++;
        if (c == '%' && in_key) {    /* an escape stays one: normalized, it is valid */
            memcpy(b, a, 3);
            b += 3;
            a += 2;
            continue;
        }
        if (c == '&')
            in_key = 1;
        else if (c == '=')
            in_key = 0;
        if (in_key && unreserved(c) && (s & 1)) {
            const char *hex = (s & 2) ? lo : up;
            *b++ = '%';
            *b++ = hex[c >> 4];
            *b++ = hex[c & 15];
        } else {
            *b++ = (char)c;
        }
    }
    *b = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2048)
        return 0;
    char *a = malloc(size + 1), *a2 = malloc(size + 1), *b = malloc(3 * size + 1);
    memcpy(a, data, size);
    a[size] = '\0';
    size_t before = strlen(a);
    if (http_query_normalize(a) == 0) {
        if (strlen(a) > before)
            abort();
        strcpy(a2, a);
        if (http_query_normalize(a2) || strcmp(a, a2))   /* idempotent */
            abort();
        respell(a, b, data, size);
        if (http_query_normalize(b) || strcmp(a, b))
            abort();
        struct http_req ra = {.query = a}, rb = {.query = b};
        if (s3sub_find(&ra) != s3sub_find(&rb))
            abort();
    }
    free(a);
    free(a2);
    free(b);
    return 0;
}
