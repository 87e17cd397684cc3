/*
 * storeint: what the store's two files share (store.c: objects and
 * records; storemp.c: the mountpaths and where names go).
 */
#ifndef SHOAL_TARGET_STOREINT_H
#define SHOAL_TARGET_STOREINT_H

#include <stddef.h>
#include <stdint.h>

struct store;
struct store_mp;

/* RocksDB's error text (freed) as -errno, logged. */
int store_db_errno(char *e);
/* The data file of mkey's version uid on mp. */
void store_data_path(const struct store_mp *mp, const char *mkey, size_t klen, uint64_t uid,
                     char *out, size_t outlen);
/* Settle the intents a crash left on mp (see the commit protocol). */
void store_mp_settle(struct store *s, struct store_mp *mp);

#endif
