/*
 * azblock: see azblock.h. Block ids are base64 of "shoal-PREFIX-NNNNNN"
 * (all of one length, as Azure requires), PREFIX random per upload.
 *
 * Thread: the loop of the curlclient given.
 */
#include "azblock.h"

#include <event2/event.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curlclient.h"
#include "log.h"
#include "sigv4.h"
#include "util.h"

struct azup {
    struct curlclient *cli;
    struct backend b;
    char *key;
    int fd;
    int64_t size;
    int64_t bsize;               /* bytes a block (the last one: what is left) */
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
        int64_t off = (int64_t)i * u->bsize;
        int64_t n = u->size - off < u->bsize ? u->size - off : u->bsize;
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

/* Too large for one block blob: answered on the loop, as the contract
 * wants. */
struct too_big {
    backend_done_fn cb;
    void *arg;
    struct event *ev;
};

static void too_big_cb(evutil_socket_t fd, short what, void *arg)
{
    struct too_big *t = arg;
    (void)fd;
    (void)what;
    struct backend_obj o = {.status = 413, .size = -1};
    snprintf(o.err, sizeof(o.err), "an Azure block blob holds at most %d blocks of %llu MiB",
             AZBLOCK_MAX_BLOCKS, (unsigned long long)(AZBLOCK_MAX_SIZE >> 20));
    t->cb(t->arg, &o);
    event_free(t->ev);
    free(t);
}

void azblock_put(struct curlclient *cli, const struct backend *b, const char *key, int fd,
                 int64_t size, backend_done_fn cb, void *arg)
{
    if ((uint64_t)size > (uint64_t)AZBLOCK_MAX_BLOCKS * AZBLOCK_MAX_SIZE) {
        struct too_big *t = xcalloc(1, sizeof(*t));
        t->cb = cb;
        t->arg = arg;
        t->ev = event_new(curlclient_base(cli), -1, 0, too_big_cb, t);
        event_active(t->ev, 0, 0);
        return;
    }
    struct azup *u = xcalloc(1, sizeof(*u));
    u->cli = cli;
    backend_copy(&u->b, b);
    u->key = xstrdup(key);
    u->fd = fd;
    u->size = size;
    /* 8 MiB blocks, or whole MiBs as large as 50,000 of them need */
    int64_t per = (size + AZBLOCK_MAX_BLOCKS - 1) / AZBLOCK_MAX_BLOCKS;
    per = (per + (1 << 20) - 1) / (1 << 20) * (1 << 20);
    u->bsize = per > (int64_t)AZBLOCK_SIZE ? per : (int64_t)AZBLOCK_SIZE;
    u->n = (int)((size + u->bsize - 1) / u->bsize);
    uint64_t r;
    rand_bytes(&r, sizeof(r));
    snprintf(u->prefix, sizeof(u->prefix), "%016llx", (unsigned long long)r);
    u->cb = cb;
    u->arg = arg;
    send_more(u);
}
