/*
 * out: what the shoal client prints. Answers become exit statuses here
 * (out_check, with the one-line error on stderr that says what failed);
 * --json output goes through out_json (stdout, nothing else there); sizes
 * and times are formatted for people the same way everywhere.
 *
 * Thread: the main thread.
 */
#ifndef SHOAL_CLI_OUT_H
#define SHOAL_CLI_OUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct conn_ans;

/* Set by main from --json: errors are also JSON objects on stdout. */
extern int out_json_mode;

/*
 * The exit status an answer means: RC_OK for a 2xx; otherwise the error
 * is printed ("shoal: <what> failed (404): <the cluster's reason>", or
 * "cannot reach URL: ..." with no answer, or the refused credentials) and
 * the status returned (RC_FAIL, RC_UNREACHABLE, RC_AUTH).
 */
int out_check(const struct conn_ans *a, const char *what);
/* A request (json_body NULL: none) whose answer is checked (out_check with
 * what): its body as JSON (a new reference; {} when it has none) and
 * *rc = RC_OK, or NULL with *rc the exit status. */
json_t *out_ask(const char *method, const char *path, const char *json_body, const char *what,
                int *rc);
/* Print a failure of the client's own (a bad file, a checksum mismatch)
 * the same way; returns RC_FAIL. */
int out_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The answer's body as JSON (a new reference), or NULL when it is not. */
json_t *out_parse(const struct conn_ans *a);
/* j on stdout (indented, one document); j is not consumed. */
void out_json(const json_t *j);
/* The answer's body on stdout as JSON: its parse, or {} when it has none.
 * RC_OK. */
int out_json_answer(const struct conn_ans *a);

/* "1.5 MiB" (bytes < 1024: "512 B"). */
void out_size(char *buf, size_t n, double bytes);
/* Local time of a Unix time in ns (or s when small): "2026-11-24 22:38:10". */
void out_time(char *buf, size_t n, int64_t t);
/* A member as an integer (0 when absent or not a number). */
int64_t out_int(const json_t *o, const char *key);
/* A member as a string ("" when absent or not a string). */
const char *out_str(const json_t *o, const char *key);
/* "key value" for every number in o (not those listed in skip, a
 * space-separated list), on one line after indent; sizes for "bytes". */
void out_numbers(const json_t *o, const char *indent, const char *skip);

#endif
