/*
 * awschunk: the one decoder of aws-chunked bodies, a byte-at-a-time state
 * machine over whatever pieces the connection delivers (a chunk header
 * may be split anywhere, even between its CR and its LF).
 *
 * Strictness is the point: the same body must decode to the same bytes
 * on the proxy and on a target, and a body that is not exactly what the
 * framing says is refused rather than guessed at. So
 *   - every line ends in CR LF (a bare LF, or a CR followed by anything
 *     but LF, is malformed);
 *   - a size line is 1..16 hex digits, then (signed) exactly
 *     ";chunk-signature=" and 64 lower-case hex digits, or (unsigned)
 *     nothing or a ';' extension that is ignored; at most SIZE_LINE_MAX;
 *   - a chunk never takes the total past the declared length, and the
 *     final (zero) chunk comes exactly when the total is reached;
 *   - after the final chunk: trailer lines "name:value" (unsigned bodies
 *     only; a signed body has none), then one empty line, then nothing.
 *
 * Signed chunks: each chunk's SHA-256 is chained into the signature it
 * must carry (s3auth_chunk_sig, seeded with the request's signature).
 * Data is handed to out() as it arrives, before its chunk's signature
 * can be checked at the chunk's end: a caller must commit nothing until
 * awschunk_finish() says AWSCHUNK_OK (the proxy holds back the last
 * byte, a target keeps the body in a work file).
 *
 * Threads: a decoder belongs to one request, on that request's thread.
 */
#include "awschunk.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3auth.h"
#include "util.h"

#define SIZE_LINE_MAX 128        /* 16 hex digits + ";chunk-signature=" + 64 fit */
#define TRAILER_LINE_MAX 1024
#define TRAILERS_MAX 4096        /* all trailer lines together */
#define SIG_EXT ";chunk-signature="

enum state {
    ST_LINE,                     /* a size line, or a trailer line after the last chunk */
    ST_DATA,                     /* chunk data: left bytes to go */
    ST_DATA_CR,                  /* the CR that must follow a chunk's data */
    ST_DATA_LF,                  /* ... and its LF */
    ST_DONE,                     /* the final empty line was read */
};

struct awschunk {
    int is_signed;
    struct s3auth_result signer; /* a copy: valid for the decoder's life */
    uint64_t want;               /* x-amz-decoded-content-length */
    uint64_t got;                /* decoded bytes so far */
    uint64_t left;               /* of the current chunk */
    enum state st;
    int last_seen;               /* the final chunk's line was read: lines are trailers */
    int cr;                      /* the line so far ended in CR: LF must follow */
    char line[TRAILER_LINE_MAX];
    size_t line_n;
    size_t trailer_bytes;
    char trailers[TRAILERS_MAX + 1];   /* the trailer lines, each ending in '\n' */
    size_t trailers_n;
    char sig[65];                /* the signature the current chunk claims */
    char prev[65];               /* the previous chunk's (the seed first) */
    EVP_MD_CTX *sha;             /* the current chunk's SHA-256, when signed */
    awschunk_out_fn out;
    void *arg;
    int rc;                      /* sticky: the first failure */
};

struct awschunk *awschunk_new(const struct s3auth_result *signer, uint64_t decoded_len,
                              awschunk_out_fn out, void *arg)
{
    struct awschunk *c = xcalloc(1, sizeof(*c));
    c->want = decoded_len;
    c->out = out;
    c->arg = arg;
    c->st = ST_LINE;
    if (signer) {
        c->is_signed = 1;
        c->signer = *signer;
        memcpy(c->prev, signer->seed_sig, sizeof(c->prev));
        c->prev[64] = '\0';
        c->sha = EVP_MD_CTX_new();
        if (!c->sha)
            abort();
    }
    return c;
}

void awschunk_free(struct awschunk *c)
{
    if (!c)
        return;
    EVP_MD_CTX_free(c->sha);
    OPENSSL_cleanse(&c->signer, sizeof(c->signer));
    free(c);
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* The current chunk's signature checks against the chain. */
static int chunk_verify(struct awschunk *c)
{
    if (!c->is_signed)
        return AWSCHUNK_OK;
    unsigned char d[32];
    char hex[65], want[65];
    EVP_DigestFinal_ex(c->sha, d, NULL);
    hex_encode(d, sizeof(d), hex);
    s3auth_chunk_sig(&c->signer, c->prev, hex, want);
    if (CRYPTO_memcmp(want, c->sig, 64))
        return AWSCHUNK_BADSIG;
    memcpy(c->prev, want, sizeof(want));
    return AWSCHUNK_OK;
}

/* "hex-size[;chunk-signature=sig]": the next chunk starts. */
static int size_line(struct awschunk *c)
{
    const char *l = c->line;
    size_t n = c->line_n, hl = 0;
    uint64_t v = 0;
    int d;
    while (hl < n && (d = hexval(l[hl])) >= 0) {
        if (hl == 16)
            return AWSCHUNK_MALFORMED;
        v = v << 4 | (uint64_t)d;
        hl++;
    }
    if (hl == 0 || (hl < n && l[hl] != ';'))
        return AWSCHUNK_MALFORMED;
    if (c->is_signed) {
        size_t el = sizeof(SIG_EXT) - 1;
        if (n - hl != el + 64 || memcmp(l + hl, SIG_EXT, el))
            return AWSCHUNK_MALFORMED;
        for (size_t i = hl + el; i < n; i++)
            if (!((l[i] >= '0' && l[i] <= '9') || (l[i] >= 'a' && l[i] <= 'f')))
                return AWSCHUNK_MALFORMED;
        memcpy(c->sig, l + hl + el, 64);
        c->sig[64] = '\0';
        EVP_DigestInit_ex(c->sha, EVP_sha256(), NULL);
    }
    if (v > c->want - c->got)
        return AWSCHUNK_MALFORMED; /* past the declared length */
    if (v == 0) {
        if (c->got != c->want)
            return AWSCHUNK_MALFORMED; /* the end, short of the declared length */
        c->last_seen = 1;
        return chunk_verify(c); /* the final chunk is signed too, over no data */
    }
    c->left = v;
    c->st = ST_DATA;
    return AWSCHUNK_OK;
}

/* A line after the final chunk: a trailer, or the empty line that ends
 * the body. */
static int trailer_line(struct awschunk *c)
{
    if (c->line_n == 0) {
        c->st = ST_DONE;
        return AWSCHUNK_OK;
    }
    const char *colon = memchr(c->line, ':', c->line_n);
    if (c->is_signed || !colon || colon == c->line)
        return AWSCHUNK_MALFORMED;
    c->trailer_bytes += c->line_n + 2;
    if (c->trailer_bytes > TRAILERS_MAX)
        return AWSCHUNK_MALFORMED;
    memcpy(c->trailers + c->trailers_n, c->line, c->line_n);   /* "line\n", NUL-ended */
    memcpy(c->trailers + c->trailers_n + c->line_n, "\n", 2);
    c->trailers_n += c->line_n + 1;
    return AWSCHUNK_OK;
}

/* One byte of a line; a complete line is acted on. */
static int line_byte(struct awschunk *c, char ch)
{
    if (c->cr) {
        if (ch != '\n')
            return AWSCHUNK_MALFORMED;
        c->cr = 0;
        int rc = c->last_seen ? trailer_line(c) : size_line(c);
        c->line_n = 0;
        return rc;
    }
    if (ch == '\r') {
        c->cr = 1;
        return AWSCHUNK_OK;
    }
    size_t cap = c->last_seen ? TRAILER_LINE_MAX : SIZE_LINE_MAX;
    if (ch == '\n' || c->line_n == cap)
        return AWSCHUNK_MALFORMED;
    c->line[c->line_n++] = ch;
    return AWSCHUNK_OK;
}

int awschunk_feed(struct awschunk *c, const char *p, size_t n)
{
    while (n > 0 && !c->rc) {
        switch (c->st) {
        case ST_LINE:
            c->rc = line_byte(c, *p);
            p++, n--;
            break;
        case ST_DATA: {
            size_t k = n < c->left ? n : (size_t)c->left;
            if (c->is_signed)
                EVP_DigestUpdate(c->sha, p, k);
            c->got += k;
            c->left -= k;
            int rc = c->out(c->arg, p, k);
            p += k, n -= k;
            if (rc)
                c->rc = rc;
            else if (c->left == 0 && !(c->rc = chunk_verify(c)))
                c->st = ST_DATA_CR;
            break;
        }
        case ST_DATA_CR:
        case ST_DATA_LF:
            if (*p != (c->st == ST_DATA_CR ? '\r' : '\n'))
                c->rc = AWSCHUNK_MALFORMED;
            else
                c->st = c->st == ST_DATA_CR ? ST_DATA_LF : ST_LINE;
            p++, n--;
            break;
        case ST_DONE:
            c->rc = AWSCHUNK_MALFORMED; /* bytes after the end */
            break;
        }
    }
    return c->rc;
}

int awschunk_trailer(const struct awschunk *c, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    const char *end = c->trailers + c->trailers_n;
    for (const char *l = c->trailers; l < end;) {
        const char *eol = memchr(l, '\n', (size_t)(end - l));   /* every line has one */
        size_t len = (size_t)(eol - l);
        if (len > nl && l[nl] == ':' && !strncasecmp(l, name, nl)) {
            const char *v = l + nl + 1;
            size_t vl = len - nl - 1;
            while (vl && (*v == ' ' || *v == '\t'))
                v++, vl--;
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                vl--;
            if (vl >= n || memchr(v, '\0', vl))
                return -1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return (int)vl;
        }
        l = eol + 1;
    }
    return -1;
}

int awschunk_finish(const struct awschunk *c)
{
    if (c->rc)
        return c->rc;
    return c->st == ST_DONE ? AWSCHUNK_OK : AWSCHUNK_MALFORMED;
}
