/* Unit tests for common/headblock.c: head strings gathered from pieces. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "headblock.h"

int main(void)
{
    struct headblock h = {.max = 64};
    /* a request target, then two headers, each in pieces */
    CHECK(headblock_add(&h, "/a?", 3) == 0 && headblock_add(&h, "b=c", 3) == 0 &&
          headblock_end(&h) == 0);
    CHECK(headblock_add(&h, "Ho", 2) == 0 && headblock_add(&h, "st", 2) == 0 &&
          headblock_end(&h) == 0);
    CHECK(headblock_add(&h, "  x ", 4) == 0 && headblock_add(&h, "y\t", 2) == 0 &&
          headblock_end(&h) == 0);
    CHECK(headblock_add(&h, "Empty", 5) == 0 && headblock_end(&h) == 0 && headblock_end(&h) == 0);
    char *copy = malloc(h.b.n);
    memcpy(copy, h.b.p, h.b.n);
    struct http_hdr hd[3];
    /* asking for more strings than the block holds (before trimming,
     * which writes NULs into the copy, has run) */
    CHECK(headblock_pairs(copy, h.b.n, 1, 3, hd) == -1);
    CHECK(headblock_pairs(copy, h.b.n, 4, 1, hd) == -1);
    CHECK(headblock_pairs(copy, h.b.n, 1, 2, hd) == 0);
    CHECK(!strcmp(copy, "/a?b=c"));
    CHECK(!strcmp(hd[0].name, "Host") && !strcmp(hd[0].value, "x y"));
    CHECK(!strcmp(hd[1].name, "Empty") && !strcmp(hd[1].value, ""));
    free(copy);
    /* the bound keeps a byte for the NUL still to come */
    headblock_reset(&h);
    CHECK(h.b.n == 0);
    char big[64];
    memset(big, 'a', sizeof(big));
    CHECK(headblock_add(&h, big, 64) == -1 && h.b.n == 0);
    CHECK(headblock_add(&h, big, 62) == 0);
    CHECK(headblock_end(&h) == 0 && h.b.n == 63);
    CHECK(headblock_add(&h, "b", 1) == -1 && headblock_end(&h) == -1 && h.b.n == 63);
    headblock_free(&h);
    return check_done("test_hblock");
}
