#include "s3.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awschunk.h"
#include "http.h"
#include "s3auth.h"
#include "util.h"

/* Append s to b with &, <, >, ", ' escaped (and control characters as
 * numeric references, which XML 1.0 allows for \t \n \r only: others are
 * dropped). */
static void s3_xml_addn(struct gbuf *b, const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        case '\t': rep = "&#9;"; break;
        case '\n': rep = "&#10;"; break;
        case '\r': rep = "&#13;"; break;
        default:
            if (c < 0x20 || c == 0x7f)
                rep = ""; /* not representable in XML 1.0 */
        }
        if (!rep) {
            run++;
            continue;
        }
        gbuf_add(b, s + i - run, run);
        run = 0;
        gbuf_str(b, rep);
    }
    gbuf_add(b, s + n - run, run);
}

void s3_xml_add(struct gbuf *b, const char *s)
{
    s3_xml_addn(b, s, strlen(s));
}

void s3_xml_elem(struct gbuf *b, const char *name, const char *value)
{
    gbuf_add(b, "<", 1);
    gbuf_str(b, name);
    gbuf_add(b, ">", 1);
    s3_xml_add(b, value);
    gbuf_add(b, "</", 2);
    gbuf_str(b, name);
    gbuf_add(b, ">", 1);
}

void s3_error_reply(struct http_req *r, int status, const char *msg)
{
    unsigned char id[8];
    char rid[17];
    rand_bytes(id, sizeof(id));
    hex_encode(id, sizeof(id), rid);
    const char *code = r->err_code ? r->err_code : err_s3_code(status);
    struct gbuf b = {0};
    gbuf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
    s3_xml_elem(&b, "Code", code);
    s3_xml_elem(&b, "Message", msg);
    gbuf_str(&b, "<Resource>");
    s3_xml_addn(&b, r->path, r->path_len);
    gbuf_str(&b, "</Resource>");
    s3_xml_elem(&b, "RequestId", rid);
    gbuf_str(&b, "</Error>\n");
    http_resp_header_str(r, "x-amz-request-id", rid);
    http_reply(r, status, "application/xml", b.p, b.n);
    gbuf_free(&b);
}

static void vfail(struct http_req *r, int status, const char *code, const char *fmt,
                  va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    r->err_code = code;
    r->on_error = s3_error_reply;
    http_reply_error(r, status, "%s", msg);
}

void s3_fail(struct http_req *r, enum s3e e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r, err_s3_status(e), err_s3_name(e), fmt, ap);
    va_end(ap);
}

void s3_fail_status(struct http_req *r, int status, enum s3e e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r, status, err_s3_name(e), fmt, ap);
    va_end(ap);
}

void s3_mode(struct http_req *r)
{
    r->on_error = s3_error_reply;
}

void s3_http_date(uint64_t ns, char *out, size_t n)
{
    time_t t = (time_t)(ns / 1000000000u);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

void s3_iso_date(uint64_t ns, char *out, size_t n)
{
    time_t t = (time_t)(ns / 1000000000u);
    struct tm tm;
    gmtime_r(&t, &tm);
    char s[32];
    strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%03uZ", s, (unsigned)(ns / 1000000u % 1000u));
}

int s3_parse_time(const char *s, const char *fmt, time_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *e = strptime(s, fmt, &tm);
    if (!e || *e)
        return -1;
    *out = timegm(&tm);
    return 0;
}

int s3_parse_http_date(const char *s, time_t *out)
{
    return s3_parse_time(s, "%a, %d %b %Y %H:%M:%S GMT", out);
}

char *s3_query_without(const char *q, const char *prefix)
{
    size_t pl = strlen(prefix);
    struct gbuf b = {0};
    while (*q) {
        size_t n = strcspn(q, "&");
        if (n && strncmp(q, prefix, pl)) {
            if (b.n)
                gbuf_add(&b, "&", 1);
            gbuf_add(&b, q, n);
        }
        q += n + (q[n] == '&');
    }
    return gbuf_take(&b);
}

int s3_streaming(struct http_req *r, const char *payload, uint64_t *decoded, int *is_signed)
{
    if (!payload || strncmp(payload, "STREAMING-", 10))
        return 0;
    *is_signed = !strcmp(payload, S3AUTH_STREAMING);
    if (!*is_signed && strcmp(payload, "STREAMING-UNSIGNED-PAYLOAD-TRAILER")) {
        s3_fail(r, S3E_NOT_IMPLEMENTED, "payload %.64s is not supported", payload);
        return -1;
    }
    const char *dl = http_req_header(r, "x-amz-decoded-content-length");
    if (!dl || parse_u64(dl, strlen(dl), decoded)) {
        s3_fail(r, S3E_MISSING_CONTENT_LENGTH,
                "aws-chunked uploads need x-amz-decoded-content-length");
        return -1;
    }
    return 1;
}

enum s3e s3_chunk_error(int rc, const char **msg)
{
    if (rc == AWSCHUNK_BADSIG) {
        *msg = "a chunk's signature does not match";
        return S3E_SIGNATURE_DOES_NOT_MATCH;
    }
    *msg = "malformed aws-chunked body: it must be framed exactly and decode to "
           "x-amz-decoded-content-length bytes";
    return S3E_INCOMPLETE_BODY;
}

int s3_b64_decode(const char *in, unsigned char *out, size_t cap)
{
    size_t n = strlen(in);
    unsigned char tmp[96];
    if (n == 0 || n % 4 || n / 4 * 3 > sizeof(tmp) - 1)
        return -1;
    int len = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)n);
    if (len < 0)
        return -1;
    /* EVP_DecodeBlock counts padding as zero bytes */
    if (in[n - 1] == '=')
        len--;
    if (in[n - 2] == '=')
        len--;
    if ((size_t)len > cap)
        return -1;
    memcpy(out, tmp, (size_t)len);
    return len;
}

int s3_check_md5(struct http_req *r, const char *body, size_t len)
{
    const char *cm = http_req_header(r, "Content-MD5");
    if (!cm)
        return 0;
    unsigned char want[16], got[16];
    unsigned int ml;
    if (s3_b64_decode(cm, want, sizeof(want)) != 16) {
        s3_fail(r, S3E_INVALID_DIGEST, "the Content-MD5 you specified is not valid");
        return 400;
    }
    EVP_Digest(body, len, got, &ml, EVP_md5(), NULL);
    if (memcmp(want, got, 16)) {
        s3_fail(r, S3E_BAD_DIGEST, "the Content-MD5 you specified did not match what was "
                                   "received");
        return 400;
    }
    return 0;
}

void s3_md5_etag(const unsigned char md5[16], char out[35])
{
    out[0] = '"';
    hex_encode(md5, 16, out + 1);
    out[33] = '"';
    out[34] = '\0';
}

void s3_redirect_reply(struct http_req *r, const char *target_url, const char *bucket)
{
    const char *hp = strstr(target_url, "://");
    hp = hp ? hp + 3 : target_url;
    char *endpoint = xstrndup(hp, strcspn(hp, "/"));
    struct gbuf b = {0};
    gbuf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>TemporaryRedirect"
                 "</Code><Message>Please re-send this request to the specified temporary "
                 "endpoint. Continue to use the original request endpoint for future "
                 "requests.</Message>");
    s3_xml_elem(&b, "Endpoint", endpoint);
    s3_xml_elem(&b, "Bucket", bucket);
    gbuf_str(&b, "</Error>\n");
    http_reply(r, 307, "application/xml", b.p, b.n);
    gbuf_free(&b);
    free(endpoint);
}
