/*
 * headblock: a message head's strings as llhttp hands them over, gathered in
 * one place for the server (http.c) and the client (nodeclient.c). llhttp gives a
 * request target, a header name or a value in any number of pieces; each
 * piece is added, and the end of each string adds its NUL, so the block
 * reads as NUL-terminated strings one after another: for a request the
 * target, then name, value, name, value...; for an answer the pairs only.
 *
 * The block refuses to grow past its bound (the caller answers 431 or
 * fails the answer), keeping a byte spare for the NUL still to come.
 *
 * Thread: a block belongs to one connection or transfer.
 */
#ifndef SHOAL_HEADBLOCK_H
#define SHOAL_HEADBLOCK_H

#include <stddef.h>

#include "http.h"
#include "util.h"

struct headblock {
    struct gbuf b;               /* the strings */
    size_t max;                  /* bytes it may hold */
};

/* Empty the block (its memory is kept). */
void headblock_reset(struct headblock *h);
void headblock_free(struct headblock *h);
/* A piece of the current string; 0, or -1 when the block would pass max. */
int headblock_add(struct headblock *h, const char *p, size_t n);
/* End the current string; 0 or -1 as headblock_add. */
int headblock_end(struct headblock *h);
/*
 * Read n header pairs out of len bytes at p (a copy of a block, which the
 * caller owns), after its first skip strings: each name, and each value
 * trimmed of spaces and tabs in place. out gets n entries pointing into
 * p. Returns 0, or -1 when p holds fewer strings than that.
 */
int headblock_pairs(char *p, size_t len, size_t skip, int n, struct http_hdr *out);

#endif
