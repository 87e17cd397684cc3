/* azreq: SharedKey's string to sign (canonical headers and resource),
 * signed requests, SAS URLs, and configurations from a connection string. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azreq.h"
#include "check.h"

static void string_to_sign(void)
{
    const char *hdrs[] = {"x-ms-version: 2021-08-06", "Content-Length: 0",
                          "X-Ms-Date:  Tue, 01 Dec 2026 00:00:00 GMT", "Range: bytes=0-9",
                          "x-ms-blob-type: BlockBlob", "Content-Type: application/xml"};
    char *s = az_string_to_sign("PUT", "acct", "/acct/c/a%20b",
                                "comp=block&blockid=QUJD%3D&Comp=x", hdrs, 6);
    const char *want = "PUT\n\n\n\n\napplication/xml\n\n\n\n\n\nbytes=0-9\n"
                       "x-ms-blob-type:BlockBlob\n"
                       "x-ms-date:Tue, 01 Dec 2026 00:00:00 GMT\n"
                       "x-ms-version:2021-08-06\n"
                       "/acct/acct/c/a%20b\nblockid:QUJD=\ncomp:block,x";
    if (strcmp(s, want)) fprintf(stderr, "[%s]\n", s);
    CHECK(!strcmp(s, want));
    free(s);
    const char *h2[] = {"Content-Length: 12"};
    s = az_string_to_sign("GET", "a", "/c", "", h2, 1);
    CHECK(!strcmp(s, "GET\n\n\n12\n\n\n\n\n\n\n\n\n/a/c"));
    free(s);
}

static const char *hdr(const struct s3_req *q, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < q->n; i++)
        if (!strncmp(q->hdrs[i], name, n) && q->hdrs[i][n] == ':')
            return q->hdrs[i] + n + 2;
    return NULL;
}

static void requests(void)
{
    struct az_cfg c;
    az_cfg_make(&c, "http://127.0.0.1:10000/devstoreaccount1/", "devstoreaccount1",
                "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
                "KBHBeksoGMGw==", NULL);
    struct s3_req q;
    const char *extra[] = {"Range: bytes=1-2"};
    az_req_build(&q, &c, "GET", "cont", "a b/x.txt", "", extra, 1, 1796184000);
    CHECK(!strcmp(q.url, "http://127.0.0.1:10000/devstoreaccount1/cont/a%20b/x.txt"));
    CHECK(hdr(&q, "x-ms-date") && !strcmp(hdr(&q, "x-ms-date"), "Wed, 02 Dec 2026 04:00:00 GMT"));
    CHECK(hdr(&q, "x-ms-version") && hdr(&q, "Range"));
    const char *auth = hdr(&q, "Authorization");
    CHECK(auth && !strncmp(auth, "SharedKey devstoreaccount1:", 27) && strlen(auth) == 27 + 44);
    s3_req_free(&q);
    az_req_build(&q, &c, "GET", "cont", NULL, "restype=container&comp=list", NULL, 0, 0);
    CHECK(!strcmp(q.url, "http://127.0.0.1:10000/devstoreaccount1/cont?restype=container&comp=list"));
    s3_req_free(&q);
    az_cfg_free(&c);
    /* a SAS goes in the URL, and nothing signs */
    az_cfg_make(&c, NULL, "acct", NULL, "?sv=2021&sig=abc%3D");
    CHECK(!strcmp(c.endpoint, "https://acct.blob.core.windows.net"));
    az_req_build(&q, &c, "GET", "c", "k", "comp=list", NULL, 0, 0);
    CHECK(!strcmp(q.url, "https://acct.blob.core.windows.net/c/k?comp=list&sv=2021&sig=abc%3D"));
    CHECK(!hdr(&q, "Authorization"));
    s3_req_free(&q);
    az_req_build(&q, &c, "GET", "c", "k", "", NULL, 0, 0);
    CHECK(!strcmp(q.url, "https://acct.blob.core.windows.net/c/k?sv=2021&sig=abc%3D"));
    s3_req_free(&q);
    az_cfg_free(&c);
    /* a key that is not base64 signs nothing */
    az_cfg_make(&c, NULL, "acct", "not base64!", NULL);
    az_req_build(&q, &c, "GET", "c", "k", "", NULL, 0, 0);
    CHECK(!hdr(&q, "Authorization"));
    s3_req_free(&q);
    az_cfg_free(&c);
}

static void connection_strings(void)
{
    struct az_cfg c;
    az_cfg_from_conn(&c, "DefaultEndpointsProtocol=http;AccountName=a1;AccountKey=a2V5==;"
                         "BlobEndpoint=http://h:1/a1;");
    CHECK(!strcmp(c.account, "a1") && !strcmp(c.key, "a2V5==") &&
          !strcmp(c.endpoint, "http://h:1/a1") && !c.sas[0]);
    az_cfg_free(&c);
    az_cfg_from_conn(&c, "AccountName=a1;AccountKey=k;EndpointSuffix=core.chinacloudapi.cn");
    CHECK(!strcmp(c.endpoint, "https://a1.blob.core.chinacloudapi.cn"));
    az_cfg_free(&c);
    az_cfg_from_conn(&c, "BlobEndpoint=https://x.example;SharedAccessSignature=sv=1&sig=s%3D;"
                         "AccountName=x");
    CHECK(!strcmp(c.sas, "sv=1&sig=s%3D") && !strcmp(c.endpoint, "https://x.example"));
    az_cfg_free(&c);
    az_cfg_from_conn(&c, "UseDevelopmentStorage=true");
    CHECK(!strcmp(c.account, "devstoreaccount1") &&
          !strcmp(c.endpoint, "http://127.0.0.1:10000/devstoreaccount1") && c.key[0]);
    az_cfg_free(&c);
    az_cfg_from_conn(&c, "");
    CHECK(!c.account[0]);
    az_cfg_free(&c);
}

int main(void)
{
    string_to_sign();
    requests();
    connection_strings();
    return check_done("test_azreq");
}
