/* libFuzzer target for name templates (common/tmpl.c): a job's "template"
 * field, any bytes up to the first NUL. The harness checks what the job
 * runner relies on: an accepted template produces between 1 and
 * TMPL_MAX_NAMES names, each the same length or shorter than the buffer
 * says, starting with the template's literal prefix, and matched by it
 * (tmpl_match); an index past the end is refused; matching the input
 * itself never fails. Built and run by `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const struct tmpl *t, uint64_t i)
{
    char out[512];
    int n = tmpl_name(t, i, out, sizeof(out));
    if (n < 0)
        return;   /* too long for the buffer */
    size_t pl = strlen(tmpl_prefix(t));
    if ((size_t)n != strlen(out) || (size_t)n < pl || memcmp(out, tmpl_prefix(t), pl))
        abort();
    if (tmpl_match(t, out, (size_t)n) != 1)   /* a name it makes, it matches */
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    struct tmpl t;
    char err[256];
    if (tmpl_parse(&t, s, err, sizeof(err)) == 0) {
        if (t.count < 1 || t.count > TMPL_MAX_NAMES)
            abort();
        check_name(&t, 0);
        check_name(&t, t.count / 2);
        check_name(&t, t.count - 1);
        (void)tmpl_match(&t, s, size);
        char out[512];
        if (tmpl_name(&t, t.count, out, sizeof(out)) != -1)
            abort();
        tmpl_free(&t);
    } else if (strncmp(err, "template: ", 10)) {
        abort();
    }
    free(s);
    return 0;
}
