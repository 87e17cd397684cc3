/*
 * s3xml: the request bodies of the S3 API (CompleteMultipartUpload,
 * Delete, Tagging, AccessControlPolicy), read with expat: a list of
 * records somewhere under a root element, each with a few text fields.
 * Elements are named by paths of local names: "TagSet/Tag" below the
 * root for a record, "Grantee/ID" below a record for a field.
 */
#ifndef SHOAL_S3XML_H
#define SHOAL_S3XML_H

#include <stddef.h>

#define S3XML_FIELDS_MAX 8
#define S3XML_FLAG_MAX 160
#define S3XML_RECORDS_MAX 10000
#define S3XML_TEXT_MAX 2048
#define S3XML_PATH_MAX 256       /* element names from the root, joined by '/' */

struct s3xml_spec {
    const char *root;            /* the document element's local name */
    const char *record;          /* path below the root of the records */
    const char *fields[S3XML_FIELDS_MAX];  /* paths below a record of its text fields */
    int n_fields;
    const char *flag;            /* path below the root of one text (e.g. Quiet), or NULL */
    unsigned multi;              /* fields (bit i: fields[i]) that may repeat in a record:
                                  * their texts joined by S3XML_MULTI_SEP (else the last
                                  * one counts) */
};
/* A character XML text can not hold (not even as a reference). */
#define S3XML_MULTI_SEP "\x1f"

/*
 * Parse body. For each record, cb gets the fields' text in spec order
 * (NULL for a field that was absent) and returns 0 to go on or -1 to stop
 * (then the parse fails with the message cb left in err). flag_out (at
 * least S3XML_FLAG_MAX bytes, may be NULL) gets the flag's text (cut to
 * fit) or "". Returns the
 * number of records, or -1 with err (malformed XML, another root, a field
 * over S3XML_TEXT_MAX, more than S3XML_RECORDS_MAX records, elements nested
 * past S3XML_PATH_MAX, a DTD).
 */
int s3xml_records(const char *body, size_t len, const struct s3xml_spec *spec,
                  int (*cb)(void *arg, char **fields, char *err, size_t errlen), void *arg,
                  char *flag_out, char *err, size_t errlen);

#endif
