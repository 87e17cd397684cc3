/*
 * jobxform: a transform job (see jobxform.h). One object is two
 * transfers joined by a buffer: the transform's answer (xfrun), paused
 * while the buffer holds XF_HIGH bytes, and the PUT to the destination's
 * owner (nodeclient), whose upload takes from the buffer and waits when
 * it is empty. The PUT starts once the transform has answered 2xx, with
 * the answer's length when it gives one, else chunked; a large answer
 * with a length is spliced from the transform's socket into the PUT's
 * (over plain HTTP) instead of passing the buffer; a transform that
 * fails after that fails the upload, so the PUT never ends and nothing is
 * committed.
 *
 * Thread: the job's loop.
 */
#include "jobxform.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "bmd.h"
#include "fetch.h"
#include "iopool.h"
#include "jobsel.h"
#include "nodeclient.h"
#include "objname.h"
#include "pump.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xform.h"
#include "xfrun.h"

#define XF_HIGH (4u << 20)       /* buffered answer that pauses the transform */
#define PUT_TIMEOUT_MS (6L * 3600 * 1000)
#define PUT_IDLE_S 30            /* a splice without progress for this long fails */

struct xf_opts {
    struct jobsel_dest d;
    char transform[XFORM_NAME_MAX + 1];
    json_t *ext;                 /* {".from": ".to"}, or NULL */
    char args[XFORM_QUERY_MAX + 1];   /* for the transform, URL-encoded */
};

static struct xf_opts *opts_of(const struct job *j)
{
    return jobsel_of(j)->opts;
}

static void opts_free(void *p)
{
    struct xf_opts *o = p;
    json_decref(o->ext);
    free(o);
}

struct one {
    struct job *j;
    char *name, *dname, *mkey;
    size_t klen;
    struct objmeta m;
    int fd;                      /* the data file, or -errno from its open */
    struct xfrun *x;             /* the transform's answer, while it comes */
    struct nodeclient_body *b;   /* or its socket, taken, */
    struct pump *pump;           /* spliced into the PUT's */
    char *url;                   /* the PUT's, signed */
    struct nodeclient_xfer *put; /* the PUT, while it goes */
    struct evbuffer *buf;        /* answered, not yet sent */
    int answered;                /* the transform's answer is whole */
    int put_waits;               /* the upload waits for bytes */
    int put_status;
    uint64_t out;                /* bytes of the answer */
    char why[400];               /* the failure, "" none */
    char answer[200];            /* the start of the PUT's error answer */
    size_t alen;
};

static void one_over(struct one *o)
{
    struct job *j = o->j;
    if (!o->why[0] && (o->put_status == 200 || o->put_status == 201)) {
        job_add(j, JC_TRANSFORMED, 1, o->out);
    } else {
        if (!o->why[0]) {
            o->answer[o->alen] = '\0';
            snprintf(o->why, sizeof(o->why), "%s/%s answered %d: %.200s", opts_of(j)->d.bucket,
                     o->dname, o->put_status, o->answer);
        }
        job_note_error(j, o->name, o->why);
    }
    if (o->fd >= 0)
        close(o->fd);
    pump_free(o->pump);
    if (o->b)
        nodeclient_body_end(o->b, 0);
    free(o->url);
    evbuffer_free(o->buf);
    free(o->name);
    free(o->dname);
    free(o->mkey);
    free(o);
    jobsel_over(j);
}

/* ---- the PUT of the answer ----------------------------------------------------------- */

static ssize_t put_read(void *arg, char *p, size_t n)
{
    struct one *o = arg;
    if (o->why[0])
        return -1;               /* the transform failed: never a whole PUT */
    int got = evbuffer_remove(o->buf, p, n);
    if (o->x && evbuffer_get_length(o->buf) < XF_HIGH / 2)
        xfrun_resume(o->x);
    if (got > 0)
        return got;
    if (o->b)
        return NODECLIENT_READ_SOCKET;   /* the rest from the transform's socket */
    if (o->answered)
        return 0;
    o->put_waits = 1;
    return NODECLIENT_READ_PAUSE;
}

static int put_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct one *o = arg;
    (void)x;
    size_t k = n < sizeof(o->answer) - 1 - o->alen ? n : sizeof(o->answer) - 1 - o->alen;
    memcpy(o->answer + o->alen, p, k);
    o->alen += k;
    return 0;
}

/* The transform's answer spliced into the PUT. */
static void put_pumped(void *arg, const char *err, enum pump_side side)
{
    struct one *o = arg;
    pump_free(o->pump);
    o->pump = NULL;
    const struct xf_opts *op = opts_of(o->j);
    if (err && !o->why[0] && side == PUMP_IN)
        snprintf(o->why, sizeof(o->why), "transform '%s' failed in the middle of its answer: %s",
                 op->transform, err);
    else if (err && !o->why[0])
        snprintf(o->why, sizeof(o->why), "%s/%s: %s", op->d.bucket, o->dname, err);
    nodeclient_body_end(o->b, err == NULL);
    o->b = NULL;
    nodeclient_upload_moved(o->put, err == NULL);
}

static void put_socket(void *arg, struct nodeclient_xfer *x, int fd)
{
    struct one *o = arg;
    (void)x;
    o->pump = pump_start(o->j->base, o->b->fd, fd, o->b->left, PUT_IDLE_S, put_pumped, o);
    if (!o->pump)
        put_pumped(o, strerror(errno), PUMP_OUT);
}

static void put_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct one *o = arg;
    (void)x;
    o->put = NULL;
    o->put_status = status;
    if (!status && !o->why[0])
        snprintf(o->why, sizeof(o->why), "%s/%s: %s", opts_of(o->j)->d.bucket, o->dname,
                 err ? err : "failed");
    if (o->x) {                  /* the PUT failed first: stop the transform */
        xfrun_cancel(o->x);
        o->x = NULL;
    }
    one_over(o);
}

static const struct nodeclient_ops put_ops = {
    .on_data = put_data,
    .on_read = put_read,
    .on_done = put_done,
    .on_socket = put_socket,
};

static void wake_put(struct one *o)
{
    if (o->put && o->put_waits) {
        o->put_waits = 0;
        nodeclient_resume_upload(o->put);
    }
}

/* ---- the transform's answer ---------------------------------------------------------------- */

static int xf_head(void *arg, const char *ctype, int64_t len)
{
    struct one *o = arg;
    struct job *j = o->j;
    char ct[160];
    const char *hdrs[1] = {ct};
    snprintf(ct, sizeof(ct), "Content-Type: %.120s", ctype && *ctype ? ctype
                                                                     : "application/octet-stream");
    o->put = nodeclient_start(j->hc, "PUT", o->url, hdrs, 1,
                              len >= 0 ? len : NODECLIENT_UP_CHUNKED, PUT_TIMEOUT_MS, &put_ops, o);
    return 0;
}

/* The answer's socket: what came with the head first, then spliced. */
static void xf_body(void *arg, struct nodeclient_body *b)
{
    struct one *o = arg;
    o->x = NULL;                 /* the run is over */
    evbuffer_add(o->buf, b->pre, b->pre_len);
    o->out = b->pre_len + b->left;
    if (b->left) {
        o->b = b;
    } else {                     /* all of it came with the head */
        nodeclient_body_end(b, 1);
        o->answered = 1;
    }
    wake_put(o);
}

static int xf_data(void *arg, const char *p, size_t n)
{
    struct one *o = arg;
    evbuffer_add(o->buf, p, n);
    o->out += n;
    if (evbuffer_get_length(o->buf) > XF_HIGH)
        xfrun_pause(o->x);
    wake_put(o);
    return 0;
}

static void xf_done(void *arg, int status, const char *msg)
{
    struct one *o = arg;
    o->x = NULL;
    if (status && !o->why[0])
        snprintf(o->why, sizeof(o->why), "%s", msg);
    o->answered = !status;
    if (o->put)
        wake_put(o);             /* its end, or (failed) its failure */
    else
        one_over(o);             /* no PUT to wait for: it never began */
}

static const struct xfrun_ops xf_ops = {xf_head, xf_data, xf_done, xf_body};

/* ---- the source ------------------------------------------------------------------------- */

static void open_work(void *arg)
{
    struct one *o = arg;
    o->fd = jobsel_open(&o->j->t->store, o->mkey, o->klen, &o->m);
}

static void opened(void *arg)
{
    struct one *o = arg;
    struct job *j = o->j;
    if (o->fd < 0) {
        snprintf(o->why, sizeof(o->why), "%s",
                 o->fd == -ENOENT ? "gone before it could be transformed" : strerror(-o->fd));
        o->fd = -1;
        one_over(o);
        return;
    }
    const struct xf_opts *op = opts_of(j);
    o->url = jobsel_put_url(j, op->d.provider, op->d.bucket, o->dname, o->why, sizeof(o->why));
    if (!o->url) {
        one_over(o);
        return;
    }
    /* the answer's socket is spliced into the PUT's, which over HTTPS it cannot be */
    struct xfrun_src src = {op->transform, j->bucket, o->name, op->args, o->fd, 0, o->m.size,
                            NULL, strncmp(o->url, "https:", 6) != 0};
    o->fd = -1;                  /* xfrun's now */
    int status;
    o->x = xfrun_start(j->hc, j->base, (long)j->t->conf.transform_timeout_s * 1000, &src,
                       &xf_ops, o, &status, o->why, sizeof(o->why));
    if (!o->x)
        one_over(o);
}

static void fetched(void *arg, const struct fetch_result *res)
{
    struct one *o = arg;
    if (res->status) {
        snprintf(o->why, sizeof(o->why), "%s", res->msg[0] ? res->msg : "fetch failed");
        one_over(o);
        return;
    }
    iopool_submit(o->j->t->io, o->j->q, open_work, opened, o);
}

/* name renamed: prepend, and its last extension by ext. */
static int rename_to(const struct xf_opts *op, const char *name, char *out, size_t len)
{
    const char *slash = strrchr(name, '/');
    const char *dot = strrchr(slash ? slash : name, '.');
    const char *to = dot ? json_string_value(json_object_get(op->ext, dot)) : NULL;
    int n = to ? snprintf(out, len, "%s%.*s%s", op->d.prepend, (int)(dot - name), name, to)
               : snprintf(out, len, "%s%s", op->d.prepend, name);
    return n >= (int)len ? -1 : n;
}

static void xform_one(struct job *j, const char *name, size_t n, const char *url, char *mkey,
                      size_t klen, int held, const struct objmeta *m)
{
    (void)url;
    const struct xf_opts *op = opts_of(j);
    char dname[OBJNAME_MAX + 1], err[256];
    char *nm = xstrndup(name, n);
    int dn = rename_to(op, nm, dname, sizeof(dname));
    int self = !strcmp(op->d.bucket, j->bucket) && !strcmp(op->d.provider, j->provider) &&
               dn >= 0 && !strcmp(dname, nm);
    const char *refused = dn < 0 ? "the destination name is too long"
                          : objname_valid(dname, (size_t)dn, err, sizeof(err)) ? err
                          : self ? "its new name is its own: it would be written over"
                          : !held && jobsel_of(j)->b.kind == BK_NONE ? "no such object"
                                                                       : NULL;
    if (refused || op->d.dry_run) {
        if (refused)
            job_note_error(j, nm, refused);
        else                     /* what would be transformed (the size of what is held) */
            job_add(j, JC_TRANSFORMED, 1, held ? m->size : 0);
        job_add(j, JC_DONE, 1, 0);
        free(mkey);
        free(nm);
        return;
    }
    struct one *o = xcalloc(1, sizeof(*o));
    o->j = j;
    o->name = nm;
    o->dname = xstrdup(dname);
    o->mkey = mkey;
    o->klen = klen;
    o->fd = -1;
    o->buf = evbuffer_new();
    j->inflight++;
    if (held) {
        iopool_submit(j->t->io, j->q, open_work, opened, o);
    } else {                     /* from the backend first */
        struct fetch_req fr = {j->t, j->cli, j->q, &jobsel_of(j)->b, nm, mkey, klen};
        fetch_get(&fr, NULL, NULL, fetched, o);
    }
}

static int xform_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    if (jobsel_init(j, spec, xform_one, 0, err, errlen))
        return -1;
    struct xf_opts *o = xcalloc(1, sizeof(*o));
    jobsel_of(j)->opts = o;
    jobsel_of(j)->opts_free = opts_free;
    const char *xf = json_string_value(json_object_get(spec, "transform"));
    const char *args = json_string_value(json_object_get(spec, "args"));
    json_t *ext = json_object_get(spec, "ext");
    o->ext = json_is_object(ext) ? json_incref(ext) : NULL;
    snprintf(o->args, sizeof(o->args), "%s", args ? args : "");
    snprintf(o->transform, sizeof(o->transform), "%s", xf ? xf : "");
    if (!xf || !xform_valid_name(xf, strlen(xf))) {
        snprintf(err, errlen, "a transform job names its transform");
        return -1;
    }
    return jobsel_dest_init(j, spec, &o->d, err, errlen);
}

static void xform_describe(const struct job *j, json_t *p)
{
    const struct xf_opts *o = jobsel_of(j) ? opts_of(j) : NULL;
    if (!o)
        return;                  /* remembered from its record */
    json_object_set_new(p, "to", json_string(o->d.bucket));
    json_object_set_new(p, "transform", json_string(o->transform));
    if (o->d.dry_run)
        json_object_set_new(p, "dry_run", json_true());
}

const struct job_kind jobxform_transform = {
    .name = "transform",
    .init = xform_init,
    .pump = jobsel_pump,
    .describe = xform_describe,
    .free = jobsel_free,
};
