/*
 * shardplan: how a sharding job (target/jobs/jobshard.c) lays samples
 * out in shards, as WebDataset reads them (shardplan.c). Pure: names and
 * sizes in, an order and the cuts between shards out.
 *
 * A sample is the files whose names share a key: the name up to the
 * first '.' of its last path element ("train/00017.jpg" and
 * "train/00017.cls" are the sample "train/00017"; a name with no dot in
 * its last element is a sample of its own). The plan orders the samples
 * by key (or, shuffled, by a permutation of a seeded generator: the same
 * seed, the same order), a sample's files by name, drops a name met
 * twice (the first one stays), and cuts the order into shards of about
 * shard_size bytes as an archive of the kind would hold them: a shard
 * takes whole samples until it reaches shard_size, so a sample is never
 * split, and a sample larger than shard_size is a shard of its own; nor
 * more than max_members files, unless one sample has more.
 *
 * Thread: pure functions.
 */
#ifndef SHOAL_SHARDPLAN_H
#define SHOAL_SHARDPLAN_H

#include <stddef.h>
#include <stdint.h>

struct shardplan_item {
    const char *name;            /* the member's name in the shard (not NUL-terminated) */
    size_t nlen;
    uint64_t size;
};

struct shardplan {
    uint32_t *order;             /* n item indexes, shard after shard */
    size_t n;
    size_t *cut;                 /* shard s is order[cut[s] .. cut[s + 1]) */
    size_t nshards;
    uint64_t samples;            /* the samples laid out */
    uint32_t *dups;              /* indexes of the names met twice, left out */
    size_t ndups;
};

/* The length of the key of name (n bytes). */
size_t shardplan_key(const char *name, size_t n);

/* The bytes an archive of kind (archidx.h) takes for a member of nlen
 * bytes of name and size bytes of data, about. */
uint64_t shardplan_member_bytes(int kind, size_t nlen, uint64_t size);

/* Plan n items (at most UINT32_MAX) into p: 0, or -1 when n is too large.
 * shuffle orders the samples by seed's permutation. */
int shardplan_make(struct shardplan *p, const struct shardplan_item *v, size_t n, int kind,
                   uint64_t shard_size, size_t max_members, int shuffle, uint64_t seed);
void shardplan_free(struct shardplan *p);

#endif
