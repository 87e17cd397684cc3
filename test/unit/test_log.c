/* The rate limit of log lines that can repeat in a loop: one line per call
 * site per LOG_RL_MS, the next one admitted counts the lines dropped. */
#include <stdint.h>

#include "check.h"
#include "log.h"

int main(void)
{
    struct log_rl rl = {0};
    uint64_t dropped = 99, t = 5000;
    CHECK(log_rl_admit(&rl, t, &dropped) == 1 && dropped == 0);
    int admitted = 0;
    for (int i = 0; i < 1000; i++)
        admitted += log_rl_admit(&rl, t + (uint64_t)i % LOG_RL_MS, &dropped);
    CHECK(admitted == 0);
    CHECK(log_rl_admit(&rl, t + LOG_RL_MS, &dropped) == 1 && dropped == 1000);
    CHECK(log_rl_admit(&rl, t + LOG_RL_MS + 1, &dropped) == 0);
    CHECK(log_rl_admit(&rl, t + 10 * LOG_RL_MS, &dropped) == 1 && dropped == 1);

    /* through the macro: one line out of three at one site, and one at
     * another site (each site has its own state) */
    for (int i = 0; i < 3; i++)
        log_warn_rl("test_log: first site, line %d of 3", i + 1);
    log_warn_rl("test_log: second site");
    return check_done("test_log");
}
