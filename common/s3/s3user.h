/*
 * s3user: the access keys as S3 users. S3 names a user by a canonical ID
 * and shows a display name; ACL grants name one by ID or by email. Each
 * configured key is a user: `users` entries (config.h) give its ID,
 * display name and email; a key without an entry has the ID
 * SHA-256("shoal user\n" KEY) in hex, stable on every node, and its own
 * name as display name.
 *
 * The table is set once at start (s3user_init) and only read after, from
 * any thread.
 */
#ifndef SHOAL_S3USER_H
#define SHOAL_S3USER_H

#include <stddef.h>

#define S3USER_ID_MAX 128        /* a canonical ID, at most (with its NUL) */

/* The users: entries "ACCESS:ID:NAME[:EMAIL]" (n) over the keys (n_keys
 * access keys, or "ACCESS:SECRET"). 0, or -1 with err (a malformed entry,
 * one for no key, an ID or email twice). */
int s3user_init(char *const *entries, int n, char *const *keys, int n_keys, char *err,
                size_t errlen);
void s3user_free(void);

/* access's canonical ID (into buf when computed) and display name. */
const char *s3user_id(const char *access, char *buf, size_t n);
const char *s3user_name(const char *access);
/* The access key of the user with canonical ID id, or email (case
 * insensitive); NULL when none. */
const char *s3user_by_id(const char *id);
const char *s3user_by_email(const char *email);

#endif
