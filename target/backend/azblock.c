/*
 * azblock: see azblock.h. Block ids are base64 of "shoal-PREFIX-NNNNNN"
 * (all of one length, as Azure requires), PREFIX random per upload.
 *
 * Thread: the loop of the curlclient given.
 */
#include "azblock.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sigv4.h"
#include "util.h"

struct azup {
    struct curlclient *cli;
    struct backend b;
    char *key;
    int fd;
    int64_t size;
    int n;                       /* blocks */
    int next;                    /* the next block to send */
    int inflight;
    int failed;
    struct backend_obj fail;     /* the first failure */
    char prefix[17];
    backend_done_fn cb;
    void *arg;
};

/* Block i's id, base64 (out: 64 bytes). */
static void block_id(const struct azup *u, int i, char out[64])
{
    char raw[40];
    int n = snprintf(raw, sizeof(raw), "shoal-%s-%06d", u->prefix, i);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)raw, n);
}

static void up_free(struct azup *u)
{
    backend_free(&u->b);
    free(u->key);
    free(u);
}

static void committed(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct azup *u = arg;
    (void)body;
    (void)len;
    if (o->status < 200 || o->status >= 300)
        log_warn("backend %s: committing %d blocks of %s failed (%d %s)", u->b.label, u->n,
                 u->key, o->status, o->err);
    u->cb(u->arg, o);
    up_free(u);
}

/* Every block is in: commit them in order. */
static void commit(struct azup *u)
{
    struct gbuf x = {0};
    gbuf_str(&x, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
    for (int i = 0; i < u->n; i++) {
        char id[64];
        block_id(u, i, id);
        gbuf_str(&x, "<Latest>");
        gbuf_str(&x, id);
        gbuf_str(&x, "</Latest>");
    }
    gbuf_str(&x, "</BlockList>");
    struct backend_req rq = {"PUT", u->key, "comp=blocklist", -1, 0, 0, x.p, x.n};
    backend_call(u->cli, &u->b, &rq, committed, u);
    gbuf_free(&x);               /* backend_call copied the body */
}

static void send_more(struct azup *u);

static void block_sent(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct azup *u = arg;
    (void)body;
    (void)len;
    u->inflight--;
    if ((o->status < 200 || o->status >= 300) && !u->failed) {
        u->failed = 1;
        u->fail = *o;
    }
    send_more(u);
}

static void send_more(struct azup *u)
{
    while (!u->failed && u->next < u->n && u->inflight < AZBLOCK_PAR) {
        int i = u->next++;
        char id[64], query[128];
        block_id(u, i, id);
        char *eid = sigv4_uri_encode(id, strlen(id), 0);
        snprintf(query, sizeof(query), "comp=block&blockid=%s", eid);
        free(eid);
        int64_t off = (int64_t)i * AZBLOCK_SIZE;
        int64_t n = u->size - off < AZBLOCK_SIZE ? u->size - off : AZBLOCK_SIZE;
        struct backend_req rq = {"PUT", u->key, query, u->fd, off, n, NULL, 0};
        u->inflight++;
        backend_call(u->cli, &u->b, &rq, block_sent, u);
    }
    if (u->inflight)
        return;
    if (u->failed) {
        log_warn("backend %s: a block of %s failed (%d %s); its blocks stay uncommitted",
                 u->b.label, u->key, u->fail.status, u->fail.err);
        u->cb(u->arg, &u->fail);
        up_free(u);
    } else {
        commit(u);
    }
}

void azblock_put(struct curlclient *cli, const struct backend *b, const char *key, int fd,
                 int64_t size, backend_done_fn cb, void *arg)
{
    struct azup *u = xcalloc(1, sizeof(*u));
    u->cli = cli;
    backend_copy(&u->b, b);
    u->key = xstrdup(key);
    u->fd = fd;
    u->size = size;
    u->n = (int)((size + AZBLOCK_SIZE - 1) / AZBLOCK_SIZE);
    uint64_t r;
    rand_bytes(&r, sizeof(r));
    snprintf(u->prefix, sizeof(u->prefix), "%016llx", (unsigned long long)r);
    u->cb = cb;
    u->arg = arg;
    send_more(u);
}
