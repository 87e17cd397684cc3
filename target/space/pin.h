/*
 * pin: objects kept from eviction (pin.c). A prefetch job started with
 * "pin": true (and, optionally, "pin_ttl_s") pins what it selects: its
 * names, template, prefix or whole bucket, until the time runs out or
 * PATCH /v1/internal/jobs/ID {"pin": false} takes the pin away. A pin is
 * recorded in the store ("n" + the job's id, first mountpath) with the
 * job's start record, so it outlives a restart and the job's own record.
 *
 * Thread: any (one lock); pin_load at start-up.
 */
#ifndef SHOAL_TARGET_PIN_H
#define SHOAL_TARGET_PIN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* The record of a pin for job id from its spec (a new JSON string), or
 * NULL when the spec pins nothing. start_ns starts its time. */
char *pin_record(const json_t *spec, uint64_t start_ns);
/* Hold the pin of job id described by a record (pin_record's). */
void pin_add(const char *id, const char *record);
/* Does a live pin hold this object? */
int pin_holds(const char *provider, const char *bucket, const char *name, size_t n);
/* Take job id's pin away: 0, or -ENOENT when it has none. */
int pin_drop(const char *id);
/* At start-up: the pins recorded in the store. */
void pin_load(struct store *s);

struct http_req;
/* PATCH /v1/internal/jobs/ID {"pin": false}: job ID's pin goes. */
void pin_patch(struct http_req *r, const char *rest, size_t rlen);

#endif
