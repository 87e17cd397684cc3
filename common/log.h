/*
 * log: levelled logging to stderr, one line per call, safe from any thread.
 * Lines carry a UTC timestamp, the level and the daemon's name.
 *
 * Lines that a loop or a flood of requests can repeat (accept failures,
 * per-request errors) go through the rate-limited forms, log_warn_rl and
 * log_error_rl: each call site prints at most one line per LOG_RL_MS,
 * and the next line it prints says how many it suppressed meanwhile.
 */
#ifndef SHOAL_LOG_H
#define SHOAL_LOG_H

#include <stdint.h>

enum log_level { LOGL_ERROR, LOGL_WARN, LOGL_INFO, LOGL_DEBUG };

#define LOG_RL_MS 1000           /* one line per call site per second */

void log_init(const char *name, enum log_level level);
/* Parse "error", "warn", "info", "debug"; returns -1 on anything else. */
int log_level_parse(const char *s);
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A call site's rate-limit state: static, zero-initialised, shared by every
 * thread that reaches the site (the fields are updated atomically). */
struct log_rl {
    uint64_t next_ms;            /* monotonic time the next line may go out */
    uint64_t suppressed;         /* lines dropped since the last one printed */
};

/*
 * Decide for a line at now_ms: 1 to print it (with *suppressed set to the
 * lines dropped before it, now reset), 0 to drop it (counted). Split from
 * log_msg_rl so the policy can be tested without a clock.
 */
int log_rl_admit(struct log_rl *rl, uint64_t now_ms, uint64_t *suppressed);
void log_msg_rl(struct log_rl *rl, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(...) log_msg(LOGL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOGL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOGL_INFO, __VA_ARGS__)
#define log_debug(...)                                  \
    do {                                                \
        if (log_enabled(LOGL_DEBUG))                    \
            log_msg(LOGL_DEBUG, __VA_ARGS__);           \
    } while (0)

#define log_rl_at(level, ...)                           \
    do {                                                \
        static struct log_rl log_rl_site_;              \
        if (log_enabled(level))                         \
            log_msg_rl(&log_rl_site_, level, __VA_ARGS__); \
    } while (0)
#define log_error_rl(...) log_rl_at(LOGL_ERROR, __VA_ARGS__)
#define log_warn_rl(...) log_rl_at(LOGL_WARN, __VA_ARGS__)

#endif
