/*
 * condcheck: conditional writes to a bucket with a backend (see condcheck.h).
 *
 * Thread: the request's worker.
 */
#include "condcheck.h"

#include <errno.h>
#include <stdlib.h>

#include "backend.h"
#include "http.h"
#include "objmeta.h"
#include "store.h"
#include "target.h"
#include "util.h"
#include "writeback.h"

struct check {
    struct http_req *r;
    const struct backend *b;
    struct store_x *x;
    condcheck_fn done;
    void *arg;
};

/* The conditions against held_etag (NULL: none there): done, once. */
static void judge(struct check *c, const char *held_etag)
{
    int rc = store_x_precondition(c->x, held_etag);
    if (!rc)
        target_conditions_clear(c->x);
    else if (!target_write_refused(c->r, c->x, rc))
        abort();                 /* store_x_precondition's codes are all refusals */
    c->done(c->arg, rc != 0);
    free(c);
}

static void head_done(void *arg, const struct backend_obj *o)
{
    struct check *c = arg;
    if (o->status == 404) {
        judge(c, NULL);
    } else if (o->status >= 200 && o->status <= 299) {
        judge(c, o->etag);
    } else {
        char msg[300];
        int st = backend_status(c->b, o, msg, sizeof(msg));
        http_reply_error(c->r, st, "cannot check the write's condition with the backend: %s",
                         msg);
        c->done(c->arg, 1);
        free(c);
    }
}

void condcheck_backed(struct target *t, struct http_req *r, const struct backend *b,
                      const char *mkey, size_t klen, const char *name, struct store_x *x,
                      condcheck_fn done, void *arg)
{
    struct check *c = xcalloc(1, sizeof(*c));
    *c = (struct check){r, b, x, done, arg};
    struct objmeta m;
    if (!store_get(&t->store, store_pick(&t->store, mkey, klen), mkey, klen, &m) &&
        !store_is_marker(&m)) {
        char etag[OBJMETA_ETAG_MAX + 1];
        objmeta_etag(&m, etag, sizeof(etag));
        judge(c, etag);          /* the cached copy stands for the backend's */
    } else if (b->write_back && writeback_owed(&t->store, mkey, klen)) {
        judge(c, NULL);          /* deleted here, the backend not yet told */
    } else {
        backend_head(target_cli(r), b, name, head_done, c);
    }
}
