/* control.c: the control file /.faultfs and the injected failures.
 *
 * Each write to /.faultfs carries one command a line (see faultfs.c for
 * the list); a write whose command is unknown or malformed fails with
 * EINVAL and changes nothing after the bad line. A read gives the status:
 * one "key value" a line, then one "fail PREFIX ERRNO OPS" line per rule.
 *
 * A rule's prefix matches a path (as seen under the mount, "/t0/mp1/...")
 * that equals it or continues it with a '/': "/t0/mp1" fails
 * "/t0/mp1/data/0a/x" and not "/t0/mp10". "/" matches every path. */
#include "faultfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int err;
} errnos[] = {
    {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT},
};

static const char *const op_names[] = {[FF_OP_READ] = "read", [FF_OP_WRITE] = "write",
                                       [FF_OP_ALL] = "all"};

int ff_is_ctl(const char *path)
{
    return path && !strcmp(path, FF_CTL_NAME);
}

static int prefix_matches(const char *prefix, const char *path)
{
    size_t n = strlen(prefix);
    if (n == 1 && prefix[0] == '/')
        return 1;
    return !strncmp(path, prefix, n) && (path[n] == '\0' || path[n] == '/');
}

/* The injected error for an operation of class ops on path: -errno, or 0
 * to go on. Caller holds ff.lock (shared), which keeps the rules still. */
int ff_fault(const char *path, int ops)
{
    if (!path)
        return 0;
    for (int i = 0; i < ff.nrules; i++)
        if ((ff.rules[i].ops & ops) && prefix_matches(ff.rules[i].prefix, path)) {
            __atomic_add_fetch(&ff.injected, 1, __ATOMIC_RELAXED);
            return -ff.rules[i].err;
        }
    return 0;
}

/* Caller holds ff.lock exclusively. */
void ff_rules_clear(void)
{
    for (int i = 0; i < ff.nrules; i++)
        free(ff.rules[i].prefix);
    ff.nrules = 0;
}

/* "fail PREFIX ERRNO [read|write|all]": a rule with the same prefix and
 * operations is replaced. Caller holds ff.lock exclusively. */
static int rule_add(char *prefix, const char *errname, const char *opname)
{
    int err = 0, ops = 0;
    for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
        if (!strcmp(errname, errnos[i].name))
            err = errnos[i].err;
    for (int i = FF_OP_READ; i <= FF_OP_ALL; i++)
        if (!strcmp(opname ? opname : "all", op_names[i]))
            ops = i;
    if (!err || !ops || prefix[0] != '/')
        return -EINVAL;
    for (int i = 0; i < ff.nrules; i++)
        if (ff.rules[i].ops == ops && !strcmp(ff.rules[i].prefix, prefix)) {
            ff.rules[i].err = err;
            return 0;
        }
    if (ff.nrules == FF_MAX_RULES)
        return -ENOSPC;
    ff.rules[ff.nrules++] = (struct ff_rule){strdup(prefix), err, ops};
    return 0;
}

/* One command line, split into words in place. */
static int run_line(char *line)
{
    char *save, *w[5];
    int n = 0;
    for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
        if (n < 5)
            w[n++] = t;
        else
            return -EINVAL;
    if (n == 0)
        return 0;
    int rc = 0;
    pthread_rwlock_wrlock(&ff.lock);
    if (!strcmp(w[0], "cut") && n == 1) {
        ff.gen++;
        ff.down = 1;
        ff.cuts++;
        rc = ff_rebuild();
    } else if (!strcmp(w[0], "up") && n == 1) {
        ff.down = 0;
    } else if (!strcmp(w[0], "sync") && n == 1) {
        rc = ff.down ? -EIO : ff_sync_all();
        ff.syncs += !rc;
    } else if (!strcmp(w[0], "fail") && (n == 3 || n == 4)) {
        rc = rule_add(w[1], w[2], n == 4 ? w[3] : NULL);
    } else if (!strcmp(w[0], "clear") && n == 1) {
        ff_rules_clear();
    } else if (!strcmp(w[0], "slow-forget") && n == 2) {
        char *end;
        unsigned long us = strtoul(w[1], &end, 10);
        if (*end || end == w[1] || us > 1000000)
            rc = -EINVAL;
        else
            __atomic_store_n(&ff.forget_delay_us, (unsigned)us, __ATOMIC_RELAXED);
    } else {
        rc = -EINVAL;
    }
    pthread_rwlock_unlock(&ff.lock);
    return rc;
}

/* A write to the control file: 0 when every line ran, or the first
 * line's error. Runs on a FUSE thread holding no lock. */
int ff_ctl_command(const char *buf, size_t len)
{
    char *copy = strndup(buf, len);
    if (!copy)
        return -ENOMEM;
    int rc = 0;
    char *save;
    for (char *line = strtok_r(copy, "\n", &save); !rc && line; line = strtok_r(NULL, "\n", &save))
        rc = run_line(line);
    free(copy);
    return rc;
}

/* The status text; the caller frees it. */
char *ff_ctl_status(size_t *len)
{
    char *buf = NULL;
    FILE *out = open_memstream(&buf, len);
    if (!out)
        abort();
    pthread_rwlock_rdlock(&ff.lock);
    fprintf(out, "state %s\ngen %u\n", ff.down ? "down" : "up", ff.gen);
    fprintf(out, "cuts %lu\nfsyncs %lu\ndirsyncs %lu\nsyncs %lu\n", (unsigned long)ff.cuts,
            (unsigned long)__atomic_load_n(&ff.fsyncs, __ATOMIC_RELAXED),
            (unsigned long)__atomic_load_n(&ff.dirsyncs, __ATOMIC_RELAXED),
            (unsigned long)ff.syncs);
    fprintf(out, "dirty_files %lu\nflushed_bytes %lu\ninjected %lu\n",
            (unsigned long)ff_dirty_files(),
            (unsigned long)__atomic_load_n(&ff.flushed_bytes, __ATOMIC_RELAXED),
            (unsigned long)__atomic_load_n(&ff.injected, __ATOMIC_RELAXED));
    for (int i = 0; i < ff.nrules; i++) {
        const char *en = "?";
        for (size_t j = 0; j < sizeof(errnos) / sizeof(errnos[0]); j++)
            if (errnos[j].err == ff.rules[i].err)
                en = errnos[j].name;
        fprintf(out, "fail %s %s %s\n", ff.rules[i].prefix, en, op_names[ff.rules[i].ops]);
    }
    pthread_rwlock_unlock(&ff.lock);
    fclose(out);
    return buf;
}
