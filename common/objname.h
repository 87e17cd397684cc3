/*
 * objname: parsing of /v1/objects/{bucket}/{object} paths and the rules for
 * names, shared by the proxy and the target so both refuse the same input.
 */
#ifndef SHOAL_OBJNAME_H
#define SHOAL_OBJNAME_H

#include <stddef.h>

#define OBJNAME_MAX 1024
/* A kept version of an object (target/api/vers.h) is stored as the name, this
 * byte, and the version's id: a name clients may not use, placed with the
 * name itself (objname_base_len) and sorted right after it. */
#define OBJNAME_VERSION_SEP '\x01'
#define OBJNAME_STORED_MAX (OBJNAME_MAX + 1 + 16)   /* a kept version's name, at most */

struct objname {
    char bucket[64];
    const char *name;            /* points into the request's decoded path */
    size_t name_len;
};

/*
 * Split a decoded path after its prefix (e.g. "/v1/objects/") into bucket
 * and object name, and validate both. Returns 0, or -1 with a message for
 * a 400 answer in err.
 */
int objname_parse(const char *rest, size_t len, struct objname *o, char *err, size_t errlen);
/* Only the object name rules: 1..1024 bytes of UTF-8, no NUL, no
 * OBJNAME_VERSION_SEP, no "." or ".." segment. */
int objname_valid(const char *name, size_t len, char *err, size_t errlen);
/* objname_parse for requests between targets, whose names may be a kept
 * version's (with OBJNAME_VERSION_SEP, up to OBJNAME_STORED_MAX bytes). */
int objname_parse_internal(const char *rest, size_t len, struct objname *o, char *err,
                           size_t errlen);
/* The length of the name a stored name is a version of (all of it when it
 * is not a version's): what placement hashes. */
size_t objname_base_len(const char *name, size_t len);



struct http_req;
/* The provider named by ?provider= ("shoal" when absent) into out (16
 * bytes). Returns 0, or -1 with a message for a 400 answer. */
int objname_provider(const struct http_req *r, char *out, char *err, size_t errlen);
#endif
