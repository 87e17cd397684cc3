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

/* Azure Blob's List Blobs page (as Azurite and Azure answer it) */
static const char *az_doc =
    "\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?>"
    "<EnumerationResults ServiceEndpoint=\"http://127.0.0.1:10000/devstoreaccount1\" "
    "ContainerName=\"c\"><Prefix>a/</Prefix><MaxResults>2</MaxResults><Delimiter>/</Delimiter>"
    "<Blobs><Blob><Name>a/x y</Name><Properties><Creation-Time>Mon, 01 Dec 2026 00:00:00 GMT"
    "</Creation-Time><Last-Modified>Mon, 01 Dec 2026 00:00:01 GMT</Last-Modified>"
    "<Etag>0x8DD1234ABCD</Etag><Content-Length>42</Content-Length><BlobType>BlockBlob"
    "</BlobType></Properties></Blob>"
    "<BlobPrefix><Name>a/d/</Name></BlobPrefix>"
    "<Blob><Name>a/z</Name><Properties><Content-Length>0</Content-Length></Properties></Blob>"
    "</Blobs><NextMarker>2!MDAw</NextMarker></EnumerationResults>";

static void azure(void)
{
    struct s3list l;
    char err[256];
    CHECK(s3list_parse_as(&s3list_azure, az_doc, strlen(az_doc), &l, err, sizeof(err)) == 0);
    CHECK(l.n == 2 && !strcmp(l.objs[0].key, "a/x y") && l.objs[0].size == 42 &&
          !strcmp(l.objs[0].etag, "\"0x8DD1234ABCD\"") &&
          !strcmp(l.objs[0].last_modified, "Mon, 01 Dec 2026 00:00:01 GMT"));
    CHECK(l.n == 2 && !strcmp(l.objs[1].key, "a/z") && l.objs[1].size == 0);
    CHECK(l.n_prefixes == 1 && !strcmp(l.prefixes[0], "a/d/"));
    CHECK(l.truncated && l.next_token && !strcmp(l.next_token, "2!MDAw"));
    s3list_free(&l);
    const char *last = "<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>";
    CHECK(s3list_parse_as(&s3list_azure, last, strlen(last), &l, err, sizeof(err)) == 0);
    CHECK(l.n == 0 && !l.truncated && !l.next_token);
    s3list_free(&l);
    /* one dialect's page is not the other's */
    CHECK(s3list_parse_as(&s3list_azure, doc, strlen(doc), &l, err, sizeof(err)) == -1);
    CHECK(s3list_parse(az_doc, strlen(az_doc), &l, err, sizeof(err)) == -1);
    const char *bad[] = {
        "<EnumerationResults><Blobs><Blob><Properties/></Blob></Blobs></EnumerationResults>",
        "<EnumerationResults><Blobs><Blob><Name>x</Name><Properties><Content-Length>x"
        "</Content-Length></Properties></Blob></Blobs></EnumerationResults>",
        "<Error><Code>AuthenticationFailed</Code></Error>",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(s3list_parse_as(&s3list_azure, bad[i], strlen(bad[i]), &l, err, sizeof(err)) == -1);
    /* many siblings refused after a failure keep the depth paired */
    char wide[8192] = "<EnumerationResults>";
    for (int i = 0; i < 20; i++)             /* names past the path's 256 bytes */
        strcat(wide, "<aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/>");
    strcat(wide, "</EnumerationResults>");
    CHECK(s3list_parse_as(&s3list_azure, wide, strlen(wide), &l, err, sizeof(err)) == -1);
}

static void err_codes(void)
{
    char code[64];
    const char *s3 = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>m</Message>";
    s3list_err_code(s3, strlen(s3), code, sizeof(code));
    CHECK(!strcmp(code, "NoSuchKey"));
    const char *az = "\xef\xbb\xbf<?xml?><Error><Code>AuthenticationFailed</Code>";
    s3list_err_code(az, strlen(az), code, sizeof(code));
    CHECK(!strcmp(code, "AuthenticationFailed"));
    s3list_err_code(s3, 20, code, sizeof(code));          /* cut before its end */
    CHECK(code[0] == '\0');
    s3list_err_code("<Code>a<b</Code>", 16, code, sizeof(code));
    CHECK(code[0] == '\0');
    s3list_err_code("<Code>unclosed", 14, code, sizeof(code));
    CHECK(code[0] == '\0');
    char small[4];
    s3list_err_code(s3, strlen(s3), small, sizeof(small));
    CHECK(!strcmp(small, "NoS"));
}

int main(void)
{
    azure();
    err_codes();
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
