/*
 * jobcopy: the copy and download kinds of a batch job, walking their
 * selection with jobsel.h.
 *
 * copy: each target takes the names of the source bucket it owns. An
 * object it holds (or has just fetched, when the source has a backend) is
 * sent from its data file, spliced into the socket, as a PUT signed with
 * the cluster's signature to the target that owns the new name (perhaps
 * itself): that target stores it as any PUT, writing through when the
 * destination bucket has a backend. The bytes never pass a proxy.
 *
 * download: each target takes the URLs whose object names it owns in the
 * bucket and fetches each through the cold-GET path (target/backend/fetch.c), the
 * URL standing for the backend, into the store. When the bucket has an S3
 * backend the object is then sent to the target itself as a PUT, which
 * writes it through.
 *
 * Thread: the job's loop; the data file is opened on the I/O pool.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cmap.h"
#include "fetch.h"
#include "nodeclient.h"
#include "http.h"
#include "iopool.h"
#include "jobcopy.h"
#include "jobsel.h"
#include "log.h"
#include "mirror.h"
#include "node.h"
#include "nodesig.h"
#include "bmd.h"
#include "objname.h"
#include "place.h"
#include "pump.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "xfer.h"

#define SEND_IDLE_S 30           /* a destination that takes nothing for this long fails */
#define SEND_TIMEOUT_MS (6L * 3600 * 1000)

struct copy_opts {
    struct jobsel_dest d;        /* copy: the destination */
    int to_backed;               /* download: the bucket writes through */
};

static struct copy_opts *opts_of(const struct job *j)
{
    return jobsel_of(j)->opts;
}

struct send {
    struct job *j;
    char *name;                  /* in the source bucket (the job's) */
    char *dname;                 /* in the destination */
    char *mkey;                  /* the source's store key */
    size_t klen;
    const char *to_provider, *to;
    struct objmeta m;            /* the source's, as opened */
    int fd;                      /* its data file, -1 before, or -errno from its open */
    struct nodeclient_xfer *x;
    struct pump *pump;
    char answer[200];            /* the start of an error answer's body */
    size_t alen;
    enum job_ctr counter;        /* counted when the PUT succeeds */
};

static void send_over(struct send *s)
{
    struct job *j = s->j;
    pump_free(s->pump);
    if (s->fd >= 0)
        close(s->fd);
    free(s->name);
    free(s->dname);
    free(s->mkey);
    free(s);
    jobsel_over(j);
}

static void send_failed(struct send *s, const char *why)
{
    job_note_error(s->j, s->name, why);
    send_over(s);
}

/* ---- the PUT to the destination's owner ------------------------------------------------ */

static ssize_t send_read(void *arg, char *buf, size_t n)
{
    struct send *s = arg;
    (void)buf;
    (void)n;
    return s->m.size ? NODECLIENT_READ_SOCKET : 0;
}

static void send_pumped(void *arg, const char *err, enum pump_side side)
{
    struct send *s = arg;
    pump_free(s->pump);
    s->pump = NULL;
    if (err)
        log_warn("copy of %s to %s/%s: %s (%s)", s->name, s->to, s->dname, err,
                 side == PUMP_IN ? "reading its file" : "sending");
    nodeclient_upload_moved(s->x, err == NULL);
}

static void send_socket(void *arg, struct nodeclient_xfer *x, int fd)
{
    struct send *s = arg;
    s->pump = pump_start_file(s->j->base, s->fd, 0, fd, s->m.size, SEND_IDLE_S, send_pumped, s);
    if (!s->pump)
        nodeclient_upload_moved(x, 0);
}

static int send_data(void *arg, struct nodeclient_xfer *x, const char *p, size_t n)
{
    struct send *s = arg;
    (void)x;
    size_t room = sizeof(s->answer) - 1 - s->alen;
    size_t k = n < room ? n : room;
    memcpy(s->answer + s->alen, p, k);
    s->alen += k;
    return 0;
}

static void send_done(void *arg, struct nodeclient_xfer *x, int status, const char *err)
{
    struct send *s = arg;
    (void)x;
    char why[300];
    if (status == 200 || status == 201) {
        job_add(s->j, s->counter, 1, s->m.size);
        send_over(s);
        return;
    }
    s->answer[s->alen] = '\0';
    if (status)
        snprintf(why, sizeof(why), "%s/%s answered %d: %.200s", s->to, s->dname, status,
                 s->answer);
    else
        snprintf(why, sizeof(why), "%s/%s: %s", s->to, s->dname, err ? err : "failed");
    send_failed(s, why);
}

static int send_file(void *arg, int *fd, uint64_t *off)
{
    struct send *s = arg;
    *fd = s->fd;
    *off = 0;
    return 0;
}

static const struct nodeclient_ops send_ops = {
    .on_data = send_data,
    .on_read = send_read,
    .on_done = send_done,
    .on_socket = send_socket,
    .on_file = send_file,
};

/* On the I/O pool: the source's metadata and data file, of one version. */
static void open_work(void *arg)
{
    struct send *s = arg;
    s->fd = jobsel_open(&s->j->t->store, s->mkey, s->klen, &s->m);
}

static void opened(void *arg)
{
    struct send *s = arg;
    struct job *j = s->j;
    char err[128];
    if (s->fd < 0) {
        int rc = s->fd;
        s->fd = -1;
        send_failed(s, rc == -ENOENT ? "gone before it could be sent" : strerror(-rc));
        return;
    }
    char *url = jobsel_put_url(j, s->to_provider, s->to, s->dname, err, sizeof(err));
    if (!url) {
        send_failed(s, err);
        return;
    }
    char ctype[OBJMETA_CTYPE_MAX + 32];
    const char *hdrs[1] = {ctype};
    snprintf(ctype, sizeof(ctype), "Content-Type: %s", s->m.ctype);
    s->x = nodeclient_start(j->hc, "PUT", url, hdrs, s->m.ctype[0] ? 1 : 0, (int64_t)s->m.size,
                            SEND_TIMEOUT_MS, &send_ops, s);
    free(url);
}

/* Send the held object (source key mkey, taken) as dname of the
 * destination; *counter counts it once it is there. */
static void send_start(struct job *j, const char *name, char *mkey, size_t klen,
                       const char *dname, const char *to_provider, const char *to,
                       enum job_ctr counter)
{
    struct send *s = xcalloc(1, sizeof(*s));
    s->j = j;
    s->name = xstrdup(name);
    s->dname = xstrdup(dname);
    s->mkey = mkey;
    s->klen = klen;
    s->to_provider = to_provider;
    s->to = to;
    s->fd = -1;
    s->counter = counter;
    j->inflight++;
    iopool_submit(j->t->io, j->q, open_work, opened, s);
}

/* ---- copy -------------------------------------------------------------------------------- */

struct cfetch {
    struct job *j;
    char *name, *dname, *mkey;
    size_t klen;
    uint64_t size;               /* a download's, while its copies are made */
    int download;                /* a download: counted here unless it writes through */
};

static void cfetch_free(struct cfetch *c)
{
    free(c->name);
    free(c->dname);
    free(c->mkey);
    free(c);
}

/* A download's copies or slices are made (mirror.h). */
static void downloaded_spread(void *arg, int failed)
{
    struct cfetch *c = arg;
    struct job *j = c->j;
    if (failed)
        job_note_error(j, c->name, "not every copy holder took it (the next walk tries again)");
    else
        job_add(j, JC_DOWNLOADED, 1, c->size);
    cfetch_free(c);
    jobsel_over(j);
}

/* The source is held now (or not): send it on. */
static void cfetched(void *arg, const struct fetch_result *res)
{
    struct cfetch *c = arg;
    struct job *j = c->j;
    const struct copy_opts *o = opts_of(j);
    if (res->status) {
        job_note_error(j, c->name, res->msg[0] ? res->msg : "fetch failed");
        job_add(j, JC_DONE, 1, 0);
    } else if (c->download && !o->to_backed) {
        struct objmeta m;
        int got = store_get(&j->t->store, store_pick(&j->t->store, c->mkey, c->klen), c->mkey,
                            c->klen, &m) == 0;
        if (got && place_spreads(c->mkey, c->klen)) {   /* its copies or slices first */
            struct xfer_loop lp = {j->base, j->q, j->hc};
            c->size = m.size;
            mirror_spread(j->t, &lp, c->mkey, c->klen, m.size, 0, downloaded_spread, c);
            return;
        }
        job_add(j, JC_DOWNLOADED, 1, got ? m.size : 0);
        job_add(j, JC_DONE, 1, 0);
    } else {
        send_start(j, c->name, c->mkey, c->klen, c->dname,
                   c->download ? j->provider : o->d.provider, c->download ? j->bucket : o->d.bucket,
                   c->download ? JC_DOWNLOADED : JC_COPIED);
        c->mkey = NULL;
    }
    cfetch_free(c);
    j->inflight--;
    job_pump(j);
}

static void cfetch_start(struct job *j, const struct backend *b, const char *bname,
                         const char *name, size_t n, const char *dname, int download)
{
    struct cfetch *c = xcalloc(1, sizeof(*c));
    c->j = j;
    c->name = xstrndup(name, n);
    c->dname = xstrdup(dname);
    c->mkey = store_mkey(j->provider, j->bucket, name, n, &c->klen);
    c->download = download;
    j->inflight++;
    struct fetch_req fr = {j->t, j->cli, j->q, b, bname, c->mkey, c->klen};
    fetch_get(&fr, NULL, NULL, cfetched, c);
}

static void copy_one(struct job *j, const char *name, size_t n, const char *url, char *mkey,
                     size_t klen, int held, const struct objmeta *m)
{
    (void)url;
    const struct copy_opts *o = opts_of(j);
    char dname[OBJNAME_MAX + 1], err[256];
    char *nm = xstrndup(name, n);
    int dn = snprintf(dname, sizeof(dname), "%s%s", o->d.prepend, nm);
    int sent = 0;
    if (dn >= (int)sizeof(dname) || objname_valid(dname, (size_t)dn, err, sizeof(err))) {
        job_note_error(j, nm, dn >= (int)sizeof(dname) ? "the destination name is too long"
                                                        : err);
    } else if (!held && jobsel_of(j)->b.kind == BK_NONE) {
        job_note_error(j, nm, "no such object");
    } else if (o->d.dry_run) {   /* what would be copied (the size of what is held) */
        job_add(j, JC_COPIED, 1, held ? m->size : 0);
    } else if (held) {
        send_start(j, nm, mkey, klen, dname, o->d.provider, o->d.bucket, JC_COPIED);
        mkey = NULL;
        sent = 1;
    } else {
        cfetch_start(j, &jobsel_of(j)->b, nm, name, n, dname, 0);
        sent = 1;
    }
    if (!sent)                   /* over here: refused, or only counted */
        job_add(j, JC_DONE, 1, 0);
    free(mkey);
    free(nm);
}

static int copy_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    if (jobsel_init(j, spec, copy_one, 0, err, errlen))
        return -1;
    struct copy_opts *o = xcalloc(1, sizeof(*o));
    jobsel_of(j)->opts = o;
    return jobsel_dest_init(j, spec, &o->d, err, errlen);
}

static void copy_describe(const struct job *j, json_t *p)
{
    const struct copy_opts *o = jobsel_of(j) ? opts_of(j) : NULL;
    if (!o)
        return;                  /* remembered from its record */
    json_object_set_new(p, "to", json_string(o->d.bucket));
    if (o->d.dry_run)
        json_object_set_new(p, "dry_run", json_true());
}

const struct job_kind jobcopy_copy = {
    .name = "copy",
    .init = copy_init,
    .pump = jobsel_pump,
    .describe = copy_describe,
    .free = jobsel_free,
};

/* ---- download ------------------------------------------------------------------------------ */

static void download_one(struct job *j, const char *url, const char *name, size_t n,
                         char *mkey, int held)
{
    free(mkey);                  /* cfetch_start makes its own */
    if (held) {                  /* there already (counted present): a retried job is cheap */
        job_add(j, JC_DONE, 1, 0);
        return;
    }
    struct backend ub = {0};
    ub.kind = BK_HTTP;
    ub.base_url = (char *)url;   /* the URL whole: fetch asks for the name "" */
    ub.label = (char *)url;
    ub.retries = j->t->conf.backend_retries;
    ub.timeout_s = j->t->conf.backend_timeout_s;
    char *nm = xstrndup(name, n);
    cfetch_start(j, &ub, "", name, n, nm, 1);
    free(nm);
}

static void download_each(struct job *j, const char *name, size_t n, const char *url,
                          char *mkey, size_t klen, int held, const struct objmeta *m)
{
    (void)klen;
    (void)m;
    download_one(j, url, name, n, mkey, held);
}

static int download_init(struct job *j, json_t *spec, char *err, size_t errlen)
{
    if (jobsel_init(j, spec, download_each, 1, err, errlen))
        return -1;
    struct copy_opts *o = xcalloc(1, sizeof(*o));
    jobsel_of(j)->opts = o;
    o->to_backed = backend_writable(&jobsel_of(j)->b);
    if (jobsel_of(j)->b.kind == BK_HTTP) {
        snprintf(err, errlen, "bucket %s reads a read-only HTTP origin", j->bucket);
        return -1;
    }
    return 0;
}

const struct job_kind jobcopy_download = {
    .name = "download",
    .init = download_init,
    .pump = jobsel_pump,
    .free = jobsel_free,
};
