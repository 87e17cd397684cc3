/*
 * jobsel: a job's walk over its selection (see jobsel.h).
 *
 * A job walks its selection by index (a template's names are made, never
 * held), keeps the names this target owns under the current cluster map,
 * and works on job_workers (config) of them at a time; it yields the loop
 * after JOB_BATCH names so that a long run of names owned elsewhere never
 * holds client requests up. A listed selection comes a page at a time:
 * the backend's ListObjectsV2 (every target walks it, keeping its own
 * names) or, for a bucket with no backend, the names the target's own
 * drives hold (store_list on the I/O pool).
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bmd.h"
#include "cmap.h"
#include "http.h"
#include "iopool.h"
#include "jobsel.h"
#include "listpage.h"
#include "node.h"
#include "objname.h"
#include "store.h"
#include "target.h"
#include "nodesig.h"
#include "util.h"

#define JOB_BATCH 1000           /* names looked at per loop pass */
#define JOB_PAGE 1000            /* names per listing page */

/* ---- made from the spec ----------------------------------------------------------- */

/* The selection of spec into s: 0, or -1 with err set. */
static int select_of(struct job *j, struct jobsel *s, json_t *spec, char *err, size_t errlen)
{
    json_t *names = json_object_get(spec, s->urls ? "urls" : "names");
    const char *tmpl = json_string_value(json_object_get(spec, "template"));
    const char *prefix = json_string_value(json_object_get(spec, "prefix"));
    if (tmpl) {
        if (tmpl_parse(&s->tm, tmpl, err, errlen))
            return -1;
        s->has_tmpl = 1;
        j->total = s->tm.count;
        return 0;
    }
    if (json_is_array(names)) {
        s->names = json_incref(names);
        j->total = json_array_size(names);
        json_t *dn = json_object_get(spec, "names");
        if (s->urls && json_is_array(dn))
            s->dnames = json_incref(dn);
        return 0;
    }
    if (s->urls) {
        snprintf(err, errlen, "a download names its \"urls\" or a URL \"template\"");
        return -1;
    }
    if (s->b.kind != BK_NONE && !backend_listable(&s->b)) {
        snprintf(err, errlen, "this bucket's backend cannot be listed: select its objects by "
                              "names or a template");
        return -1;
    }
    /* a prefix, or the whole bucket: the backend's listing, or the drives' */
    s->listed = backend_listable(&s->b) ? JL_BACKEND : JL_LOCAL;
    s->prefix = xstrdup(prefix ? prefix : "");
    s->token = xstrdup("");
    j->unsized = 1;
    return 0;
}

int jobsel_init(struct job *j, json_t *spec, jobsel_one_fn one, int urls, char *err,
                size_t errlen)
{
    struct jobsel *s = xcalloc(1, sizeof(*s));
    j->kd = s;                   /* jobsel_free, whatever comes */
    s->one = one;
    s->urls = urls;
    s->want_map = json_integer_value(json_object_get(spec, "map_version"));
    json_int_t cc = json_integer_value(json_object_get(spec, "concurrency"));
    s->workers = cc >= 1 && cc <= JOBSEL_CONCURRENCY_MAX ? (int)cc : j->t->conf.job_workers;
    if (backend_of(j->t, j->provider, j->bucket, &s->b)) {   /* gone since job_new looked */
        snprintf(err, errlen, "bucket %s/%s is not known here", j->provider, j->bucket);
        return -1;
    }
    return select_of(j, s, spec, err, errlen);
}

static void lnames_free(struct jobsel *s)
{
    for (int i = 0; i < s->ln; i++)
        free(s->lnames[i]);
    free(s->lnames);
    s->lnames = NULL;
    s->ln = 0;
}

void jobsel_free(struct job *j)
{
    struct jobsel *s = j->kd;
    if (!s)
        return;
    if (s->opts)
        (s->opts_free ? s->opts_free : free)(s->opts);
    cmap_unref(s->map);
    backend_free(&s->b);
    json_decref(s->names);
    json_decref(s->dnames);
    if (s->has_tmpl)
        tmpl_free(&s->tm);
    s3list_free(&s->page);
    lnames_free(s);
    free(s->prefix);
    free(s->token);
    free(s);
    j->kd = NULL;
}

/* ---- the selection -------------------------------------------------------------- */

/* The listing's end, and with it the selection's size (read by other
 * workers, job_set_total). */
static void set_list_end(struct job *j, int end)
{
    struct jobsel *s = j->kd;
    s->list_end = end;
    job_set_total(j, j->total, !end);
}

static void page_failed(struct job *j, const char *err)
{
    struct jobsel *s = j->kd;
    job_note_error(j, s->prefix[0] ? s->prefix : "(the listing)", err);
    set_list_end(j, 1);
}

static void page_in(void *arg, const struct backend_obj *o, const char *body, size_t len)
{
    struct job *j = arg;
    struct jobsel *s = j->kd;
    char err[300];
    s3list_free(&s->page);
    memset(&s->page, 0, sizeof(s->page));
    s->page_i = 0;
    s->listing = 0;
    j->inflight--;
    if (o->status != 200) {
        backend_status(&s->b, o, err, sizeof(err));
        page_failed(j, err);
    } else if (backend_list_parse(&s->b, body, len, &s->page, err, sizeof(err))) {
        page_failed(j, err);
    } else {
        const char *next = s->page.truncated && s->page.next_token ? s->page.next_token : "";
        free(s->token);
        s->token = xstrdup(next);
        set_list_end(j, !next[0]);
    }
    jobsel_pump(j);
}

/* A page of the names this target's drives hold (after the token). */
struct listpage_req {
    struct job *j;
    struct gbuf out;
    int rc;
};

static void local_work(void *arg)
{
    struct listpage_req *lr = arg;
    struct job *j = lr->j;
    struct jobsel *s = j->kd;
    lr->rc = store_list(&j->t->store, j->provider, j->bucket, s->prefix, s->token, "", "",
                        JOB_PAGE, 0, &lr->out);
}

static void local_in(void *arg)
{
    struct listpage_req *lr = arg;
    struct job *j = lr->j;
    struct jobsel *s = j->kd;
    struct listpage pg;
    char err[256];
    lnames_free(s);
    s->page_i = 0;
    s->listing = 0;
    j->inflight--;
    if (lr->rc) {
        page_failed(j, strerror(-lr->rc));
    } else if (listpage_parse(lr->out.p, lr->out.n, &pg, err, sizeof(err))) {
        page_failed(j, err);
    } else {
        s->lnames = xcalloc(pg.n ? pg.n : 1, sizeof(char *));
        for (size_t i = 0; i < pg.n; i++)
            s->lnames[s->ln++] = xstrndup(pg.v[i].name, pg.v[i].nlen);
        if (s->ln) {
            free(s->token);
            s->token = xstrdup(s->lnames[s->ln - 1]);
        }
        set_list_end(j, !pg.more);
        listpage_free(&pg);
    }
    gbuf_free(&lr->out);
    free(lr);
    jobsel_pump(j);
}

static void ask_page(struct job *j)
{
    struct jobsel *s = j->kd;
    s->listing = 1;
    j->inflight++;               /* the job ends only once the page is in */
    if (s->listed == JL_BACKEND) {
        backend_list(j->cli, &s->b, s->prefix, s->token, JOB_PAGE, page_in, j);
        return;
    }
    struct listpage_req *lr = xcalloc(1, sizeof(*lr));
    lr->j = j;
    iopool_submit(j->t->io, j->q, local_work, local_in, lr);
}

/* The next name of a listing, a page at a time. */
static int listed_name(struct job *j, char *buf, size_t len)
{
    struct jobsel *s = j->kd;
    int have = s->listed == JL_BACKEND ? s->page.n : s->ln;
    if (s->page_i < have) {
        const char *k = s->listed == JL_BACKEND ? s->page.objs[s->page_i].key
                                                : s->lnames[s->page_i];
        s->page_i++;
        size_t n = strlen(k);
        if (n >= len)
            return -1;
        memcpy(buf, k, n + 1);
        return (int)n;
    }
    if (s->list_end)
        return JOBSEL_END;
    if (!s->listing)
        ask_page(j);
    return JOBSEL_WAIT;
}

int jobsel_next(struct job *j, char *buf, size_t len, uint64_t *idx)
{
    struct jobsel *s = j->kd;
    if (s->listed) {
        int n = listed_name(j, buf, len);
        if (n != JOBSEL_WAIT && n != JOBSEL_END)
            *idx = __atomic_fetch_add(&j->pos, 1, __ATOMIC_RELAXED);
        if (n == JOBSEL_END)       /* the size is known once the listing ends */
            job_set_total(j, j->pos, 0);
        return n;
    }
    if (j->pos >= j->total)
        return JOBSEL_END;
    uint64_t i = __atomic_fetch_add(&j->pos, 1, __ATOMIC_RELAXED);
    *idx = i;
    if (s->has_tmpl)
        return tmpl_name(&s->tm, i, buf, len);
    const char *v = json_string_value(json_array_get(s->names, i));
    size_t n = v ? strlen(v) : 0;
    if (!v || n >= len)
        return -1;
    memcpy(buf, v, n + 1);
    return (int)n;
}

int jobsel_url_name(const struct jobsel *s, uint64_t i, const char *url, char *buf, size_t len)
{
    if (s->dnames) {
        const char *v = json_string_value(json_array_get(s->dnames, i));
        size_t n = v ? strlen(v) : 0;
        if (!v || n == 0 || n >= len)
            return -1;
        memcpy(buf, v, n + 1);
        return (int)n;
    }
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : NULL;
    if (!p)
        return -1;
    p++;
    size_t n = strcspn(p, "?#");
    if (n == 0 || n >= len)
        return -1;
    int dn = http_pct_decode(p, n, buf);
    return dn > 0 ? dn : -1;
}

/* Does this target own name in the job's bucket? */
static int owns(const struct job *j, const struct cmap *m, const char *name)
{
    size_t kl;
    char *hkey = node_obj_key(j->provider, j->bucket, name, &kl);
    const struct cmap_node *owner = m ? cmap_owner(m, hkey, kl) : NULL;
    free(hkey);
    return owner && !strcmp(owner->id, j->t->node.id);
}

/* Hand name (a download's object name, from url) to the kind, when this
 * target owns it. */
static void consider(struct job *j, const struct cmap *m, const char *name, size_t n,
                     const char *url)
{
    struct jobsel *s = j->kd;
    if (!owns(j, m, name))
        return;
    size_t klen;
    char *mkey = store_mkey(j->provider, j->bucket, name, n, &klen);
    struct objmeta held;
    int present = store_get(&j->t->store, store_pick(&j->t->store, mkey, klen), mkey, klen,
                            &held) == 0;
    job_add(j, JC_OWNED, 1, 0);
    if (present)
        job_add(j, JC_PRESENT, 1, 0);
    s->one(j, name, n, url, mkey, klen, present, &held);
}

/* Hold the map names are judged by (job_map_wait). 0 when the pump
 * should come back later (armed). */
static int pin_map(struct job *j)
{
    struct jobsel *s = j->kd;
    s->map = job_map_wait(j, s->want_map, &s->map_waits);
    return s->map != NULL;
}

void jobsel_over(struct job *j)
{
    job_add(j, JC_DONE, 1, 0);
    j->inflight--;
    jobsel_pump(j);
}

void jobsel_pump(struct job *j)
{
    struct jobsel *s = j->kd;
    char name[OBJNAME_MAX + 1], url[4096];
    if (!s->map && !pin_map(j))
        return;                  /* a turn later: the proxy's map is on its way */
    struct cmap *m = s->map;
    int looked = 0, n = 0;
    while (!job_aborted(j) && !__atomic_load_n(&j->waiting, __ATOMIC_RELAXED) &&
           j->inflight < s->workers) {
        if (++looked > JOB_BATCH) {
            event_active(j->tick, EV_TIMEOUT, 0);   /* the rest after other work */
            return;
        }
        uint64_t i = 0;
        int dl = s->urls;
        n = jobsel_next(j, dl ? url : name, dl ? sizeof(url) : sizeof(name), &i);
        if (n == JOBSEL_END || n == JOBSEL_WAIT)
            break;
        if (dl && n >= 0)
            n = jobsel_url_name(s, i, url, name, sizeof(name));
        char err[256];
        if (n < 0)
            job_note_error(j, dl ? url : "(too long)",
                           dl ? "no object name in this URL (give \"names\")" : "name too long");
        else if (objname_valid(name, (size_t)n, err, sizeof(err)))
            job_note_error(j, name, err);
        else
            consider(j, m, name, (size_t)n, url);
    }
    if (__atomic_load_n(&j->waiting, __ATOMIC_RELAXED) && !job_aborted(j))
        return;                  /* job_ended of another job starts it */
    int over = n == JOBSEL_END || (!s->listed && j->pos >= j->total) || job_aborted(j);
    if (over && j->inflight == 0 && !j->end_ns)
        job_ended(j);
}

int jobsel_open(struct store *st, const char *mkey, size_t klen, struct objmeta *m)
{
    struct store_mp *mp = store_pick(st, mkey, klen);
    int rc = -ENOENT;
    for (int tries = 0; tries < 3; tries++) {   /* a new version may land in between */
        rc = store_get(st, mp, mkey, klen, m);
        if (!rc && store_is_marker(m))
            rc = -ENOENT;        /* a versioned bucket's deleted name */
        if (!rc && (m->flags & OBJMETA_F_DAMAGED))
            rc = -EBADMSG;       /* a copy marked damaged is never handed on */
        if (rc)
            return rc;
        int fd = store_data_open(mp, mkey, klen, m);
        if (fd >= 0)
            return fd;
        rc = fd;
    }
    return rc;
}

char *jobsel_put_url(struct job *j, const char *provider, const char *bucket, const char *name,
                     char *err, size_t errlen)
{
    struct cmap *m = cmap_current();
    size_t kl;
    char *hkey = node_obj_key(provider, bucket, name, &kl);
    const struct cmap_node *owner = m ? cmap_owner(m, hkey, kl) : NULL;
    free(hkey);
    if (!owner) {
        cmap_unref(m);
        snprintf(err, errlen, "no target owns the destination: not in a cluster map");
        return NULL;
    }
    char *en = http_pct_encode(name, strlen(name), 1);
    char *url = node_signed_urlf(&j->t->node, "PUT", owner->url, "/v1/objects/%s/%s?provider=%s",
                                 bucket, en, provider);
    cmap_unref(m);
    free(en);
    return url;
}

int jobsel_dest_init(struct job *j, json_t *spec, struct jobsel_dest *d, char *err,
                     size_t errlen)
{
    const char *to = json_string_value(json_object_get(spec, "to"));
    const char *tprov = json_string_value(json_object_get(spec, "to_provider"));
    const char *prepend = json_string_value(json_object_get(spec, "prepend"));
    d->dry_run = json_is_true(json_object_get(spec, "dry_run"));
    snprintf(d->prepend, sizeof(d->prepend), "%s", prepend ? prepend : "");
    snprintf(d->provider, sizeof(d->provider), "%s", tprov ? tprov : BMD_PROVIDER_SHOAL);
    snprintf(d->bucket, sizeof(d->bucket), "%s", to ? to : "");
    struct backend db;
    int known = to && !backend_of(j->t, d->provider, to, &db);
    int ro = known && db.kind == BK_HTTP;
    if (known)
        backend_free(&db);
    if (!known) {
        snprintf(err, errlen, "the destination bucket %s/%s is not known here", d->provider,
                 to ? to : "(none)");
        return -1;
    }
    if (ro) {
        snprintf(err, errlen, "bucket %s reads a read-only HTTP origin", to);
        return -1;
    }
    return 0;
}
