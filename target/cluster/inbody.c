/*
 * inbody: a neighbour's record and bytes into a work file (see inbody.h).
 */
#include "inbody.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "http.h"
#include "objmeta.h"
#include "space.h"
#include "store.h"
#include "util.h"
#include "xfer.h"

int inbody_open(struct inbody *b, struct target *t, struct http_req *r, struct store_mp *mp)
{
    char num[24], msg[512];
    uint64_t ml = 0;
    b->fd = -1;
    int n = http_query_get(r, "meta", num, sizeof(num));
    if (n <= 0 || parse_u64(num, (size_t)n, &ml) || ml < 1 || ml > OBJMETA_MAX ||
        r->content_length < (int64_t)ml) {
        http_reply_error(r, 400, "meta (1..%d) must give the record's length, within the body",
                         (int)OBJMETA_MAX);
        return -1;
    }
    if (space_admit(t, mp, (uint64_t)r->content_length - ml, msg, sizeof(msg))) {
        http_reply_error(r, 507, "%s", msg);
        return -1;
    }
    int fd = store_work_open(mp, &b->uid, b->work, sizeof(b->work));
    if (fd < 0) {
        http_reply_error(r, err_status(fd), "cannot create work file: %s", strerror(-fd));
        return -1;
    }
    b->mp = mp;
    b->fd = fd;
    b->meta_len = ml;
    b->meta = xmalloc(ml);
    b->xs = XXH3_createState();
    XXH3_64bits_reset(b->xs);
    bsum_init(&b->bs);
    return 0;
}

int inbody_take(struct inbody *b, const char *d, size_t n)
{
    if (b->meta_got < b->meta_len)
        xfer_meta_take(b->meta, b->meta_len, &b->meta_got, &d, &n);
    XXH3_64bits_update(b->xs, d, n);
    bsum_update(&b->bs, d, n);
    b->size += n;
    while (n > 0) {
        ssize_t w = write(b->fd, d, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = errno;
            store_note_error(b->mp, -e);
            return e;
        }
        d += w;
        n -= (size_t)w;
    }
    return 0;
}

int inbody_check(struct inbody *b, struct objmeta *m)
{
    if (b->meta_got < b->meta_len || objmeta_decode(b->meta, b->meta_len, m) ||
        m->size != b->size || m->cksum != XXH3_64bits_digest(b->xs) || !m->version)
        return -1;
    bsum_finish(&b->bs, m);      /* the bytes' own, whatever the sender's record kept */
    m->uid = b->uid;
    return 0;
}

void inbody_free(struct inbody *b)
{
    if (b->fd >= 0) {
        close(b->fd);
        unlink(b->work);
    }
    if (b->xs) {
        XXH3_freeState(b->xs);
        bsum_deinit(&b->bs);
    }
    free(b->meta);
}

void inbody_refuse(struct http_req *r, int status, const char *msg)
{
    r->data = NULL;
    r->on_body = NULL;
    r->on_end = NULL;
    r->on_abort = NULL;
    http_resp_close(r);
    http_reply_error(r, status, "%s", msg);
}
