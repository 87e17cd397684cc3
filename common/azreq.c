/*
 * azreq: Azure's SharedKey scheme (Blob service, version 2015-02-21 and
 * later): the signature is HMAC-SHA256, under the base64-decoded account
 * key, of
 *
 *   VERB \n Content-Encoding \n Content-Language \n Content-Length (empty
 *   for 0) \n Content-MD5 \n Content-Type \n Date \n If-Modified-Since \n
 *   If-Match \n If-None-Match \n If-Unmodified-Since \n Range \n
 *   every x-ms-* header as "name:value\n", names lowercased and sorted,
 *   then "/" ACCOUNT PATH and, for each query parameter in name order,
 *   "\n" name ":" value (decoded; a repeated name's values joined by ",").
 *
 * PATH is the request's encoded path, which for an emulator (Azurite)
 * starts with the account again.
 */
#include "azreq.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "log.h"
#include "sigv4.h"
#include "util.h"

static const char *const signed_slots[] = {
    "Content-Encoding", "Content-Language", "Content-Length", "Content-MD5",
    "Content-Type", "Date", "If-Modified-Since", "If-Match", "If-None-Match",
    "If-Unmodified-Since", "Range",
};

static char *dup_or_empty(const char *s)
{
    return xstrdup(s ? s : "");
}

void az_cfg_make(struct az_cfg *out, const char *endpoint, const char *account,
                 const char *key, const char *sas)
{
    memset(out, 0, sizeof(*out));
    out->account = dup_or_empty(account);
    out->endpoint = endpoint && endpoint[0]
                        ? xstrdup(endpoint)
                        : xasprintf("https://%s.blob.core.windows.net", out->account);
    size_t el = strlen(out->endpoint);
    while (el > 0 && out->endpoint[el - 1] == '/')
        out->endpoint[--el] = '\0';
    out->key = dup_or_empty(key);
    const char *s = sas ? sas : "";
    out->sas = xstrdup(s[0] == '?' ? s + 1 : s);
}

/* The value of key k in connection string conn ("K=V;K=V", a value may
 * hold '='), a new string, or NULL. */
static char *conn_get(const char *conn, const char *k)
{
    size_t kl = strlen(k);
    for (const char *p = conn; p && *p;) {
        const char *semi = strchr(p, ';');
        size_t n = semi ? (size_t)(semi - p) : strlen(p);
        while (n && isspace((unsigned char)*p))
            p++, n--;
        if (n > kl && p[kl] == '=' && !strncasecmp(p, k, kl))
            return xstrndup(p + kl + 1, n - kl - 1);
        p = semi ? semi + 1 : NULL;
    }
    return NULL;
}

/* Azurite's well-known development account. */
#define DEV_ACCOUNT "devstoreaccount1"
#define DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

void az_cfg_from_conn(struct az_cfg *out, const char *conn)
{
    char *dev = conn_get(conn, "UseDevelopmentStorage");
    int is_dev = dev && !strcasecmp(dev, "true");
    free(dev);
    char *acct = conn_get(conn, "AccountName");
    char *key = conn_get(conn, "AccountKey");
    char *sas = conn_get(conn, "SharedAccessSignature");
    char *ep = conn_get(conn, "BlobEndpoint");
    if (is_dev && !acct) {
        acct = xstrdup(DEV_ACCOUNT);
        if (!key)
            key = xstrdup(DEV_KEY);
        if (!ep)
            ep = xstrdup("http://127.0.0.1:10000/" DEV_ACCOUNT);
    }
    if (!ep && acct) {
        char *proto = conn_get(conn, "DefaultEndpointsProtocol");
        char *suffix = conn_get(conn, "EndpointSuffix");
        ep = xasprintf("%s://%s.blob.%s", proto ? proto : "https", acct,
                       suffix ? suffix : "core.windows.net");
        free(proto);
        free(suffix);
    }
    az_cfg_make(out, ep, acct, key, sas);
    free(acct);
    free(key);
    free(sas);
    free(ep);
}

void az_cfg_from_env(struct az_cfg *out)
{
    const char *conn = getenv("AZURE_STORAGE_CONNECTION_STRING");
    if (conn && conn[0]) {
        az_cfg_from_conn(out, conn);
        return;
    }
    az_cfg_make(out, getenv("AZURE_STORAGE_ENDPOINT"), getenv("AZURE_STORAGE_ACCOUNT"),
                getenv("AZURE_STORAGE_KEY"), getenv("AZURE_STORAGE_SAS_TOKEN"));
}

void az_cfg_copy(struct az_cfg *d, const struct az_cfg *s)
{
    d->endpoint = dup_or_empty(s->endpoint);
    d->account = dup_or_empty(s->account);
    d->key = dup_or_empty(s->key);
    d->sas = dup_or_empty(s->sas);
}

void az_cfg_free(struct az_cfg *c)
{
    free(c->endpoint);
    free(c->account);
    if (c->key)
        OPENSSL_cleanse(c->key, strlen(c->key));
    free(c->key);
    free(c->sas);
    memset(c, 0, sizeof(*c));
}

/* Header line h's name is name (case-insensitively): its value, trimmed on
 * the left, or NULL. */
static const char *hdr_value(const char *h, const char *name)
{
    size_t nl = strlen(name);
    if (strncasecmp(h, name, nl) || h[nl] != ':')
        return NULL;
    h += nl + 1;
    while (*h == ' ' || *h == '\t')
        h++;
    return h;
}

struct kv {
    char *k, *v;
};

static int kv_cmp(const void *a, const void *b)
{
    const struct kv *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

static char *lower_dup(const char *s, size_t n)
{
    char *o = xstrndup(s, n);
    for (char *p = o; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return o;
}

/* The canonicalized headers: x-ms-* of hdrs, lowercased and sorted. */
static void canon_headers(struct gbuf *b, const char *const *hdrs, int n)
{
    struct kv *v = xcalloc((size_t)n + 1, sizeof(*v));
    int m = 0;
    for (int i = 0; i < n; i++) {
        const char *colon = strchr(hdrs[i], ':');
        if (!colon || strncasecmp(hdrs[i], "x-ms-", 5))
            continue;
        size_t nl = (size_t)(colon - hdrs[i]);
        while (nl && (hdrs[i][nl - 1] == ' ' || hdrs[i][nl - 1] == '\t'))
            nl--;
        const char *val = colon + 1;
        while (*val == ' ' || *val == '\t')
            val++;
        v[m].k = lower_dup(hdrs[i], nl);
        v[m++].v = xstrdup(val);
    }
    qsort(v, (size_t)m, sizeof(*v), kv_cmp);
    for (int i = 0; i < m; i++) {
        gbuf_str(b, v[i].k);
        gbuf_add(b, ":", 1);
        gbuf_str(b, v[i].v);
        gbuf_add(b, "\n", 1);
        free(v[i].k);
        free(v[i].v);
    }
    free(v);
}

/* The query's parameters, decoded, names lowercased, in name order. */
static void canon_query(struct gbuf *b, const char *query)
{
    size_t cap = 1;
    for (const char *p = query; *p; p++)
        cap += *p == '&';
    struct kv *v = xcalloc(cap, sizeof(*v));
    size_t m = 0;
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        size_t kn = eq ? (size_t)(eq - p) : n;
        if (kn) {
            char *k = xmalloc(kn + 1), *val = xmalloc(n + 1);
            int kl = http_pct_decode(p, kn, k);
            int vl = eq ? http_pct_decode(eq + 1, n - kn - 1, val) : 0;
            k[kl < 0 ? 0 : kl] = '\0';
            val[vl < 0 ? 0 : vl] = '\0';
            v[m].k = lower_dup(k, strlen(k));
            v[m++].v = val;
            free(k);
        }
        p = amp ? amp + 1 : NULL;
    }
    qsort(v, m, sizeof(*v), kv_cmp);
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || strcmp(v[i].k, v[i - 1].k)) {
            gbuf_add(b, "\n", 1);
            gbuf_str(b, v[i].k);
            gbuf_add(b, ":", 1);
        } else {
            gbuf_add(b, ",", 1);
        }
        gbuf_str(b, v[i].v);
    }
    for (size_t i = 0; i < m; i++) {
        free(v[i].k);
        free(v[i].v);
    }
    free(v);
}

char *az_string_to_sign(const char *method, const char *account, const char *path,
                        const char *query, const char *const *hdrs, int n)
{
    struct gbuf b = {0};
    gbuf_str(&b, method);
    gbuf_add(&b, "\n", 1);
    for (size_t s = 0; s < ARRAY_LEN(signed_slots); s++) {
        const char *v = NULL;
        for (int i = 0; i < n && !v; i++)
            v = hdr_value(hdrs[i], signed_slots[s]);
        if (v && !(s == 2 && !strcmp(v, "0")))   /* a zero Content-Length is "" */
            gbuf_str(&b, v);
        gbuf_add(&b, "\n", 1);
    }
    canon_headers(&b, hdrs, n);
    gbuf_add(&b, "/", 1);
    gbuf_str(&b, account);
    gbuf_str(&b, path);
    canon_query(&b, query);
    return gbuf_take(&b);
}

/* base64(HMAC-SHA256(base64-decoded key, msg)) into out (45 bytes), or
 * -1 for a key that is not base64. */
static int sign(const char *key64, const char *msg, char out[64])
{
    size_t kl = strlen(key64);
    unsigned char *key = xmalloc(kl + 4);
    int n = EVP_DecodeBlock(key, (const unsigned char *)key64, (int)kl);
    if (n < 0 || kl % 4) {
        free(key);
        return -1;
    }
    while (kl && key64[kl - 1] == '=')       /* DecodeBlock counts the padding */
        n--, kl--;
    unsigned char mac[32];
    unsigned int ml = 0;
    HMAC(EVP_sha256(), key, n, (const unsigned char *)msg, strlen(msg), mac, &ml);
    OPENSSL_cleanse(key, (size_t)n > 0 ? (size_t)n : 0);
    free(key);
    EVP_EncodeBlock((unsigned char *)out, mac, (int)ml);
    return 0;
}

static void http_date(time_t now, char out[40])
{
    static const char *const day[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    gmtime_r(&now, &tm);
    snprintf(out, 40, "%s, %02d %s %04d %02d:%02d:%02d GMT", day[tm.tm_wday], tm.tm_mday,
             mon[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void az_req_build(struct s3_req *out, const struct az_cfg *c, const char *method,
                  const char *container, const char *blob, const char *query,
                  const char *const *extra, int n_extra, time_t now)
{
    memset(out, 0, sizeof(*out));
    char *eb = blob && blob[0] ? sigv4_uri_encode(blob, strlen(blob), 1) : NULL;
    char *ec = sigv4_uri_encode(container, strlen(container), 0);
    /* the endpoint's own path (an emulator's /ACCOUNT) starts the request's */
    const char *host = strstr(c->endpoint, "://");
    const char *epath = host ? strchr(host + 3, '/') : NULL;
    char *path = xasprintf("%s/%s%s%s", epath ? epath : "", ec, eb ? "/" : "", eb ? eb : "");
    int sas = c->sas[0] != 0;
    out->url = xasprintf("%s/%s%s%s%s%s%s%s", c->endpoint, ec, eb ? "/" : "", eb ? eb : "",
                         query[0] || sas ? "?" : "", query, query[0] && sas ? "&" : "",
                         sas ? c->sas : "");
    char date[40];
    http_date(now, date);
    out->hdrs[out->n++] = xasprintf("x-ms-date: %s", date);
    out->hdrs[out->n++] = xstrdup("x-ms-version: " AZ_VERSION);
    for (int i = 0; i < n_extra && out->n < S3_REQ_MAX_HDRS - 1; i++)
        out->hdrs[out->n++] = xstrdup(extra[i]);
    if (!sas && c->key[0]) {
        char *sts = az_string_to_sign(method, c->account, path, query,
                                      (const char *const *)out->hdrs, out->n);
        char sig[64];
        if (sign(c->key, sts, sig) == 0)
            out->hdrs[out->n++] = xasprintf("Authorization: SharedKey %s:%s", c->account, sig);
        else
            log_warn_rl("Azure account %s: its key is not base64; the request goes unsigned",
                        c->account);
        free(sts);
    }
    free(path);
    free(eb);
    free(ec);
}
