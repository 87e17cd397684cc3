/*
 * batch: GetBatch's assembler (see batch.h).
 *
 * State: a batch has one feed per owning target (a nodeclient stream from
 * a peer, or bsend turns on this target's I/O pool), the index of the
 * next entry to emit, and at most one "ask" (a GET through the object
 * API for an entry its feed did not read). pump() does all the moving,
 * always from an event of its own (never inside a nodeclient or pool
 * callback, which only note what came and kick it), so that it may
 * cancel transfers and free the batch.
 *
 * Thread: the request's worker; the local feed's turns on the I/O pool.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archidx.h"
#include "authz.h"
#include "batch.h"
#include "batchreq.h"
#include "bmd.h"
#include "bsend.h"
#include "cmap.h"
#include "err.h"
#include "http.h"
#include "httpbody.h"
#include "iopool.h"
#include "log.h"
#include "node.h"
#include "nodeauth.h"
#include "nodeclient.h"
#include "nodesig.h"
#include "target.h"
#include "util.h"

#define BATCH_HIGH (4u << 20)
#define BATCH_FEED_HIGH (4u << 20)
#define LOCAL_TURN (1u << 20)
#define ASK_BODY_MAX (64u << 20)   /* an asked entry without a length, buffered */
#define FEED_TIMEOUT_MS (60L * 60 * 1000)

struct batch;

struct feed {
    struct batch *b;
    char *url;                   /* the peer's, NULL for this target */
    char *owner_url;             /* the owner's, for asks (this target's too) */
    uint32_t *idx;               /* its entries, in order */
    size_t n;
    struct evbuffer *buf;        /* frames come in, the merge takes them */
    struct nodeclient_xfer *x;
    int paused, ended, failed;
    char *body;                  /* the peer's request */
    size_t body_len;
    struct bsend *s;             /* this target's */
    struct evbuffer *turn;       /* the pool's, during a turn */
    int turn_rc;                 /* the turn's bsend_turn, read once it is back */
    int in_pool, local_done;
    uint64_t refd;               /* the bytes of buf's BSEND_FILE frames */
};

struct batch {
    struct target *t;
    struct http_req *r;
    struct batch_req q;
    struct feed *feeds;
    int nfeeds;
    uint16_t *feed_of;           /* entry -> its feed */
    size_t i;                    /* the next entry to emit */
    int have_head;               /* entry i's frame head is read */
    uint64_t left;               /* its bytes still to take */
    struct archidx_w *w;
    struct evbuffer *out;        /* the answer's next bytes */
    /* take()'s bytes in flight through the writer: src's first mv_left
     * bytes, at mv_p; moved (not copied) when the writer passes them on
     * as they are (a .tar's data), see to_evbuffer */
    struct evbuffer *mv_src;
    const char *mv_p;
    size_t mv_left, mv_moved;
    /* by_file: a large local entry leaves as a file segment (a .tar to a
     * plain socket); while take_file runs, what the writer passes on as
     * it was (file_n bytes, of file_zeros) stands for it */
    int by_file, file_taking, file_other;
    uint64_t file_n;
    json_t *manifest;
    struct event *kick;
    int started, dead, in_pool;
    /* an ask: entry i through the object API */
    struct nodeclient_xfer *ask;
    struct evbuffer *ask_buf;
    int ask_status, ask_done, ask_head;
    int64_t ask_len;             /* Content-Length, -1 none */
    int ask_whole;               /* a 200 to a Range: read whole, then cut */
    char ask_err[200];
};

static void pump(struct batch *b);

static void kick(struct batch *b)
{
    event_active(b->kick, 0, 0);
}

static void kicked(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pump(arg);
}

static void batch_free(struct batch *b)
{
    for (int i = 0; i < b->nfeeds; i++) {
        struct feed *f = &b->feeds[i];
        if (f->x && !f->ended)
            nodeclient_cancel(f->x);
        if (!f->url) {           /* segments not taken yet */
            int mid = b->have_head && !b->ask && b->i < b->q.n && b->feed_of[b->i] == i;
            bsend_frames_free(f->buf, mid ? b->left : 0);
            if (f->turn)
                bsend_frames_free(f->turn, 0);
        }
        evbuffer_free(f->buf);
        bsend_free(f->s);
        if (f->turn)
            evbuffer_free(f->turn);
        free(f->url);
        free(f->owner_url);
        free(f->idx);
        free(f->body);
    }
    if (b->ask && !b->ask_done)
        nodeclient_cancel(b->ask);
    if (b->ask_buf)
        evbuffer_free(b->ask_buf);
    free(b->feeds);
    free(b->feed_of);
    archidx_w_free(b->w);
    if (b->out)
        evbuffer_free(b->out);
    json_decref(b->manifest);
    if (b->kick)
        event_free(b->kick);
    batchreq_free(&b->q);
    if (b->r->data == b) {
        b->r->data = NULL;
        b->r->on_abort = NULL;
        b->r->on_drain = NULL;
    }
    http_req_unref(b->r);
    free(b);
}

/* Dead: freed now, or by the last pool turn to come back. */
static void batch_end(struct batch *b)
{
    b->dead = 1;
    if (!b->in_pool)
        batch_free(b);
}

/* ---- feeds -------------------------------------------------------------------------- */

static int feed_on_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct feed *f = arg;
    (void)x;
    if (status != 200) {
        f->failed = 1;
        kick(f->b);
        return -1;
    }
    return 0;
}

static int feed_on_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct feed *f = arg;
    evbuffer_add(f->buf, p, n);
    if (evbuffer_get_length(f->buf) > BATCH_FEED_HIGH && !f->paused) {
        f->paused = 1;
        nodeclient_pause(x);
    }
    kick(f->b);
    return 0;
}

static void feed_on_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct feed *f = arg;
    (void)x;
    f->ended = 1;
    if (status != 200 || err) {
        f->failed = 1;
        log_warn("batch: the stream from %s failed: %s", f->url, err ? err : "status");
    }
    kick(f->b);
}

static const struct nodeclient_ops feed_ops = {
    .on_headers = feed_on_headers,
    .on_data = feed_on_data,
    .on_done = feed_on_done,
};

static void local_work(void *arg)
{
    struct feed *f = arg;
    f->turn_rc = bsend_turn(f->s, f->turn, LOCAL_TURN);
}

static void local_done(void *arg)
{
    struct feed *f = arg;
    struct batch *b = f->b;
    f->in_pool = 0;
    b->in_pool--;
    if (b->dead) {
        if (!b->in_pool)
            batch_free(b);
        return;
    }
    evbuffer_add_buffer(f->buf, f->turn);   /* its chains move */
    f->refd += bsend_turn_refs(f->s);
    f->local_done = f->turn_rc == 1;
    f->failed = f->turn_rc < 0;
    f->ended = f->local_done || f->failed;
    pump(b);
}

/* Is the client's side full? Nothing more is asked for until it drains. */
static int backed_up(struct batch *b)
{
    return b->started && http_resp_pending(b->r) > BATCH_HIGH;
}

/* Ask for more of feed f when it has room. */
static void feed_more(struct feed *f)
{
    struct batch *b = f->b;
    if (f->ended || evbuffer_get_length(f->buf) + f->refd > BATCH_FEED_HIGH / 2 ||
        backed_up(b))
        return;                  /* drained() kicks the merge, which asks again */
    if (f->url && f->paused) {
        f->paused = 0;
        nodeclient_resume(f->x);
    } else if (!f->url && !f->in_pool) {
        f->in_pool = 1;
        b->in_pool++;
        iopool_submit(b->t->io, b->r->w->q, local_work, local_done, f);
    }
}

static void feeds_start(struct batch *b)
{
    for (int i = 0; i < b->nfeeds; i++) {
        struct feed *f = &b->feeds[i];
        if (!f->url) {
            f->s = bsend_new(b->t, &b->q, f->idx, f->n);
            if (b->by_file)
                bsend_set_way(f->s, BSEND_REFS);
            f->turn = evbuffer_new();
            feed_more(f);
            continue;
        }
        f->body = batchreq_encode(&b->q, f->idx, f->n, &f->body_len);
        char *url = node_signed_url(&b->t->node, "POST", f->url, "/v1/internal/batch", NULL);
        static const char *const hdrs[] = {"Content-Type: application/json"};
        f->x = nodeclient_start_mem(target_hc(b->r), "POST", url, hdrs, 1, f->body, f->body_len,
                                    FEED_TIMEOUT_MS, &feed_ops, f);
        free(url);
    }
}

/* ---- the answer --------------------------------------------------------------------- */

/* The writer's output. Bytes that are take()'s own, at the front of its
 * source, move over as the source's chains; anything else (headers,
 * padding, what a compressor or a zip's writer made) is copied. */
static char file_zeros[64u << 10];

static void to_evbuffer(void *arg, const void *p, size_t n)
{
    struct batch *b = arg;
    if (b->file_taking) {
        if (p == file_zeros && n <= sizeof(file_zeros))
            b->file_n += n;
        else
            b->file_other = 1;
        return;
    }
    if (b->mv_src && p == b->mv_p && n <= b->mv_left) {
        evbuffer_remove_buffer(b->mv_src, b->out, n);
        b->mv_p += n;
        b->mv_left -= n;
        b->mv_moved += n;
        return;
    }
    evbuffer_add(b->out, p, n);
}

static void flush(struct batch *b)
{
    if (!b->started) {
        b->started = 1;
        http_resp_header_str(b->r, "Content-Type", archidx_content_type(b->q.kind));
        http_resp_begin(b->r, 200, -1);
    }
    http_resp_buffer(b->r, b->out);
}

static void note(struct batch *b, int status, uint64_t size, const char *err)
{
    if (!b->manifest)
        return;
    const struct batch_entry *e = &b->q.e[b->i];
    json_t *j = json_pack("{s:s, s:s, s:i, s:I}", "bucket", e->bucket, "name", e->name,
                          "status", status, "size", (json_int_t)size);
    if (e->archpath)
        json_object_set_new(j, "archpath", json_string(e->archpath));
    if (err)
        json_object_set_new(j, "error", json_string(err));
    json_array_append_new(b->manifest, j);
}

/* The batch fails: a status while nothing went, else the answer is cut. */
static void fail(struct batch *b, int status, const char *msg)
{
    if (!b->started) {
        http_reply_error(b->r, status, "%s", msg);
    } else {
        log_warn("batch: cut after %zu of %zu entries: %s", b->i, b->q.n, msg);
        http_resp_abort(b->r);
    }
    batch_end(b);
}

static int member(struct batch *b, const char *prefix, uint64_t size)
{
    char err[200];
    char *name = batchreq_member_name(&b->q, &b->q.e[b->i]);
    char *full = prefix ? xasprintf("%s%s", prefix, name) : name;
    int rc = archidx_w_member(b->w, full, size, (uint64_t)time(NULL), err, sizeof(err));
    if (full != name)
        free(full);
    free(name);
    return rc;
}

/* Entry i could not be had (status, msg): an empty marked member, or the end. */
static int entry_failed(struct batch *b, int status, const char *msg)
{
    const struct batch_entry *e = &b->q.e[b->i];
    if (!b->q.continue_on_error) {
        char *m = xasprintf("entry %zu (%s/%s%s%s): %s", b->i, e->bucket, e->name,
                            e->archpath ? "/" : "", e->archpath ? e->archpath : "", msg);
        fail(b, status == BSEND_ASK ? 500 : status, m);
        free(m);
        return -1;
    }
    if (member(b, BATCH_MISSING, 0)) {
        fail(b, 500, "cannot write the answer");
        return -1;
    }
    note(b, status, 0, msg);
    b->i++;
    return 0;
}

static int finish(struct batch *b)
{
    char err[200];
    if (b->manifest) {
        char *s = json_dumps(b->manifest, JSON_COMPACT);
        size_t n = strlen(s);
        int rc = archidx_w_member(b->w, BATCH_MANIFEST, n, (uint64_t)time(NULL), err,
                                  sizeof(err)) ||
                 archidx_w_data(b->w, s, n, err, sizeof(err));
        free(s);
        if (rc)
            return -1;
    }
    if (archidx_w_close(b->w, err, sizeof(err)))
        return -1;
    flush(b);
    http_resp_end(b->r);
    return 0;
}

/* Move what bytes there are of entry i from src into the answer. */
static int take(struct batch *b, struct evbuffer *src)
{
    char err[200];
    while (b->left && evbuffer_get_length(src)) {
        size_t n = evbuffer_get_contiguous_space(src);
        if (n > b->left)
            n = (size_t)b->left;
        const void *p = evbuffer_pullup(src, (ssize_t)n);
        b->mv_src = src;
        b->mv_p = p;
        b->mv_left = n;
        b->mv_moved = 0;
        int rc = archidx_w_data(b->w, p, n, err, sizeof(err));
        b->mv_src = NULL;
        if (rc)
            return -1;
        evbuffer_drain(src, n - b->mv_moved);   /* what the writer copied */
        b->left -= n;
    }
    return 0;
}

/* Entry i's len bytes as the file segment seg (taken): the writer is
 * handed as many bytes of file_zeros, which it must pass on as they are
 * (a .tar's data does), and the segment goes in their place. Anything
 * else the writer would make of them ends the batch. */
static int take_file(struct batch *b, struct evbuffer_file_segment *seg, uint64_t len)
{
    char err[200];
    int rc = 0;
    b->file_taking = 1;
    b->file_n = 0;
    b->file_other = 0;
    for (uint64_t at = 0; at < len && !rc;) {
        size_t k = len - at < sizeof(file_zeros) ? (size_t)(len - at) : sizeof(file_zeros);
        rc = archidx_w_data(b->w, file_zeros, k, err, sizeof(err));
        at += k;
    }
    b->file_taking = 0;
    if (!rc && (b->file_other || b->file_n != len ||
                evbuffer_add_file_segment(b->out, seg, 0, (ev_off_t)len)))
        rc = -1;
    evbuffer_file_segment_free(seg);
    b->left = 0;
    return rc;
}

/* ---- asks --------------------------------------------------------------------------- */

static int ask_on_headers(void *arg, struct nodeclient_xfer *x, int status)
{
    struct batch *b = arg;
    b->ask_status = status;
    const char *cl = nodeclient_header(x, "Content-Length");
    b->ask_len = cl ? strtoll(cl, NULL, 10) : -1;
    kick(b);
    return 0;
}

static int ask_on_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct batch *b = arg;
    evbuffer_add(b->ask_buf, p, n);
    if (b->ask_len < 0 || b->ask_whole) {   /* read whole first: never paused */
        if (evbuffer_get_length(b->ask_buf) > ASK_BODY_MAX)
            return -1;
    } else if (evbuffer_get_length(b->ask_buf) > BATCH_FEED_HIGH) {
        nodeclient_pause(x);
    }
    kick(b);
    return 0;
}

static void ask_on_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct batch *b = arg;
    (void)x;
    b->ask_done = 1;
    if (!status)
        b->ask_status = 0;
    snprintf(b->ask_err, sizeof(b->ask_err), "%s", err ? err : "");
    kick(b);
}

static const struct nodeclient_ops ask_ops = {
    .on_headers = ask_on_headers,
    .on_data = ask_on_data,
    .on_done = ask_on_done,
};

static void ask_start(struct batch *b, const char *owner_url)
{
    const struct batch_entry *e = &b->q.e[b->i];
    char *en = http_pct_encode(e->name, strlen(e->name), 1);
    char *ap = e->archpath ? http_pct_encode(e->archpath, strlen(e->archpath), 0) : NULL;
    char *url = node_signed_urlf(&b->t->node, "GET", owner_url,
                                 "/v1/objects/%s/%s?provider=%s%s%s%s%s%s%s", e->bucket, en,
                                 e->provider, ap ? "&archpath=" : "", ap ? ap : "",
                                 e->transform ? "&transform=" : "",
                                 e->transform ? e->transform : "", e->args ? "&" : "",
                                 e->args ? e->args : "");
    char range[80];
    const char *hdrs[1];
    int nh = 0;
    if (e->start > 0 || e->length >= 0) {
        long long s = e->start > 0 ? e->start : 0;
        if (e->length > 0)
            snprintf(range, sizeof(range), "Range: bytes=%lld-%lld", s, s + e->length - 1);
        else
            snprintf(range, sizeof(range), "Range: bytes=%lld-", s);
        if (e->length != 0)
            hdrs[nh++] = range;
    }
    b->ask_buf = evbuffer_new();
    b->ask_status = b->ask_done = b->ask_head = b->ask_whole = 0;
    b->ask_len = -1;
    b->ask = nodeclient_start(target_hc(b->r), "GET", url, hdrs, nh, -1, FEED_TIMEOUT_MS,
                              &ask_ops, b);
    free(url);
    free(en);
    free(ap);
}

static void ask_clear(struct batch *b)
{
    if (b->ask && !b->ask_done)
        nodeclient_cancel(b->ask);
    b->ask = NULL;
    evbuffer_free(b->ask_buf);
    b->ask_buf = NULL;
}

/* Entry i by its ask: 1 when done with it, 0 to wait, -1 when the batch ended. */
static int ask_step(struct batch *b)
{
    const struct batch_entry *e = &b->q.e[b->i];
    if (!b->ask_head) {
        if (!b->ask_status && !b->ask_done)
            return 0;
        int st = b->ask_status;
        if (st != 200 && st != 206) {
            if (st && !b->ask_done)
                return 0;        /* its message still coming */
            char msg[300];
            size_t n = evbuffer_get_length(b->ask_buf);
            snprintf(msg, sizeof(msg), "%s", st ? "" : b->ask_err);
            if (st && n) {
                size_t k = n < sizeof(msg) - 1 ? n : sizeof(msg) - 1;
                evbuffer_copyout(b->ask_buf, msg, k);
                msg[k] = 0;
            }
            ask_clear(b);
            return entry_failed(b, st == 404 ? 404 : st ? st : 500, msg[0] ? msg : "unreadable")
                       ? -1 : 1;
        }
        int ranged = e->start > 0 || e->length > 0;
        b->ask_whole = ranged && st == 200;     /* the owner sent it all */
        if ((b->ask_len < 0 || b->ask_whole) && !b->ask_done)
            return 0;            /* no length, or not cut: the whole of it first */
        uint64_t len = b->ask_len >= 0 && !b->ask_whole ? (uint64_t)b->ask_len
                                                        : evbuffer_get_length(b->ask_buf);
        if (b->ask_whole) {
            uint64_t skip = e->start > 0 ? (uint64_t)e->start : 0;
            if (skip > len) {
                ask_clear(b);
                return entry_failed(b, 400, "start is past the entry's end") ? -1 : 1;
            }
            evbuffer_drain(b->ask_buf, (size_t)skip);
            len -= skip;
            if (e->length >= 0 && (uint64_t)e->length < len)
                len = (uint64_t)e->length;
        }
        if (e->length == 0)
            len = 0;
        if (member(b, NULL, len)) {
            fail(b, 500, "cannot write the answer");
            return -1;
        }
        b->ask_head = 1;
        b->left = len;
        b->ask_len = (int64_t)len;   /* for the manifest */
    }
    if (take(b, b->ask_buf)) {
        fail(b, 500, "cannot write the answer");
        return -1;
    }
    if (b->left) {
        if (b->ask_done) {
            ask_clear(b);
            fail(b, 502, "an entry's owner stopped sending it");
            return -1;
        }
        if (!backed_up(b))
            nodeclient_resume(b->ask);
        return 0;
    }
    note(b, 200, (uint64_t)(b->ask_len >= 0 ? b->ask_len : 0), NULL);
    ask_clear(b);
    b->i++;
    return 1;
}

/* ---- the merge ---------------------------------------------------------------------- */

/* Entry i from its feed: 1 when done with it, 0 to wait, -1 when the batch ended. */
static int feed_step(struct batch *b)
{
    struct feed *f = &b->feeds[b->feed_of[b->i]];
    if (!b->have_head) {
        unsigned char h[BSEND_HEAD];
        int status;
        uint64_t len;
        if (evbuffer_copyout(f->buf, h, sizeof(h)) < (ssize_t)sizeof(h)) {
            if (f->ended || f->failed) {
                fail(b, 502, "a target stopped sending its entries mid-batch");
                return -1;
            }
            feed_more(f);
            return 0;
        }
        if (bsend_head(h, &status, &len) || (status == BSEND_FILE && f->url)) {
            fail(b, 502, "a target's stream of entries is malformed");
            return -1;
        }
        if (status == BSEND_FILE) {   /* this target's, a whole frame */
            struct evbuffer_file_segment *seg;
            evbuffer_drain(f->buf, sizeof(h));
            evbuffer_remove(f->buf, &seg, sizeof(seg));
            f->refd -= len;
            if (member(b, NULL, len)) {
                evbuffer_file_segment_free(seg);
                fail(b, 500, "cannot write the answer");
                return -1;
            }
            note(b, 200, len, NULL);
            if (take_file(b, seg, len)) {
                fail(b, 500, "cannot write the answer");
                return -1;
            }
            feed_more(f);
            b->i++;
            return 1;
        }
        if (status != BSEND_OK) {
            if (evbuffer_get_length(f->buf) < sizeof(h) + len) {
                if (f->ended || f->failed) {
                    fail(b, 502, "a target stopped sending its entries mid-batch");
                    return -1;
                }
                feed_more(f);
                return 0;
            }
            char msg[400];
            size_t k = len < sizeof(msg) - 1 ? (size_t)len : sizeof(msg) - 1;
            evbuffer_drain(f->buf, sizeof(h));
            evbuffer_copyout(f->buf, msg, k);
            msg[k] = 0;
            evbuffer_drain(f->buf, (size_t)len);
            feed_more(f);
            if (status == BSEND_ASK) {
                ask_start(b, f->owner_url);
                return 0;
            }
            return entry_failed(b, status, msg) ? -1 : 1;
        }
        evbuffer_drain(f->buf, sizeof(h));
        if (member(b, NULL, len)) {
            fail(b, 500, "cannot write the answer");
            return -1;
        }
        b->have_head = 1;
        b->left = len;
        note(b, 200, len, NULL);
    }
    if (take(b, f->buf)) {
        fail(b, 500, "cannot write the answer");
        return -1;
    }
    feed_more(f);
    if (b->left) {
        if (!evbuffer_get_length(f->buf) && (f->ended || f->failed)) {
            fail(b, 502, "a target stopped sending its entries mid-batch");
            return -1;
        }
        return 0;
    }
    b->have_head = 0;
    b->i++;
    return 1;
}

static void pump(struct batch *b)
{
    if (b->dead)
        return;
    while (b->i < b->q.n) {
        if (backed_up(b))
            return;              /* until the client drains it */
        int rc = b->ask ? ask_step(b) : feed_step(b);
        if (rc < 0)
            return;              /* ended */
        if (evbuffer_get_length(b->out))
            flush(b);
        if (!rc)
            return;              /* waiting for bytes */
    }
    if (finish(b))
        fail(b, 500, "cannot write the answer's end");
    else
        batch_end(b);
}

static void drained(struct http_req *r)
{
    struct batch *b = r->data;
    if (b && http_resp_pending(r) < BATCH_HIGH / 2)
        kick(b);
}

static void client_gone(struct http_req *r)
{
    struct batch *b = r->data;
    r->data = NULL;
    r->on_drain = NULL;
    batch_end(b);
}

/* ---- the request -------------------------------------------------------------------- */

/* Group the entries by owner: 0, or answered. */
static int plan(struct batch *b)
{
    struct cmap *m = cmap_current();
    if (!m) {
        http_reply_error(b->r, 503, "no cluster map yet");
        return -1;
    }
    b->feeds = xcalloc((size_t)m->n + 1, sizeof(*b->feeds));
    b->feed_of = xmalloc(b->q.n * sizeof(*b->feed_of));
    const struct cmap_node **owners = xcalloc((size_t)m->n + 1, sizeof(*owners));
    for (size_t i = 0; i < b->q.n; i++) {
        const struct batch_entry *e = &b->q.e[i];
        size_t kl;
        char *key = node_obj_key(e->provider, e->bucket, e->name, &kl);
        const struct cmap_node *o = cmap_owner(m, key, kl);
        free(key);
        if (!o) {
            free(owners);
            cmap_unref(m);
            http_reply_error(b->r, 503, "no target owns %s/%s yet", e->bucket, e->name);
            return -1;
        }
        int k = 0;
        while (k < b->nfeeds && owners[k] != o)
            k++;
        if (k == b->nfeeds) {
            owners[k] = o;
            struct feed *f = &b->feeds[k];
            f->b = b;
            f->url = strcmp(o->id, b->t->node.id) ? xstrdup(o->url) : NULL;
            f->owner_url = xstrdup(o->url);
            f->buf = evbuffer_new();
            b->nfeeds++;
        }
        b->feeds[k].n++;         /* counted first, then listed */
        b->feed_of[i] = (uint16_t)k;
    }
    for (int k = 0; k < b->nfeeds; k++) {
        b->feeds[k].idx = xmalloc(b->feeds[k].n * sizeof(*b->feeds[k].idx));
        b->feeds[k].n = 0;
    }
    for (size_t i = 0; i < b->q.n; i++) {
        struct feed *f = &b->feeds[b->feed_of[i]];
        f->idx[f->n++] = (uint32_t)i;
    }
    free(owners);
    cmap_unref(m);
    return 0;
}

/* A client's own request: every bucket exists and lets it read. */
static int authorized(struct batch *b, const struct authz_who *who)
{
    struct bmd *bm = bmd_current();
    for (size_t i = 0; i < b->q.n; i++) {
        const struct batch_entry *e = &b->q.e[i];
        if (i && !strcmp(e->bucket, b->q.e[i - 1].bucket) &&
            !strcmp(e->provider, b->q.e[i - 1].provider))
            continue;
        const struct bmd_bucket *bk = bm ? bmd_find(bm, e->provider, e->bucket) : NULL;
        if (!bk) {
            bmd_unref(bm);
            err_reply(b->r, S3E_NO_SUCH_BUCKET, "bucket '%s' not found", e->bucket);
            return 0;
        }
        if (authz_decide(bk->props, who, AUTHZ_READ) != AUTHZ_ALLOW) {
            bmd_unref(bm);
            err_reply(b->r, S3E_ACCESS_DENIED, "Access Denied: bucket '%s'", e->bucket);
            return 0;
        }
    }
    bmd_unref(bm);
    return 1;
}

struct start {
    struct target *t;
    struct http_req *r;
    struct authz_who who;
    char digest[BATCHREQ_DIGEST_LEN + 1];   /* "" when not routed */
};

static void got_body(struct http_req *r, void *arg, char *body, size_t len)
{
    struct start *st = arg;
    batchreq_release();          /* parsed below, the body freed after */
    struct batch *b = xcalloc(1, sizeof(*b));
    b->t = st->t;
    b->r = r;                    /* takes st's reference */
    char err[300];
    if (st->who.node) {
        char hex[sizeof(st->digest)];
        batchreq_digest(body, len, hex);
        if (strcmp(hex, st->digest)) {
            err_reply(r, S3E_ACCESS_DENIED, "the batch is not the one the proxy authorized");
            goto bad;
        }
    }
    if (batchreq_parse(&b->q, body, len, err, sizeof(err))) {
        http_reply_error(r, 400, "%s", err);
        goto bad;
    }
    if ((!st->who.node && !authorized(b, &st->who)) || plan(b))
        goto bad;
    free(st);
    b->kick = event_new(r->w->base, -1, 0, kicked, b);
    b->out = evbuffer_new();
    /* a .tar passes its data on as it is: a large local entry can leave
     * with sendfile, where the answer goes to a plain socket */
    b->by_file = b->q.kind == ARCHIDX_TAR && !http_req_tls(r);
    if (b->by_file)
        evbuffer_set_flags(b->out, EVBUFFER_FLAG_DRAINS_TO_FD);
    b->w = archidx_w_open(b->q.kind, to_evbuffer, b);
    if (b->q.manifest)
        b->manifest = json_array();
    r->data = b;
    r->on_abort = client_gone;
    r->on_drain = drained;
    feeds_start(b);
    kick(b);
    return;
bad:
    free(st);
    batch_free(b);
}

static void body_gone(void *arg)
{
    struct start *st = arg;
    batchreq_release();
    http_req_unref(st->r);
    free(st);
}

void batch_handle(struct http_req *r, const char *rest, size_t rlen)
{
    struct target *t = r->w->ctx;
    (void)rest;
    if (!batchreq_door(r, rlen))
        return;
    struct start *st = xcalloc(1, sizeof(*st));
    st->t = t;
    st->r = r;
    if (!node_identify(&t->node, r, &st->who)) {
        free(st);
        return;                  /* answered */
    }
    if (st->who.node && http_query_get(r, "digest", st->digest, sizeof(st->digest)) !=
                            BATCHREQ_DIGEST_LEN) {
        free(st);
        http_reply_error(r, 400, "a routed batch carries its body's digest");
        return;
    }
    if (!batchreq_admit(r)) {
        free(st);
        return;
    }
    http_req_ref(r);
    node_read_body(r, BATCHREQ_BODY_MAX, got_body, body_gone, st);
}
