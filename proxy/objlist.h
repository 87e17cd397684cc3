/*
 * objlist: one page of a bucket's object listing, assembled in the proxy's
 * process for both APIs (the native JSON page in buckets.c, the S3 XML
 * pages in s3listing.c render it).
 *
 * A Shoal bucket: every target answers its next compact page
 * (common/listpage.h) after the token, and the pages are merged in name
 * order and cut at the limit; the next token is the last name returned.
 * A bucket listed by its backend: one target fetches the backend's page,
 * and every target says which of its names it holds (cached); the next
 * token is the backend's. A target that is down (cmap.h) cannot answer:
 * the page says so (absent) rather than pass for complete.
 *
 * Thread: the worker's loop.
 */
#ifndef SHOAL_PROXY_OBJLIST_H
#define SHOAL_PROXY_OBJLIST_H

#include <stddef.h>
#include <stdint.h>

struct http_req;

#define OBJLIST_MAX 10000         /* names in one page, at most */

struct objlist_ent {
    const char *name;            /* not NUL-terminated */
    size_t nlen;
    const char *etag;            /* not NUL-terminated */
    size_t elen;
    const char *owner;           /* not NUL-terminated: its owner's access key, olen 0 when
                                  * the bucket's (local pages) */
    size_t olen;
    const char *last_modified;   /* the backend's (remote pages), else NULL */
    uint64_t size, cksum, version, mtime_ns;  /* cksum, version: local pages */
    int cached;                  /* held by a target */
    int dirty;                   /* write-back: held, not yet in the backend */
};

struct objlist_page {
    struct objlist_ent *v;       /* n entries in name order */
    size_t n;
    char *next;                  /* the next page's token, "" after the last */
    int remote;                  /* from the backend: fields as described above */
    char *absent;                /* a Shoal bucket's page while targets are down: their ids,
                                  * comma-separated (names they hold are missing), else NULL */
    void *own;                   /* what the entries point into */
};

/* On success status is 200 and pg the page, now the callback's (free it
 * with objlist_page_free). Otherwise pg is NULL, status the HTTP status to
 * answer with (503 when a target could not be asked or answered badly) and
 * err says why. Fires exactly once, possibly before objlist_start returns. */
typedef void (*objlist_done_fn)(void *arg, struct objlist_page *pg, int status, const char *err);

/* objlist_start's flags */
#define OBJLIST_CACHED_ONLY 1    /* what the targets hold, even of a bucket listed by its
                                  * backend */
#define OBJLIST_VERSIONS 2       /* every version kept, named and tagged as stored
                                  * (target/store/store.h: store_list) */

/* Up to limit (1..OBJLIST_MAX) names of provider/bucket with prefix, after
 * token, as flags say. r is the request it is for (its worker's client).
 * A bucket read from an HTTP origin, which has no listing, is 501 unless
 * flags ask for OBJLIST_CACHED_ONLY. */
void objlist_start(struct http_req *r, const char *provider, const char *bucket,
                   const char *prefix, const char *token, int limit, int flags,
                 objlist_done_fn done, void *arg);
void objlist_page_free(struct objlist_page *pg);

/* Is provider/name listed from its backend (an s3 bucket, or one backed by
 * one), so that page tokens are the backend's, not names? 0 when it is not
 * in the BMD. */
int objlist_by_backend(const char *provider, const char *name);
/* Is provider/name read from an HTTP(S) origin (no listing)? */
int objlist_http_origin(const char *provider, const char *name);

#endif
