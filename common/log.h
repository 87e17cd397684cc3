/*
 * log: levelled logging to stderr, one line per call, safe from any thread.
 * Lines carry a UTC timestamp, the level and the daemon's name.
 */
#ifndef SHOAL_LOG_H
#define SHOAL_LOG_H

enum log_level { LOGL_ERROR, LOGL_WARN, LOGL_INFO, LOGL_DEBUG };

void log_init(const char *name, enum log_level level);
/* Parse "error", "warn", "info", "debug"; returns -1 on anything else. */
int log_level_parse(const char *s);
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOGL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOGL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOGL_INFO, __VA_ARGS__)
#define log_debug(...)                                  \
    do {                                                \
        if (log_enabled(LOGL_DEBUG))                    \
            log_msg(LOGL_DEBUG, __VA_ARGS__);           \
    } while (0)

#endif
