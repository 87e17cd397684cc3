/*
 * sigv4: see sigv4.h. Every function builds its result in a growing
 * buffer (struct sb) and returns it; nothing here keeps state.
 */
#include "sigv4.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

static int hexv(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Lenient decoding: a '%' not followed by two hex digits stays as it is. */
static size_t pct_decode(const char *s, size_t n, char *out, int plus_space)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexv(s[i + 1]) >= 0 &&
            hexv(s[i + 2]) >= 0) {
            out[o++] = (char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
            i += 2;
        } else if (plus_space && s[i] == '+') {
            out[o++] = ' ';
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return o;
}

char *sigv4_uri_encode(const char *s, size_t n, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    struct gbuf b = {0};
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
            (keep_slash && c == '/')) {
            gbuf_add(&b, (const char *)&c, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            gbuf_add(&b, e, 3);
        }
    }
    return gbuf_take(&b);
}

/* Remove "." and ".." segments and fold repeated slashes (RFC 3986 5.2.4,
 * as AWS normalises). In place; s is an absolute path. */
static void normalize_path(char *s)
{
    size_t n = strlen(s);
    char **seg = xcalloc(n + 1, sizeof(char *));
    int ns = 0;
    int trailing = n > 1 && s[n - 1] == '/';
    char *save = NULL;
    for (char *t = strtok_r(s, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, "."))
            continue;
        if (!strcmp(t, "..")) {
            if (ns > 0)
                ns--;
            continue;
        }
        seg[ns++] = t;
    }
    struct gbuf b = {0};
    for (int i = 0; i < ns; i++) {
        gbuf_str(&b, "/");
        gbuf_str(&b, seg[i]);
    }
    if (ns == 0 || trailing)
        gbuf_str(&b, "/");
    strcpy(s, b.p);
    free(b.p);
    free(seg);
}

struct qp {
    char *k, *v;
};

static int qp_cmp(const void *a, const void *b)
{
    const struct qp *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

static char *canonical_query(const char *q)
{
    struct qp *ps = NULL;
    int n = 0;
    const char *p = q;
    while (p && *p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len) {
            const char *eq = memchr(p, '=', len);
            size_t kl = eq ? (size_t)(eq - p) : len;
            char *kd = xmalloc(kl + 1), *vd = xmalloc(len + 1);
            size_t kn = pct_decode(p, kl, kd, 1);
            size_t vn = eq ? pct_decode(eq + 1, len - kl - 1, vd, 1) : 0;
            vd[vn] = '\0';
            ps = xrealloc(ps, sizeof(*ps) * (size_t)(n + 1));
            ps[n].k = sigv4_uri_encode(kd, kn, 0);
            ps[n].v = sigv4_uri_encode(vd, vn, 0);
            n++;
            free(kd);
            free(vd);
        }
        p = amp ? amp + 1 : NULL;
    }
    if (n)
        qsort(ps, (size_t)n, sizeof(*ps), qp_cmp);
    struct gbuf b = {0};
    for (int i = 0; i < n; i++) {
        if (i)
            gbuf_str(&b, "&");
        gbuf_str(&b, ps[i].k);
        gbuf_str(&b, "=");
        gbuf_str(&b, ps[i].v);
        free(ps[i].k);
        free(ps[i].v);
    }
    free(ps);
    return gbuf_take(&b);
}

struct ch {
    char *name;                  /* lower-cased */
    char *value;                 /* trimmed, folded; repeated joined with ',' */
};

static int ch_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ch *)a)->name, ((const struct ch *)b)->name);
}

static char *fold_value(const char *v)
{
    struct gbuf b = {0};
    int space = 0;
    while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')
        v++;
    for (; *v; v++) {
        if (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') {
            space = 1;
            continue;
        }
        if (space && b.n)
            gbuf_str(&b, " ");
        space = 0;
        gbuf_add(&b, v, 1);
    }
    return gbuf_take(&b);
}

char *sigv4_canonical_request(const struct sigv4_req *r, int normalize, char **signed_headers)
{
    struct gbuf b = {0};
    gbuf_str(&b, r->method);
    gbuf_str(&b, "\n");

    size_t pl = strlen(r->path);
    char *dec = xmalloc(pl + 2);
    size_t dn = pct_decode(r->path, pl, dec, 0);
    if (normalize) {
        dec = xrealloc(dec, dn + 2);
        normalize_path(dec);
        dn = strlen(dec);
    }
    char *enc = sigv4_uri_encode(dec, dn, 1);
    gbuf_str(&b, enc[0] ? enc : "/");
    free(enc);
    free(dec);
    gbuf_str(&b, "\n");

    char *cq = canonical_query(r->query ? r->query : "");
    gbuf_str(&b, cq);
    free(cq);
    gbuf_str(&b, "\n");

    struct ch *hs = xcalloc((size_t)r->n_hdrs + 1, sizeof(*hs));
    int nh = 0;
    for (int i = 0; i < r->n_hdrs; i++) {
        char *name = xstrdup(r->hdrs[i].name);
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        char *val = fold_value(r->hdrs[i].value);
        int j;
        for (j = 0; j < nh; j++)
            if (!strcmp(hs[j].name, name))
                break;
        if (j < nh) {
            char *joined = xasprintf("%s,%s", hs[j].value, val);
            free(hs[j].value);
            hs[j].value = joined;
            free(name);
            free(val);
        } else {
            hs[nh].name = name;
            hs[nh++].value = val;
        }
    }
    qsort(hs, (size_t)nh, sizeof(*hs), ch_cmp);
    struct gbuf sh = {0};
    for (int i = 0; i < nh; i++) {
        gbuf_str(&b, hs[i].name);
        gbuf_str(&b, ":");
        gbuf_str(&b, hs[i].value);
        gbuf_str(&b, "\n");
        if (i)
            gbuf_str(&sh, ";");
        gbuf_str(&sh, hs[i].name);
        free(hs[i].name);
        free(hs[i].value);
    }
    free(hs);
    gbuf_str(&b, "\n");
    char *shs = gbuf_take(&sh);
    gbuf_str(&b, shs);
    gbuf_str(&b, "\n");
    gbuf_str(&b, r->payload_hash);
    if (signed_headers)
        *signed_headers = shs;
    else
        free(shs);
    return gbuf_take(&b);
}

void sigv4_sha256_hex(const void *p, size_t n, char out[65])
{
    uint8_t d[32];
    SHA256(p, n, d);
    hex_encode(d, 32, out);
}

char *sigv4_string_to_sign(const char *amzdate, const char *scope, const char *canonical)
{
    char h[65];
    sigv4_sha256_hex(canonical, strlen(canonical), h);
    return xasprintf("AWS4-HMAC-SHA256\n%s\n%s\n%s", amzdate, scope, h);
}

static void hmac(const uint8_t *key, size_t kl, const char *msg, size_t ml, uint8_t out[32])
{
    unsigned int ol = 32;
    HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg, ml, out, &ol);
}

/* The derivation costs four HMACs; a key lives a day, so each thread keeps
 * the last few it derived (secret, date, region and service must all
 * match; inputs too long to remember are derived every time). */
#define KEY_CACHE 4
#define KEY_ID_MAX 256

struct key_memo {
    size_t idlen;
    char id[KEY_ID_MAX];
    uint8_t key[32];
};

static __thread struct key_memo memo[KEY_CACHE];
static __thread unsigned memo_next;

void sigv4_signing_key(const char *secret, const char *date, const char *region,
                       const char *service, uint8_t key[32])
{
    char id[KEY_ID_MAX];
    int idlen = snprintf(id, sizeof(id), "%s%c%s%c%s%c%s", secret, 0, date, 0, region, 0,
                         service);
    int memoable = idlen > 0 && idlen < (int)sizeof(id);
    for (int i = 0; memoable && i < KEY_CACHE; i++) {
        if (memo[i].idlen == (size_t)idlen && !memcmp(memo[i].id, id, (size_t)idlen)) {
            memcpy(key, memo[i].key, 32);
            return;
        }
    }
    char *k0 = xasprintf("AWS4%s", secret);
    uint8_t a[32], b[32], c[32];
    hmac((const uint8_t *)k0, strlen(k0), date, strlen(date), a);
    hmac(a, 32, region, strlen(region), b);
    hmac(b, 32, service, strlen(service), c);
    hmac(c, 32, "aws4_request", 12, key);
    OPENSSL_cleanse(k0, strlen(k0));
    free(k0);
    if (memoable) {
        struct key_memo *m = &memo[memo_next++ % KEY_CACHE];
        m->idlen = (size_t)idlen;
        memcpy(m->id, id, (size_t)idlen);
        memcpy(m->key, key, 32);
    }
}

void sigv4_hmac_hex(const uint8_t key[32], const char *msg, size_t len, char out[65])
{
    uint8_t d[32];
    hmac(key, 32, msg, len, d);
    hex_encode(d, 32, out);
}

void sigv4_dates(time_t t, char amzdate[17], char date[9])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(amzdate, 17, "%Y%m%dT%H%M%SZ", &tm);
    strftime(date, 9, "%Y%m%d", &tm);
}

static void sign(const struct sigv4_req *r, const struct sigv4_ctx *c,
                 const struct sigv4_creds *k, char **signed_headers, char *scope_out,
                 size_t scope_len, char sig[65])
{
    char amzdate[17], date[9];
    sigv4_dates(c->now, amzdate, date);
    snprintf(scope_out, scope_len, "%s/%s/%s/aws4_request", date, c->region, c->service);
    char *canon = sigv4_canonical_request(r, c->normalize, signed_headers);
    char *sts = sigv4_string_to_sign(amzdate, scope_out, canon);
    uint8_t key[32];
    sigv4_signing_key(k->secret_key, date, c->region, c->service, key);
    sigv4_hmac_hex(key, sts, strlen(sts), sig);
    free(canon);
    free(sts);
}

char *sigv4_authorization(const struct sigv4_req *r, const struct sigv4_ctx *c,
                          const struct sigv4_creds *k, char *sig_out)
{
    char scope[256], sig[65];
    char *sh;
    sign(r, c, k, &sh, scope, sizeof(scope), sig);
    char *a = xasprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                        k->access_key, scope, sh, sig);
    if (sig_out)
        memcpy(sig_out, sig, 65);
    free(sh);
    return a;
}

void sigv4_header_lines(const char *method, const char *hostport, const char *target,
                        const char *payload_hash, const char *region, const char *ak,
                        const char *sk, time_t now, char *lines[3])
{
    char amzdate[17], date[9];
    sigv4_dates(now, amzdate, date);
    struct sigv4_hdr sh[] = {{"host", hostport}, {"x-amz-content-sha256", payload_hash},
                             {"x-amz-date", amzdate}};
    const char *q = strchr(target, '?');
    char *path = xstrndup(target, q ? (size_t)(q - target) : strlen(target));
    struct sigv4_req r = {method, path, q ? q + 1 : "", sh, 3, payload_hash};
    struct sigv4_ctx ctx = {region, "s3", now, 0};
    struct sigv4_creds k = {ak, sk, NULL};
    char *auth = sigv4_authorization(&r, &ctx, &k, NULL);
    lines[0] = xasprintf("x-amz-date: %s", amzdate);
    lines[1] = xasprintf("x-amz-content-sha256: %s", payload_hash);
    lines[2] = xasprintf("Authorization: %s", auth);
    free(auth);
    free(path);
}

char *sigv4_presign_query(const struct sigv4_req *r, const struct sigv4_ctx *c,
                          const struct sigv4_creds *k, int expires_s)
{
    char amzdate[17], date[9];
    sigv4_dates(c->now, amzdate, date);
    /* The signed-headers list is computed from the headers alone. */
    char *sh;
    struct sigv4_req probe = *r;
    probe.query = "";
    free(sigv4_canonical_request(&probe, c->normalize, &sh));
    char *cred = xasprintf("%s/%s/%s/%s/aws4_request", k->access_key, date, c->region,
                           c->service);
    char *ecred = sigv4_uri_encode(cred, strlen(cred), 0);
    char *esh = sigv4_uri_encode(sh, strlen(sh), 0);
    struct gbuf q = {0};
    if (r->query && r->query[0]) {
        gbuf_str(&q, r->query);
        gbuf_str(&q, "&");
    }
    char *part = xasprintf("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=%s"
                           "&X-Amz-Date=%s&X-Amz-Expires=%d&X-Amz-SignedHeaders=%s",
                           ecred, amzdate, expires_s, esh);
    gbuf_str(&q, part);
    free(part);
    if (k->token && k->token[0]) {
        char *et = sigv4_uri_encode(k->token, strlen(k->token), 0);
        gbuf_str(&q, "&X-Amz-Security-Token=");
        gbuf_str(&q, et);
        free(et);
    }
    struct sigv4_req full = *r;
    full.query = q.p;
    char scope[256], sig[65];
    char *sh2;
    sign(&full, c, k, &sh2, scope, sizeof(scope), sig);
    gbuf_str(&q, "&X-Amz-Signature=");
    gbuf_str(&q, sig);
    free(sh);
    free(sh2);
    free(cred);
    free(ecred);
    free(esh);
    return gbuf_take(&q);
}
