/*
 * jobkind: the kinds of batch job a cluster runs, as every node and the
 * CLI see them: each kind's name, what it takes and which progress
 * counters it reports (jobkind.c, one table). The proxy checks a job's
 * spec against it, the CLI reads a job's figures by it, and each of the
 * target's subsystems that does a kind's work registers its runner under
 * the kind's name (target/core/job.h).
 *
 * Counters: JC_OWNED (names this target owns), JC_DONE (owned names whose
 * work is over), JC_BYTES and JC_ERRORS are every kind's; the others are
 * a kind's own outcomes, listed in its entry.
 *
 * Thread: a constant table; any.
 */
#ifndef SHOAL_JOBKIND_H
#define SHOAL_JOBKIND_H

#include <stddef.h>

enum job_ctr {
    JC_OWNED, JC_PRESENT, JC_FETCHED, JC_EVICTED, JC_COPIED, JC_DOWNLOADED, JC_MOVED,
    JC_FOUND, JC_FIXED, JC_LOST, JC_SHARDS, JC_TRANSFORMED, JC_DONE, JC_BYTES, JC_ERRORS, JC_N
};

#define JC_BIT(c) (1u << (c))
/* what every kind reports */
#define JC_EVERY (JC_BIT(JC_OWNED) | JC_BIT(JC_DONE) | JC_BIT(JC_BYTES) | JC_BIT(JC_ERRORS))

/* What a kind takes (flags). */
#define JKF_API 0x01      /* started over /v1/jobs; without it, only a target starts it */
#define JKF_READS 0x02    /* reads what it selects: its starter may read the whole bucket */
#define JKF_PIN 0x04      /* may pin what it selects ("pin", "pin_ttl_s") */
#define JKF_TO 0x08       /* writes a destination bucket ("to", "prepend", "dry_run") */
#define JKF_URLS 0x10     /* selects URLs ("urls" or a URL "template") */
#define JKF_DRIVES 0x20   /* walks the drives: a bucket's objects, or a "prefix" of them */
#define JKF_EVERY 0x40    /* without a bucket: every bucket's */
#define JKF_PACK 0x80     /* packs what it selects into archives of "to" (may be its own bucket) */
#define JKF_XFORM 0x100   /* runs a "transform" on what it selects ("ext" renames) */

struct jobkind {
    const char *name;
    unsigned flags;        /* JKF_* */
    unsigned ctrs;         /* JC_BIT()s of the counters it reports, JC_EVERY among them */
    const char *unbacked;  /* why it cannot run on a bucket without a backend, or NULL */
};

/* The kind named s, or NULL. */
const struct jobkind *jobkind_find(const char *s);
/* The i-th kind, or NULL past the last. */
const struct jobkind *jobkind_at(size_t i);
/* The names of the kinds started over the API, ", " between them. */
const char *jobkind_api_names(void);

/* A counter's name in a job's JSON ("owned", "fetched", ...). */
const char *jobkind_ctr_name(enum job_ctr c);
/* Does counter c count how a selected name ended (present, fetched,
 * evicted, copied, downloaded, errors: one of them for each name a
 * prefetch, evict, copy or download is over with)? */
int jobkind_ctr_outcome(enum job_ctr c);

#endif
