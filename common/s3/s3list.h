/*
 * s3list: parse a listing page of a remote store with expat: S3's
 * ListObjectsV2 (or v1) answer, or Azure Blob's List Blobs answer
 * (EnumerationResults), into one form. Pure and bounded: refuses
 * documents over S3LIST_MAX_DOC and keys over 1024 bytes; fuzzed by
 * test/fuzz/fuzz_s3list.c (both dialects).
 */
#ifndef SHOAL_S3LIST_H
#define SHOAL_S3LIST_H

#include <stddef.h>
#include <stdint.h>

#define S3LIST_MAX_DOC (16u << 20)

struct s3list_obj {
    char *key;
    int64_t size;
    char *etag;
    char *last_modified;
};

struct s3list {
    struct s3list_obj *objs;
    int n;
    char **prefixes;             /* CommonPrefixes */
    int n_prefixes;
    int truncated;
    char *next_token;            /* NextContinuationToken (v2) or NextMarker (v1), or NULL */
};

/* Where a dialect keeps each field: element paths below the root, "/"
 * between names (entry fields: below the entry). */
struct s3list_dialect {
    const char *root;
    const char *entry;           /* one object */
    const char *key, *size, *etag, *last_modified;
    const char *prefix;          /* a common prefix's text */
    const char *next[2];         /* the next page's token, the first found */
    const char *truncated;       /* "true" when there is more; NULL: a token says so */
    int bare_etag;               /* its ETags come unquoted: quote them as headers do */
};
extern const struct s3list_dialect s3list_s3, s3list_azure;

/* 0, or -1 with a message in err (the list is then empty). */
int s3list_parse_as(const struct s3list_dialect *d, const char *xml, size_t len,
                    struct s3list *out, char *err, size_t errlen);
/* S3's. */
int s3list_parse(const char *xml, size_t len, struct s3list *out, char *err, size_t errlen);
/* The <Code> of an error body (S3's <Error><Code>, Azure's the same) into
 * out, "" when there is none; the body is read only up to len bytes. */
void s3list_err_code(const char *body, size_t len, char *out, size_t n);
void s3list_free(struct s3list *l);

#endif
