/*
 * progress: the progress line on stderr (see progress.h).
 *
 * The rate behind the ETA is measured from the first figures seen, so
 * waiting for a job that is half done already does not count its first
 * half as this client's; the throughput shown is the cluster's own when it
 * gives one.
 */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "out.h"
#include "util.h"

#define TTY_EVERY_MS 200         /* a terminal's line is redrawn at most this often */
#define PLAIN_EVERY_MS 3000      /* a plain line this often */
#define QUIET_FIRST_MS 500       /* a transfer shorter than this draws nothing */
#define BAR_W 24

void progress_init(struct progress *p, enum progress_unit unit, const char *label, int quiet)
{
    memset(p, 0, sizeof(*p));
    p->on = !quiet;
    p->tty = isatty(STDERR_FILENO);
    p->unit = unit;
    snprintf(p->label, sizeof(p->label), "%s", label);
    p->t0_ms = mono_ms();
    p->total = -1;
    p->bytes_total = -1;
    p->mibps = -1;
    p->base_ms = p->t0_ms;
}

/* "1:05", "1:02:05", or "--:--" when s is unknown (< 0). */
static void fmt_eta(char *buf, size_t n, double s)
{
    if (s < 0 || s > 360000) {
        snprintf(buf, n, "--:--");
        return;
    }
    long v = (long)(s + 0.5);
    if (v >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60, v % 60);
    else
        snprintf(buf, n, "%ld:%02ld", v / 60, v % 60);
}

/* Percentage done (-1: unknown) and the ETA in seconds (-1: unknown). */
static void figures(const struct progress *p, uint64_t now, int *pct, double *eta)
{
    int64_t done = p->unit == PROGRESS_OBJECTS ? p->done : (int64_t)p->bytes;
    int64_t total = p->unit == PROGRESS_OBJECTS ? p->total : p->bytes_total;
    int64_t base = p->unit == PROGRESS_OBJECTS ? p->base_done : (int64_t)p->base_bytes;
    *pct = -1;
    *eta = -1;
    if (p->ended) {
        *pct = 100;
        *eta = 0;
        return;
    }
    if (total <= 0)
        return;
    *pct = done >= total ? 100 : (int)(done * 100 / total);
    double secs = (double)(now - p->base_ms) / 1000;
    if (done > base && secs > 0)
        *eta = (double)(total - done) / ((double)(done - base) / secs);
    if (done >= total)
        *eta = 0;
}

static void draw(struct progress *p, uint64_t now)
{
    int pct;
    double eta;
    figures(p, now, &pct, &eta);
    char cnt[96], b[32], bt[32], rate[32], etas[32], bar[BAR_W + 1];
    double secs = (double)(now - p->t0_ms) / 1000;
    double mibps = p->mibps >= 0 ? p->mibps : secs > 0 ? (double)p->bytes / secs / 1048576 : 0;
    out_size(rate, sizeof(rate), mibps * 1048576);
    out_size(b, sizeof(b), (double)p->bytes);
    fmt_eta(etas, sizeof(etas), eta);
    if (p->unit == PROGRESS_OBJECTS) {
        char tot[24] = "?";
        if (p->total >= 0)
            snprintf(tot, sizeof(tot), "%lld", (long long)p->total);
        snprintf(cnt, sizeof(cnt), "%lld/%s objects  %s", (long long)p->done, tot, b);
    } else {
        if (p->bytes_total >= 0)
            out_size(bt, sizeof(bt), (double)p->bytes_total);
        snprintf(cnt, sizeof(cnt), "%s/%s", b, p->bytes_total >= 0 ? bt : "?");
    }
    char pcts[16] = "  ?%";
    if (pct >= 0)
        snprintf(pcts, sizeof(pcts), "%3d%%", pct);
    char errs[40] = "";
    if (p->unit == PROGRESS_OBJECTS)
        snprintf(errs, sizeof(errs), "  %lld errors", (long long)p->errors);
    if (p->tty) {
        int fill = pct < 0 ? 0 : pct * BAR_W / 100;
        for (int i = 0; i < BAR_W; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[BAR_W] = '\0';
        fprintf(stderr, "\r%s [%s] %s  %s  %s/s  ETA %s%s\033[K", p->label, bar, pcts, cnt, rate,
                etas, errs);
    } else {
        fprintf(stderr, "%s: %s  %s  %s/s  ETA %s%s\n", p->label, pcts, cnt, rate, etas, errs);
    }
    fflush(stderr);
    p->last_ms = now;
    p->last_ended = p->ended;
    p->lines++;
}

/* Draw when it is due: force for a job's every answer on a terminal. */
static void tick(struct progress *p, int force)
{
    if (!p->on)
        return;
    uint64_t now = mono_ms();
    if (p->tty) {
        if (force || (now - p->t0_ms >= QUIET_FIRST_MS && now - p->last_ms >= TTY_EVERY_MS))
            draw(p, now);
    } else if (p->lines ? now - p->last_ms >= PLAIN_EVERY_MS
                        : force || now - p->t0_ms >= PLAIN_EVERY_MS) {
        draw(p, now);
    }
}

void progress_bytes_total(struct progress *p, int64_t total)
{
    if (p)
        p->bytes_total = total;
}

void progress_bytes_add(struct progress *p, uint64_t n)
{
    if (!p)
        return;
    p->bytes += n;
    tick(p, 0);
}

void progress_bytes_set(struct progress *p, uint64_t n)
{
    if (p)
        p->bytes = p->base_bytes = n;
}

void progress_job(struct progress *p, int64_t done, int64_t total, uint64_t bytes,
                  int64_t errors, double mibps, int ended)
{
    if (!p)
        return;
    if (!p->seen) {              /* the first figures: the rate counts from here */
        p->seen = 1;
        p->base_ms = mono_ms();
        p->base_done = done;
        p->base_bytes = bytes;
    }
    p->done = done;
    p->total = total;
    p->bytes = bytes;
    p->errors = errors;
    p->mibps = mibps;
    p->ended = ended;
    /* on a terminal every answer redraws; in a log the first and every few seconds */
    tick(p, p->tty || !p->lines);
}

void progress_end(struct progress *p, int complete)
{
    if (!p || !p->on || !p->lines)
        return;
    p->ended |= complete;
    if (!p->last_ended)          /* else the line shows the end already */
        draw(p, mono_ms());
    if (p->tty)
        fputc('\n', stderr);
    fflush(stderr);
}
