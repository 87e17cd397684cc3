/*
 * s3list: parse a ListObjectsV2 (or v1) answer with expat. Pure and
 * bounded: refuses documents over S3LIST_MAX_DOC and keys over 1024
 * bytes; fuzzed by test/fuzz/fuzz_s3list.c.
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

/* 0, or -1 with a message in err (the list is then empty). */
int s3list_parse(const char *xml, size_t len, struct s3list *out, char *err, size_t errlen);
void s3list_free(struct s3list *l);

#endif
