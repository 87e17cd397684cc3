/*
 * jobsel: the walk of a job's selection, shared by the kinds that work on
 * selected names one by one (prefetch and evict in jobfetch.c, copy and
 * download in jobcopy.c).
 *
 * A selection is a list of names, a template (common/tmpl.h), or a
 * listing of a prefix (the whole bucket without one): the backend's
 * ListObjectsV2, walked a page at a time by every target, or, for a
 * bucket with no backend, the names this target's drives hold. A download
 * selects URLs instead ("urls", or a URL "template"), each with the name
 * given for it ("names") or its path. The walk keeps the
 * names this target owns under one cluster map (the proxy's at the start,
 * held for the whole job), counts each as owned and, when the target
 * holds it, present, and hands it to the kind's one(), at most
 * "concurrency" (the spec's, 1..256) or job_workers (config) at a time.
 *
 * Thread: the job's loop.
 */
#ifndef SHOAL_TARGET_JOBSEL_H
#define SHOAL_TARGET_JOBSEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "job.h"
#include "objname.h"
#include "s3list.h"
#include "tmpl.h"

struct cmap;
struct objmeta;
struct store;

/* What a listed selection pages through: the backend's listing, or (a
 * bucket with no backend) the names this target's drives hold. */
enum jobsel_list { JL_NONE, JL_BACKEND, JL_LOCAL };

/* A walking kind's work on one owned name (a download's: with its URL),
 * on the job's loop. held says whether this target has it (m). mkey, the
 * name's store key (klen bytes), is the kind's to free. The kind calls
 * jobsel_over once the name's work is over, or, counting it done itself,
 * does not raise j->inflight at all. */
typedef void (*jobsel_one_fn)(struct job *j, const char *name, size_t n, const char *url,
                              char *mkey, size_t klen, int held, const struct objmeta *m);

struct jobsel {                  /* a walking kind's j->kd */
    jobsel_one_fn one;
    void *opts;                  /* the kind's options, */
    void (*opts_free)(void *);   /* and how they go (NULL: free) */
    struct backend b;            /* the bucket's (the source's, for a copy) */
    int urls;                    /* the selection is of URLs (a download) */
    json_t *names;               /* a list (a download's: of URLs), */
    json_t *dnames;              /* a download's object names, or NULL: from the URLs */
    struct tmpl tm;              /* or a template (a download's: of URLs) */
    int has_tmpl;
    enum jobsel_list listed;     /* or a listing (of prefix) */
    char *prefix;
    char *token;                 /* the next page's, "" before the first */
    struct s3list page;          /* the backend's page being walked */
    char **lnames;               /* a page of the drives' names */
    int ln;
    int page_i;
    int listing;                 /* a page is on its way */
    int list_end;                /* the last page is in */
    struct cmap *map;            /* ownership is judged by this map, held from the first
                                  * name on: targets that judge by different maps would
                                  * leave names between them (a change mid-job waits for
                                  * a walk) */
    int workers;                 /* names worked on at once: the spec's "concurrency",
                                  * else job_workers (config) */
    int64_t want_map;            /* the proxy's map version at the start */
    int map_waits;               /* turns waited for that version */
};

static inline struct jobsel *jobsel_of(const struct job *j)
{
    return j->kd;
}

/* j's walk from spec, with one for each owned name: the bucket's backend
 * and the selection (for urls, of URLs) into a new j->kd; 0, or -1 with
 * err set. */
int jobsel_init(struct job *j, json_t *spec, jobsel_one_fn one, int urls, char *err,
                size_t errlen);
/* The kinds' pump: take names while there is room; end the job
 * (job_ended) when all are done. */
void jobsel_pump(struct job *j);
/* The kinds' free. */
void jobsel_free(struct job *j);
/* An owned name's work is over: counted done, and the walk goes on. */
void jobsel_over(struct job *j);

/* The held object mkey's record (into m) and data file, of one version:
 * the fd, or -ENOENT (not here, or a versioned bucket's deleted name),
 * -EBADMSG (a copy marked damaged, never handed on), another -errno.
 * Blocks: the I/O pool. */
int jobsel_open(struct store *st, const char *mkey, size_t klen, struct objmeta *m);
/* The signed URL (a new string) of a PUT of name into provider/bucket at
 * the target that owns it now, or NULL with err. */
char *jobsel_put_url(struct job *j, const char *provider, const char *bucket, const char *name,
                     char *err, size_t errlen);

/* A job's destination, as a copy or transform names it. */
struct jobsel_dest {
    char provider[16];           /* "to_provider", shoal by default */
    char bucket[64];             /* "to" */
    char prepend[OBJNAME_MAX + 1];   /* what the new names begin with ("" none) */
    int dry_run;                 /* count only */
};

/* d from spec: 0, or -1 with err (the bucket not known here, or a
 * read-only HTTP origin). */
int jobsel_dest_init(struct job *j, json_t *spec, struct jobsel_dest *d, char *err,
                     size_t errlen);

#define JOBSEL_CONCURRENCY_MAX 256
#define JOBSEL_END (-2)           /* the selection is walked */
#define JOBSEL_WAIT (-3)          /* the next page of the listing is on its way */

/* The next selected name (a URL selection's: URL) into buf, and its
 * index: its length, -1 when it is too long, JOBSEL_END, or JOBSEL_WAIT
 * (a listing's next page is asked for; the walk comes back when it is
 * in). A listing's size is known (job_set_total) once it ends. */
int jobsel_next(struct job *j, char *buf, size_t len, uint64_t *idx);
/* The object name for a URL selection's i-th URL into buf: the name
 * given for it ("names"), or the URL's path after the host and before
 * any query, decoded; its length, or -1 (too long, empty, or no path). */
int jobsel_url_name(const struct jobsel *s, uint64_t i, const char *url, char *buf, size_t len);

#endif
