/*
 * attrs: GetObjectAttributes (attrs.c).
 */
#ifndef SHOAL_TARGET_ATTRS_H
#define SHOAL_TARGET_ATTRS_H

#include <stddef.h>

struct http_req;
struct target;

/* GET ?attributes on the object mkey (taken): answered, on r's worker. */
void attrs_get(struct target *t, struct http_req *r, char *mkey, size_t klen);

#endif
