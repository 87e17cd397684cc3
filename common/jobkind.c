/*
 * jobkind: the table of job kinds (see jobkind.h). Adding a kind is an
 * entry here and its runner in the target's subsystem that does its work.
 */
#include "jobkind.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

#define B JC_BIT

static const struct jobkind kinds[] = {
    {"prefetch", JKF_API | JKF_READS | JKF_PIN, JC_EVERY | B(JC_PRESENT) | B(JC_FETCHED),
     "has no backend: nothing to prefetch from"},
    {"evict", JKF_API, JC_EVERY | B(JC_PRESENT) | B(JC_EVICTED),
     "has no backend: Shoal's copy is the only one, never evicted"},
    {"copy", JKF_API | JKF_READS | JKF_TO, JC_EVERY | B(JC_PRESENT) | B(JC_COPIED), NULL},
    {"download", JKF_API | JKF_URLS, JC_EVERY | B(JC_PRESENT) | B(JC_DOWNLOADED), NULL},
    {"lru", 0, JC_EVERY | B(JC_EVICTED), NULL},
    {"flush", JKF_API, JC_EVERY, "has no backend: nothing to flush"},
    {"rebalance", 0, JC_EVERY | B(JC_MOVED), NULL},
    {"resilver", 0, JC_EVERY | B(JC_MOVED), NULL},
    {"scrub", JKF_API | JKF_DRIVES | JKF_EVERY,
     JC_EVERY | B(JC_FOUND) | B(JC_FIXED) | B(JC_LOST), NULL},
    {"ec-encode", JKF_API | JKF_DRIVES, JC_EVERY | B(JC_FOUND) | B(JC_FIXED) | B(JC_LOST), NULL},
    {"shard", JKF_API | JKF_READS | JKF_TO | JKF_PACK, JC_EVERY | B(JC_SHARDS), NULL},
    {"reshard", JKF_API | JKF_READS | JKF_TO | JKF_PACK, JC_EVERY | B(JC_SHARDS), NULL},
    {"transform", JKF_API | JKF_READS | JKF_TO | JKF_XFORM,
     JC_EVERY | B(JC_PRESENT) | B(JC_TRANSFORMED), NULL},
};

static const char *const ctr_names[JC_N] = {
    [JC_OWNED] = "owned",     [JC_PRESENT] = "present", [JC_FETCHED] = "fetched",
    [JC_EVICTED] = "evicted", [JC_COPIED] = "copied",   [JC_DOWNLOADED] = "downloaded",
    [JC_MOVED] = "moved",     [JC_FOUND] = "found",     [JC_FIXED] = "fixed",
    [JC_LOST] = "lost",       [JC_SHARDS] = "shards",   [JC_TRANSFORMED] = "transformed",
    [JC_DONE] = "done",       [JC_BYTES] = "bytes",
    [JC_ERRORS] = "errors",
};

const struct jobkind *jobkind_find(const char *s)
{
    for (size_t i = 0; s && i < ARRAY_LEN(kinds); i++)
        if (!strcmp(s, kinds[i].name))
            return &kinds[i];
    return NULL;
}

const struct jobkind *jobkind_at(size_t i)
{
    return i < ARRAY_LEN(kinds) ? &kinds[i] : NULL;
}

static char api_names[256];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void api_names_make(void)
{
    size_t n = 0;
    for (size_t i = 0; i < ARRAY_LEN(kinds); i++)
        if (kinds[i].flags & JKF_API)
            n += (size_t)snprintf(api_names + n, sizeof(api_names) - n, "%s%s", n ? ", " : "",
                                  kinds[i].name);
}

const char *jobkind_api_names(void)
{
    pthread_once(&api_once, api_names_make);
    return api_names;
}

const char *jobkind_ctr_name(enum job_ctr c)
{
    return (unsigned)c < JC_N ? ctr_names[c] : "other";
}

/* each name a job looks at ends in one of these */
#define OUTCOMES (B(JC_PRESENT) | B(JC_FETCHED) | B(JC_EVICTED) | B(JC_COPIED) | \
                  B(JC_DOWNLOADED) | B(JC_TRANSFORMED) | B(JC_ERRORS))

int jobkind_ctr_outcome(enum job_ctr c)
{
    return (unsigned)c < JC_N && (OUTCOMES & B(c));
}
