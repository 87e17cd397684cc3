/*
 * xform: transforms, a user's program that rewrites objects near the data
 * (inline on GET, or by a transform job). A transform is registered by
 * name with one of
 *
 *   {"command": ["prog", "arg", ...]}   every target runs it as a child
 *                                       process, listening on 127.0.0.1
 *                                       at the port in $PORT
 *   {"url": "http://host:port/"}        a service the operator runs
 *
 * and is spoken to over HTTP: the target POSTs the object's bytes to it
 * and streams back what it answers. Transforms live in the BMD (bmd.h),
 * replicated with the buckets, and are set by an admin key only (a
 * command runs code on every target).
 */
#ifndef SHOAL_XFORM_H
#define SHOAL_XFORM_H

#include <jansson.h>
#include <stddef.h>

#define XFORM_NAME_MAX 63
#define XFORM_ARGS_MAX 64

/* A transform's arguments as a URL's query carries them (a GET's
 * ?transform=NAME&args, a job's or a GetBatch entry's "args"): up to
 * XFORM_QUERY_MAX bytes of unreserved characters, %, = & and +. */
#define XFORM_QUERY_MAX 1024
int xform_args_ok(const char *s, size_t n);
/* Is this a valid transform name (as a bucket's: 1..63 of [A-Za-z0-9._-]). */
int xform_valid_name(const char *name, size_t n);
/* Validate spec: an object with a command (1..64 strings without NUL,
 * each at most 4096 bytes, the first, the program, not empty and either
 * an absolute path or a name looked up in PATH) or an
 * http(s):// url without user information, not both, and
 * nothing else. 0, or -1 with err. */
int xform_check(const json_t *spec, char *err, size_t errlen);
/* A new object: the transform's view, {"name", "command" | "url"}. */
json_t *xform_public(const char *name, const json_t *spec);

#endif
