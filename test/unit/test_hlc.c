#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hlc.h"
#include "util.h"

int main(void)
{
    hlc_init("t1");
    uint64_t now_ms = wall_ns() / 1000000u;
    uint64_t a = hlc_next(0);
    /* a reading carries the wall clock */
    CHECK(hlc_ms(a) >= now_ms && hlc_ms(a) <= now_ms + 1000);
    /* readings only grow, even many within one millisecond */
    uint64_t prev = a;
    for (int i = 0; i < 100000; i++) {
        uint64_t v = hlc_next(0);
        CHECK(v > prev);
        prev = v;
    }
    /* a version held for a name (from another node's clock ahead of ours)
     * is passed, and remembered */
    uint64_t ahead = hlc_at_ms(now_ms + 60000) | 0x7f;
    uint64_t b = hlc_next(ahead);
    CHECK(b > ahead);
    CHECK(hlc_next(0) > b);
    /* an observed version is passed by the next reading */
    uint64_t far = hlc_at_ms(now_ms + 120000);
    hlc_observe(far);
    CHECK(hlc_next(0) > far);
    /* the old counters are below every reading */
    CHECK(hlc_next(0) > 1000000);
    CHECK(hlc_ms(5) == 0);
    /* another node's tag goes on the readings after the last one seen */
    uint64_t x = hlc_next(0);
    hlc_init("t2");
    uint64_t y = hlc_next(0);
    CHECK(y > x);
    return check_done("test_hlc");
}
