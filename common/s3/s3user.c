/*
 * s3user: access keys as S3 users (see s3user.h).
 *
 * Threads: written once by s3user_init before any request; read by all.
 */
#include "s3user.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

struct user {
    char *access, *id, *name, *email;   /* email: NULL when none */
};

static struct user *users;
static int n_users;

static void default_id(const char *access, char *buf, size_t n)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    char *in = xasprintf("shoal user\n%s", access);
    SHA256((const unsigned char *)in, strlen(in), md);
    free(in);
    if (n > 2 * SHA256_DIGEST_LENGTH)
        hex_encode(md, sizeof(md), buf);
    else if (n)
        buf[0] = '\0';
}

static struct user *find_access(const char *access)
{
    for (int i = 0; access && i < n_users; i++)
        if (!strcmp(users[i].access, access))
            return &users[i];
    return NULL;
}

static int fail(char *err, size_t errlen, const char *entry, const char *why)
{
    snprintf(err, errlen, "users: '%.80s': %s (ACCESS:CANONICAL_ID:DISPLAY_NAME[:EMAIL])", entry,
             why);
    s3user_free();
    return -1;
}

/* A value of an entry: printable, no more than max bytes. */
static int fits(const char *v, size_t max)
{
    if (strlen(v) >= max)
        return 0;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

int s3user_init(char *const *entries, int n, char *const *keys, int n_keys, char *err,
                size_t errlen)
{
    s3user_free();
    users = xcalloc((size_t)n_keys + 1, sizeof(*users));
    for (int i = 0; i < n_keys; i++) {
        size_t al = strcspn(keys[i], ":");
        char *access = xstrndup(keys[i], al);
        if (find_access(access)) {
            free(access);
            continue;
        }
        char id[S3USER_ID_MAX];
        default_id(access, id, sizeof(id));
        users[n_users++] = (struct user){access, xstrdup(id), xstrdup(access), NULL};
    }
    for (int i = 0; i < n; i++) {
        char *e = xstrdup(entries[i]), *f[4] = {0};
        int nf = 0;
        char *p = e;
        while (p && nf < 4) {
            f[nf++] = p;
            if ((p = strchr(p, ':')))
                *p++ = '\0';
        }
        struct user *u = find_access(f[0]);
        const char *why = nf < 3 ? "no ID and display name"
                          : p   ? "too many fields"
                          : !u   ? "no key of auth_keys has that access key"
                          : !fits(f[1], S3USER_ID_MAX) || strchr(f[1], '<') || strchr(f[1], '&')
                              ? "an ID is at most 127 printable characters"
                          : !fits(f[2], 256) ? "a display name is at most 255 printable characters"
                          : nf == 4 && (!fits(f[3], 256) || !strchr(f[3], '@'))
                              ? "an email has an @"
                              : NULL;
        if (!why && f[1][0] && s3user_by_id(f[1]) && strcmp(s3user_by_id(f[1]), f[0]))
            why = "that ID is another user's";
        if (!why && nf == 4 && s3user_by_email(f[3]))
            why = "that email is another user's";
        if (why) {
            int rc = fail(err, errlen, entries[i], why);
            free(e);
            return rc;
        }
        if (f[1][0]) {
            free(u->id);
            u->id = xstrdup(f[1]);
        }
        if (f[2][0]) {
            free(u->name);
            u->name = xstrdup(f[2]);
        }
        if (nf == 4) {
            free(u->email);
            u->email = xstrdup(f[3]);
        }
        free(e);
    }
    return 0;
}

void s3user_free(void)
{
    for (int i = 0; i < n_users; i++) {
        free(users[i].access);
        free(users[i].id);
        free(users[i].name);
        free(users[i].email);
    }
    free(users);
    users = NULL;
    n_users = 0;
}

const char *s3user_id(const char *access, char *buf, size_t n)
{
    const struct user *u = find_access(access);
    if (u)
        return u->id;
    default_id(access ? access : "", buf, n);
    return buf;
}

const char *s3user_name(const char *access)
{
    const struct user *u = find_access(access);
    return u ? u->name : access;
}

const char *s3user_by_id(const char *id)
{
    for (int i = 0; id && i < n_users; i++)
        if (!strcmp(users[i].id, id))
            return users[i].access;
    return NULL;
}

const char *s3user_by_email(const char *email)
{
    for (int i = 0; email && i < n_users; i++)
        if (users[i].email && !strcasecmp(users[i].email, email))
            return users[i].access;
    return NULL;
}
