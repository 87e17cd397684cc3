/*
 * azblock: a large object into an Azure container as a block blob: its
 * blocks (Put Block, AZBLOCK_PAR at once, each retried as every backend
 * call) and then the list that commits them (Put Block List), so that
 * the blob appears whole or not at all. backend_put sends objects of
 * AZBLOCK_FROM bytes or more this way.
 *
 * A failed upload leaves its uncommitted blocks, under block ids of its
 * own (a random prefix per upload, so they never mix with another's);
 * Azure's REST API has no call that removes them, and the service drops
 * uncommitted blocks after a week (Azurite when it collects garbage).
 */
#ifndef SHOAL_TARGET_AZBLOCK_H
#define SHOAL_TARGET_AZBLOCK_H

#include <stdint.h>

#include "backend.h"

#define AZBLOCK_SIZE (8u << 20)   /* larger where 50,000 of them would not hold it */
#define AZBLOCK_FROM (16u << 20)
#define AZBLOCK_PAR 4
#define AZBLOCK_MAX_BLOCKS 50000   /* Azure's limit of blocks in one blob */
#define AZBLOCK_MAX_SIZE (4000ull << 20)   /* and of one block */

/* As backend_put: size bytes of fd to key of b (BK_AZURE); cb fires once,
 * on cli's loop, with the commit's answer or the first failure. */
void azblock_put(struct curlclient *cli, const struct backend *b, const char *key, int fd,
                 int64_t size, backend_done_fn cb, void *arg);

#endif
