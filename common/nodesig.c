/*
 * nodesig: the cluster signatures (see nodesig.h). The HMAC's inner and
 * outer key pads are absorbed into two SHA-256 states once per process,
 * so a signature costs two state copies and two short hashes instead of
 * hashing both 64-byte pads again.
 *
 * Threads: any; node_sig_init/node_sig_free run before and after the
 * threads that sign.
 */
#include "nodesig.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "node.h"
#include "util.h"

void node_sig_init(struct node *n)
{
    unsigned char k[64] = {0}, pad[64];
    const char *key = n->conf->cluster_secret;
    size_t kl = strlen(key);
    if (kl > sizeof(k)) {
        unsigned int dl;
        EVP_Digest(key, kl, k, &dl, EVP_sha256(), NULL);
    } else {
        memcpy(k, key, kl);
    }
    n->mac_in = EVP_MD_CTX_new();
    n->mac_out = EVP_MD_CTX_new();
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    if (!n->mac_in || !n->mac_out || !EVP_DigestInit_ex(n->mac_in, EVP_sha256(), NULL) ||
        !EVP_DigestUpdate(n->mac_in, pad, 64))
        abort();
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    if (!EVP_DigestInit_ex(n->mac_out, EVP_sha256(), NULL) ||
        !EVP_DigestUpdate(n->mac_out, pad, 64))
        abort();
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
}

void node_sig_free(struct node *n)
{
    EVP_MD_CTX_free(n->mac_in);
    EVP_MD_CTX_free(n->mac_out);
    n->mac_in = n->mac_out = NULL;
}

void node_sign(const struct node *n, const char *method, const char *target, size_t len,
               char *out)
{
    unsigned char inner[32], mac[32];
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c || !EVP_MD_CTX_copy_ex(c, n->mac_in) || !EVP_DigestUpdate(c, method, strlen(method)) ||
        !EVP_DigestUpdate(c, "\n", 1) || !EVP_DigestUpdate(c, target, len) ||
        !EVP_DigestFinal_ex(c, inner, NULL) || !EVP_MD_CTX_copy_ex(c, n->mac_out) ||
        !EVP_DigestUpdate(c, inner, sizeof(inner)) || !EVP_DigestFinal_ex(c, mac, NULL))
        abort();
    EVP_MD_CTX_free(c);
    hex_encode(mac, 32, out);
}

char *node_signed_url(const struct node *n, const char *method, const char *base,
                      const char *path, const char *query)
{
    int64_t exp = (int64_t)(wall_ns() / 1000000000u) + n->conf->redirect_ttl_s;
    struct gbuf u = {0};
    gbuf_str(&u, base);
    size_t t0 = u.n;             /* the signed part: path and query */
    gbuf_strs(&u, path, "?", NULL);
    if (query && query[0])
        gbuf_strs(&u, query, "&", NULL);
    gbuf_str(&u, "shoal_exp=");
    gbuf_i64(&u, exp);
    char sig[65];
    node_sign(n, method, u.p + t0, u.n - t0, sig);
    gbuf_strs(&u, "&shoal_sig=", sig, NULL);
    return gbuf_take(&u);
}

char *node_signed_urlf(const struct node *n, const char *method, const char *base,
                       const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *pq;
    if (vasprintf(&pq, fmt, ap) < 0)
        abort();
    va_end(ap);
    char *q = strchr(pq, '?');
    if (q)
        *q++ = '\0';
    char *url = node_signed_url(n, method, base, pq, q);
    free(pq);
    return url;
}

/*
 * The signature is the request target's last parameter and covers all of
 * the target before it, which ends with shoal_exp: so nothing in the path
 * or query can be changed, added or removed, and the expiry is the
 * signer's.
 */
int node_check_sig(const struct node *n, struct http_req *r)
{
    static const char sp[] = "&shoal_sig=", ep[] = "shoal_exp=";
    const char *t = r->target;
    size_t tl = strlen(t);
    const char *s = tl > 64 + sizeof(sp) - 1 ? t + tl - 64 - (sizeof(sp) - 1) : NULL;
    if (!s || memcmp(s, sp, sizeof(sp) - 1))
        return strstr(t, "shoal_sig=") ? -1 : 0;
    /* shoal_exp=DIGITS right before the signature */
    const char *d = s;
    while (d > t && d[-1] >= '0' && d[-1] <= '9')
        d--;
    size_t el = sizeof(ep) - 1;
    int64_t e;
    if (d - t < (ptrdiff_t)(el + 1) || memcmp(d - el, ep, el) || (d[-el - 1] != '?' &&
        d[-el - 1] != '&') || parse_i64(d, (size_t)(s - d), &e))
        return -1;
    if (e < (int64_t)(wall_ns() / 1000000000u))
        return -1;
    /* HEAD is signed as GET: clients may turn one into the other. */
    const char *m = r->method == HTTP_M_HEAD ? "GET" : r->method_name;
    char want[65];
    node_sign(n, m, t, (size_t)(s - t), want);
    return CRYPTO_memcmp(s + sizeof(sp) - 1, want, 64) == 0 ? 1 : -1;
}
