/*
 * backendmpu: an object sent to its S3 backend as a multipart upload (backendmpu.c):
 * the write-back uploader's way for objects over wbq_multipart_mb. The
 * upload is created, its parts (wbq_part_mb each, from the object's file
 * at their offsets) sent one after another, and completed; any failure
 * aborts it, so the backend keeps no half object and no stray parts.
 *
 * Thread: the loop of the backend client it is given.
 */
#ifndef SHOAL_TARGET_BACKENDMPU_H
#define SHOAL_TARGET_BACKENDMPU_H

#include <stdint.h>

#include "backend.h"

/* Send size bytes of fd (kept open by the caller until cb) as key, in
 * parts of part_size; cb fires once with the outcome (the completion's,
 * or the first failure's). */
void backendmpu_put(struct curlclient *cli, const struct backend *b, const char *key, int fd,
                    uint64_t size, uint64_t part_size, backend_done_fn cb, void *arg);

#endif
