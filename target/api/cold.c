/*
 * cold: GET and HEAD of objects in buckets with a backend.
 *
 * Warm: the object is on the drives; it is served from there (get.c)
 * without a word to the backend, unless the bucket asks for
 * validate_warm_get, in which case a HEAD to the backend decides: same
 * ETag, serve it; changed, fetch again; gone, drop the local copy and
 * answer 404. A HEAD of an object the drives do not hold asks the backend.
 *
 * Cold: the object is fetched into the store (fetch.c), one fetch per
 * object however many GETs ask. The GET that starts the fetch follows it
 * with a tap and streams the bytes to its client (the requested range of
 * them) as they land in the work file, with sendfile from that file, and
 * with backpressure: when the client's output buffer grows past COLD_HIGH,
 * the transfer is paused until it drains. A read to the object's end
 * keeps its last byte until the copy is committed: once a client has the
 * whole object, it is cached. GETs that arrive meanwhile wait on the fetch
 * and are served from the drives once it is committed. A full or failing
 * drive never cuts the stream: the fetch drops its local copy and the
 * rest goes out from memory (fetch.h, lost), and the GETs that waited
 * read the backend themselves (pass.c). A read inside an archive, or a
 * transform, waits for the whole object and is served from the drives.
 * A fetch that fails mid-stream (the backend's fault) closes the
 * client's connection, so the client sees a truncated body, never a short one that looks whole. A client that
 * leaves does not stop the fetch: the object is still worth caching.
 *
 * Thread: the request's worker (the fetch it starts runs there too).
 */
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "backend.h"
#include "cold.h"
#include "err.h"
#include "fetch.h"
#include "get.h"
#include "hdrparse.h"
#include "http.h"
#include "iopool.h"
#include "localcopy.h"
#include "log.h"
#include "s3own.h"
#include "target.h"
#include "lru.h"
#include "pass.h"
#include "space.h"
#include "targetmetrics.h"
#include "util.h"
#include "writeback.h"
#include "xfget.h"

#define COLD_HIGH (8u << 20)

struct cold {
    struct target *t;
    struct http_req *r;          /* NULL once the client is gone */
    struct backend b;
    int verify;                  /* get_local's flags: the bucket's verify_reads, ... */
    char *mkey;
    size_t klen;
    char *name;
    struct objmeta m;            /* the cached copy's, when there is one */
    /* this GET started the fetch; its bytes go to the client as they land */
    struct fetch *f;
    /* the client is fed from the work file with sendfile, through a dup of
     * its fd that lives as long as libevent needs it */
    struct evbuffer_file_segment *seg;
    int64_t size;                /* backend Content-Length, -1 unknown */
    int range;                   /* client asked for a range: 1, none 0, bad -1 */
    int whole;                   /* served from the drives once fetched (arch.h) */
    uint64_t roff, rlen;
    int streaming;               /* the client's response has begun */
    int transferred;             /* the backend's bytes are all in */
    int held;                    /* the client's last byte waits for the commit */
    uint64_t sent;               /* bytes streamed to the client */
    char held_byte;
};

static void cold_free(struct cold *c)
{
    if (c->seg)
        evbuffer_file_segment_free(c->seg); /* libevent keeps it while it still sends */
    backend_free(&c->b);
    if (c->r) {
        if (c->f) {
            c->r->on_abort = NULL;
            c->r->on_drain = NULL;
            c->r->data = NULL;
        }
        http_req_unref(c->r);
    }
    free(c->name);
    free(c->mkey);
    free(c);
}

/* Headers that describe what the backend said of the object. */
static void backend_headers(struct http_req *r, const struct backend_obj *o, const char *cache)
{
    if (o->etag[0])
        http_resp_header_str(r, "ETag", o->etag);
    if (o->last_modified[0])
        http_resp_header_str(r, "Last-Modified", o->last_modified);
    http_resp_header_str(r, "X-Shoal-Cache", cache);
}

/* ---- the client of the fetch it started ------------------------------------ */

static void cold_client_gone(struct http_req *r)
{
    struct cold *c = r->data;
    /* Keep fetching: the object is still worth caching for the next GET. */
    c->r = NULL;
    r->data = NULL;
    http_req_unref(r);
    fetch_resume(c->f);
}

static void cold_drain(struct http_req *r)
{
    struct cold *c = r->data;
    if (http_resp_pending(r) < COLD_HIGH / 2)
        fetch_resume(c->f);
}

/* kept: a local copy is being made ("miss"), else the bytes only pass
 * through ("pass": no room to keep them). */
static void begin_client(struct cold *c, const struct backend_obj *o, int kept)
{
    struct http_req *r = c->r;
    c->streaming = 1;
    if (!r)
        return;
    backend_headers(r, o, kept ? "miss" : "pass");
    http_resp_header_str(r, "Accept-Ranges", "bytes");
    http_resp_header_str(r, "Content-Type", "application/octet-stream");
    if (c->size < 0) {
        c->range = 0; /* unknown size: the whole object, chunked */
        http_resp_begin(r, 200, -1);
        return;
    }
    c->range = hdr_parse_range(http_req_header(r, "Range"), (uint64_t)c->size, &c->roff,
                               &c->rlen);
    if (c->range < 0) {
        /* nothing to stream to this client; the fetch still fills the cache */
        http_resp_header(r, "Content-Range", "bytes */%lld", (long long)c->size);
        http_reply_error(r, 416, "range not satisfiable for %lld bytes", (long long)c->size);
        return;
    }
    if (c->range == 0) {
        c->roff = 0;
        c->rlen = (uint64_t)c->size;
        http_resp_begin(r, 200, c->size);
    } else {
        http_resp_header(r, "Content-Range", "bytes %llu-%llu/%lld",
                         (unsigned long long)c->roff,
                         (unsigned long long)(c->roff + c->rlen - 1), (long long)c->size);
        http_resp_begin(r, 206, (int64_t)c->rlen);
    }
}

static void tap_begin(void *arg, const struct backend_obj *o, int fd)
{
    struct cold *c = arg;
    c->size = o->size;
    begin_client(c, o, fd >= 0);
    if (c->size > 0 && !c->seg && fd >= 0) {
        int dfd = dup(fd);
        if (dfd >= 0) {
            c->seg = evbuffer_file_segment_new(dfd, 0, c->size,
                                               EVBUF_FS_CLOSE_ON_FREE | EVBUF_FS_DISABLE_MMAP |
                                                   EVBUF_FS_DISABLE_LOCKING);
            if (!c->seg)
                close(dfd);
        }
    }
}

/* Bytes [a, a + n) of the object are in the work file: the part of them
 * in the client's range goes out. */
static void tap_data(void *arg, uint64_t a, const char *p, size_t n)
{
    struct cold *c = arg;
    struct http_req *r = c->r;
    if (!r || c->range < 0 || r->resp_done)
        return;
    uint64_t b = a + n;
    uint64_t lo = a > c->roff ? a : c->roff;
    uint64_t hi = c->range == 0 && c->size < 0 ? b
                  : b < c->roff + c->rlen     ? b
                                              : c->roff + c->rlen;
    /* A read to the object's end keeps its last byte until the copy is
     * committed: once a client has the whole object, it is cached. */
    if (hi > lo && c->size > 0 && hi == (uint64_t)c->size) {
        c->held = 1;
        c->held_byte = p[hi - 1 - a];
        hi--;
    }
    c->sent += hi > lo ? hi - lo : 0;
    if (hi > lo && c->seg && !http_req_tls(r))   /* HTTPS: the bytes in hand, not the file */
        http_resp_segment(r, c->seg, (int64_t)lo, (int64_t)(hi - lo));
    else if (hi > lo)
        http_resp_write(r, p + (lo - a), hi - lo);
    if (http_resp_pending(r) > COLD_HIGH)
        fetch_pause(c->f);
}

static void tap_transferred(void *arg)
{
    struct cold *c = arg;
    c->transferred = 1;
    if (c->r && c->range >= 0 && !c->held) {
        http_resp_end(c->r);
        targetmetrics_get(1, c->sent);
    }
}

/* The local copy is lost: what comes next is sent from memory. The
 * segment goes (libevent keeps what it still sends of it; those bytes were
 * written before the loss). */
static void tap_lost(void *arg)
{
    struct cold *c = arg;
    if (c->seg)
        evbuffer_file_segment_free(c->seg);
    c->seg = NULL;
}

static const struct fetch_tap cold_tap = {tap_begin, tap_data, tap_transferred, tap_lost};

/* The fetch is over: the client that started it gets its last byte (or
 * loses its connection if the fetch failed mid-stream); one that waited is
 * served from the drives. */
static void fetched(void *arg, const struct fetch_result *res)
{
    struct cold *c = arg;
    struct http_req *r = c->r;
    if (!c->f || c->whole) {
        if (res->status == 0)
            get_local(c->t, r, c->mkey, c->klen, res->late ? "hit" : "miss", c->verify);
        else if (res->uncached && c->whole)
            err_reply(r, S3E_SERVICE_UNAVAILABLE, "no room to cache the object for a read "
                                                  "inside it or a transform of it");
        else if (res->uncached)  /* no room to keep it: straight from the backend */
            pass_get(r, &c->b, c->name);
        else
            http_reply_error(r, res->status, "%s", res->msg);
    } else if (c->transferred) {
        /* the bytes are the backend's either way; the commit decides caching */
        if (res->uncached)
            pass_count();
        if (r && c->held) {
            http_resp_write(r, &c->held_byte, 1);
            http_resp_end(r);
            targetmetrics_get(1, c->sent + 1);
        }
    } else if (r) {
        if (c->streaming && c->range >= 0)
            http_resp_abort(r);
        else if (!r->resp_started)
            http_reply_error(r, res->status, "%s", res->msg);
    }
    cold_free(c);
}

/* Start the fetch of c's object, following it, or wait on the one in
 * flight. */
static void go_cold(struct cold *c)
{
    struct http_req *r = c->r;
    char full[512];
    /* a read inside waits for the whole shard, a transform for the whole object */
    c->whole = arch_asked(r) || xfget_asked(r);
    if (r->method == HTTP_M_GET &&
        space_admit(c->t, store_pick(&c->t->store, c->mkey, c->klen), 0, full, sizeof(full))) {
        lru_kick(c->t);          /* room for the next one, if anything can go */
        if (c->whole)
            err_reply(r, S3E_SERVICE_UNAVAILABLE, "no room to cache the object for a read "
                                                  "inside it or a transform of it: %s", full);
        else
            pass_get(r, &c->b, c->name);
        cold_free(c);
        return;
    }
    struct fetch_req fr = {c->t, target_cli(r), r->w->q, &c->b, c->name, c->mkey, c->klen};
    c->size = -1;
    c->f = fetch_get(&fr, c->whole ? NULL : &cold_tap, c, fetched, c);
    if (c->f && !c->whole) {
        r->data = c;
        r->on_abort = cold_client_gone;
        r->on_drain = cold_drain;
    }
}

/* ---- warm, and HEAD ------------------------------------------------------------- */

struct drop {
    struct target *t;
    char *mkey;
    size_t klen;
};

static void drop_work(void *arg)
{
    struct drop *d = arg;
    if (!store_delete(&d->t->store, store_pick(&d->t->store, d->mkey, d->klen), d->mkey,
                      d->klen))
        localcopy_drop(&d->t->store, d->mkey, d->klen); /* and its copies on other drives */
    free(d->mkey);
    free(d);
}

/* HEAD of an object the drives do not hold: the backend answers. */
static void head_remote_done(void *arg, const struct backend_obj *o)
{
    struct cold *c = arg;
    struct http_req *r = c->r;
    if (o->status == 200) {
        backend_headers(r, o, "none");
        http_resp_header_str(r, "X-Shoal-Cached", "false");
        http_resp_begin(r, 200, o->size >= 0 ? o->size : 0);
        http_resp_end(r);
    } else {
        char msg[300];
        int st = backend_status(&c->b, o, msg, sizeof(msg));
        http_reply_error(r, st, "%s", msg);
    }
    cold_free(c);
}

/* validate_warm_get: the backend's HEAD decides what a warm GET serves. */
static void validate_done(void *arg, const struct backend_obj *o)
{
    struct cold *c = arg;
    if (o->status == 404) {
        struct drop *d = xcalloc(1, sizeof(*d));
        d->t = c->t;
        d->mkey = xstrndup(c->mkey, c->klen);
        d->klen = c->klen;
        iopool_submit(c->t->io, NULL, drop_work, NULL, d);
        http_reply_error(c->r, 404, "object is gone from backend %s", c->b.label);
        cold_free(c);
        return;
    }
    /* A fetch may have committed a newer copy while the HEAD was out. */
    struct objmeta now;
    if (store_get(&c->t->store, store_pick(&c->t->store, c->mkey, c->klen), c->mkey, c->klen,
                  &now) == 0)
        c->m = now;
    if (o->status == 200 && strcmp(o->etag, c->m.backend_etag) && c->r->method == HTTP_M_GET) {
        go_cold(c); /* changed in the backend: fetch the new version */
        return;
    }
    if (o->status != 200)
        log_warn("validating %s against %s failed (%d %s); serving the cached copy", c->name,
                 c->b.label, o->status, o->err);
    get_local(c->t, c->r, c->mkey, c->klen, "hit", c->verify);
    cold_free(c);
}

void cold_get(struct target *t, struct http_req *r, const struct bmd_bucket *bk, char *mkey,
              size_t klen, const char *name)
{
    cold_get_flags(t, r, bk, mkey, klen, name, 0);
}

void cold_get_flags(struct target *t, struct http_req *r, const struct bmd_bucket *bk,
                    char *mkey, size_t klen, const char *name, int flags)
{
    struct cold *c = xcalloc(1, sizeof(*c));
    c->t = t;
    c->r = r;
    backend_resolve(t, bk, &c->b);
    c->verify = get_verifies(bk) | flags;
    c->mkey = mkey;
    c->klen = klen;
    c->name = xstrdup(name);
    http_req_ref(r);
    int have_local = store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen,
                               &c->m) == 0;
    if (!have_local && c->b.write_back && writeback_owed(&t->store, mkey, klen)) {
        /* deleted here, the backend not yet told: it must not come back */
        http_reply_error(r, 404, "object not found");
        cold_free(c);
        return;
    }
    if (have_local && (!c->b.validate_warm_get || c->b.write_back)) {
        get_local(t, r, mkey, klen, "hit", c->verify);
        cold_free(c);
        return;
    }
    if (have_local) {
        backend_head(target_cli(r), &c->b, name, validate_done, c);
        return;
    }
    char pn[8];
    if (http_query_get(r, S3OWN_WHO, pn, sizeof(pn)) != -1) {
        err_reply(r, S3E_ACCESS_DENIED, "Access Denied");   /* no ACL comes from a backend */
        cold_free(c);
        return;
    }
    if (target_is_s3(r) && http_query_get(r, "partNumber", pn, sizeof(pn)) != -1) {
        err_reply(r, S3E_NOT_IMPLEMENTED, "partNumber on an object not yet fetched from the "
                                          "backend: not implemented");
        cold_free(c);
        return;
    }
    if (r->method == HTTP_M_HEAD) {
        backend_head(target_cli(r), &c->b, name, head_remote_done, c);
        return;
    }
    go_cold(c);
}
