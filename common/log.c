/*
 * log: each line is formatted into a local buffer and written with a single
 * write(2), so lines from different threads never interleave.
 *
 * Rate limiting is per call site (a static struct log_rl in the macro's
 * expansion) and lock-free: the thread that moves next_ms forward with a
 * compare-and-swap prints; every other thread in the same window only
 * counts itself in suppressed.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const char *log_name = "shoal";
static enum log_level log_max = LOGL_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_init(const char *name, enum log_level level)
{
    log_name = name;
    log_max = level;
}

int log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

int log_enabled(enum log_level level)
{
    return level <= log_max;
}

/* One line: the prefix, the message, then suffix (may be ""). */
static void log_vline(enum log_level level, const char *suffix, const char *fmt, va_list ap)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_name,
                     level_names[level]);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    m = snprintf(line + len, sizeof(line) - len - 1, "%s", suffix);
    len += m < 0 ? 0 : (size_t)m;
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > log_max)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vline(level, "", fmt, ap);
    va_end(ap);
}

int log_rl_admit(struct log_rl *rl, uint64_t now_ms, uint64_t *suppressed)
{
    uint64_t next = __atomic_load_n(&rl->next_ms, __ATOMIC_RELAXED);
    if (now_ms < next ||
        !__atomic_compare_exchange_n(&rl->next_ms, &next, now_ms + LOG_RL_MS, 0,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&rl->suppressed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    *suppressed = __atomic_exchange_n(&rl->suppressed, 0, __ATOMIC_RELAXED);
    return 1;
}

void log_msg_rl(struct log_rl *rl, enum log_level level, const char *fmt, ...)
{
    uint64_t dropped;
    if (level > log_max || !log_rl_admit(rl, mono_ms(), &dropped))
        return;
    char suffix[64] = "";
    if (dropped)
        snprintf(suffix, sizeof(suffix), " (%llu similar lines suppressed)",
                 (unsigned long long)dropped);
    va_list ap;
    va_start(ap, fmt);
    log_vline(level, suffix, fmt, ap);
    va_end(ap);
}
