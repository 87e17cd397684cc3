#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "s3list.h"

static const char *doc =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Name>b</Name><Prefix>a/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
    "<IsTruncated>true</IsTruncated>"
    "<Contents><Key>a/1 &amp; 2</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
    "<ETag>&quot;abc&quot;</ETag><Size>12</Size><StorageClass>STANDARD</StorageClass></Contents>"
    "<Contents><Key>a/\xe1\x88\xb4</Key><Size>0</Size></Contents>"
    "<CommonPrefixes><Prefix>a/d/</Prefix></CommonPrefixes>"
    "<NextContinuationToken>tok/en=</NextContinuationToken>"
    "</ListBucketResult>";

int main(void)
{
    struct s3list l;
    char err[256];
    CHECK(s3list_parse(doc, strlen(doc), &l, err, sizeof(err)) == 0);
    CHECK(l.n == 2 && l.truncated == 1 && l.n_prefixes == 1);
    CHECK(l.n == 2 && !strcmp(l.objs[0].key, "a/1 & 2") && l.objs[0].size == 12 &&
          !strcmp(l.objs[0].etag, "\"abc\"") && l.objs[1].size == 0);
    CHECK(l.next_token && !strcmp(l.next_token, "tok/en="));
    CHECK(l.n_prefixes == 1 && !strcmp(l.prefixes[0], "a/d/"));
    s3list_free(&l);

    const char *bad[] = {
        "",
        "<ListBucketResult><Contents><Key>x</Key>",                  /* truncated */
        "<Error><Code>AccessDenied</Code></Error>",                   /* not a listing */
        "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><ETag>e</ETag></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>x</Key><Size>-1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Key>x</Key><Size>99999999999999999999</Size>"
        "</Contents></ListBucketResult>",
        "<!DOCTYPE x [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]>"
        "<ListBucketResult><Contents><Key>&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"
        "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"
        "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;</Key></Contents></ListBucketResult>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        CHECK(s3list_parse(bad[i], strlen(bad[i]), &l, err, sizeof(err)) == -1 && err[0]);
        CHECK(l.n == 0 && l.objs == NULL);
    }
    /* deep nesting is refused, not recursed into */
    char deep[4096] = "<ListBucketResult>";
    for (int i = 0; i < 100; i++)
        strcat(deep, "<a>");
    CHECK(s3list_parse(deep, strlen(deep), &l, err, sizeof(err)) == -1);
    return check_done("test_s3list");
}
