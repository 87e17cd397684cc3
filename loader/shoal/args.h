/*
 * args: the shoal client's command line. Every option of every command is
 * one row of a table (args.c: name, whether it takes a value, where the
 * value goes in struct args, its help line); a command names the rows it
 * accepts besides the common ones (endpoint, credentials, --json,
 * --quiet, --help). Options may come before, between or after the
 * positional arguments, as "--name value" or "--name=value"; a few have
 * a one-letter form too ("-o FILE", the value always the next word);
 * "--" ends them and "-" alone is a positional argument (stdin or
 * stdout).
 *
 * Also here: the exit statuses every command returns, and the endpoint and
 * credentials completed from the environment.
 *
 * Thread: the main thread (the client has no other).
 */
#ifndef SHOAL_CLI_ARGS_H
#define SHOAL_CLI_ARGS_H

#include <stdio.h>

/* Exit statuses, as `shoal --help` documents them. */
enum {
    RC_OK = 0,                   /* done */
    RC_FAIL = 1,                 /* the cluster refused (4xx/5xx), or a job failed or aborted */
    RC_USAGE = 2,                /* bad command, option or argument */
    RC_UNREACHABLE = 3,          /* no answer from the endpoint (or a node it sent us to) */
    RC_AUTH = 4,                 /* the credentials were refused (401/403) */
    RC_TIMEOUT = 5,              /* job wait --timeout passed with the job still running */
};

#define ARGS_POS_MAX 64

struct args {
    const char *pos[ARGS_POS_MAX];   /* positional arguments, in order */
    int npos;
    /* common */
    const char *endpoint, *access_key, *secret_key, *token, *region, *ca;
    int json, quiet, help;
    /* per command (NULL or 0 when not given) */
    const char *provider, *backend, *props, *prefix, *tmpl, *names, *key, *prepend;
    const char *kind, *bucket, *state, *timeout, *limit;
    const char *out, *extract, *format, *otmpl, *shard_size, *seed;
    const char *transform, *xargs, *ext, *concurrency;
    int latest, dry_run, wait, cached, evict, off, shuffle;
    int continue_on_error, name_only, manifest;
};

/*
 * Parse argv[0..argc) into a (zeroed first): common options and those
 * named in allowed (space-separated names without "--"). cmd names the
 * command in messages. 0, or RC_USAGE with the reason printed.
 */
int args_parse(struct args *a, int argc, char **argv, const char *allowed, const char *cmd);
/* Does the option word, as on the command line ("--name" without "=",
 * or "-o"), take the next word as its value? */
int args_takes_value(const char *word);
/* The help lines of the options named in allowed, to f. */
void args_help(FILE *f, const char *allowed);
/* The common options' help, to f. */
void args_help_common(FILE *f);
/*
 * Complete the endpoint and credentials from the environment (SHOAL_*,
 * then AWS_* for keys) and check them. 0, or RC_USAGE with the reason
 * printed. The endpoint is left without a trailing slash.
 */
int args_env(struct args *a);

/* Is name one of the space-separated words of list (NULL: none)? */
int args_listed(const char *name, const char *list);

/* "shoal: <message>" on stderr; returns RC_USAGE. */
int args_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
