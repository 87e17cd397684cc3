/*
 * objname: parsing of /v1/objects/{bucket}/{object} paths and the rules for
 * names, shared by the proxy and the target so both refuse the same input.
 */
#ifndef SHOAL_OBJNAME_H
#define SHOAL_OBJNAME_H

#include <stddef.h>

#define OBJNAME_MAX 1024

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
/* Only the object name rules: 1..1024 bytes, no NUL, no "." or ".."
 * segment. */
int objname_valid(const char *name, size_t len, char *err, size_t errlen);



struct http_req;
/* The provider named by ?provider= ("shoal" when absent) into out (16
 * bytes). Returns 0, or -1 with a message for a 400 answer. */
int objname_provider(const struct http_req *r, char *out, char *err, size_t errlen);
#endif
