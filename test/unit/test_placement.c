/* Placement of an object's copies and slices (mirror.h, slice.h), on maps
 * built here: the holders are distinct active targets, the owner (HRW's
 * best of the place key) first, each holder's rank its place in that
 * list; a target down or in maintenance holds nothing; more copies than
 * targets gives every target; taking a non-holder out moves nothing and
 * taking a holder out keeps the others in their order (HRW's promise:
 * only what the lost target held moves); a malformed key has no holder;
 * a slice's key names its object and index and no other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmap.h"
#include "fixture.h"
#include "mirror.h"
#include "place.h"
#include "slice.h"
#include "xfer.h"

#define TARGETS 6

/* Are holders distinct, active, ranked in order, the owner first? */
static int holders_sound(const struct cmap *m, const char *mkey, size_t kl, int copies,
                         const struct cmap_node **h, int n)
{
    size_t pl;
    char *pkey = xfer_place_key(mkey, kl, &pl);
    int ok = pkey && n > 0 && h[0] == cmap_owner(m, pkey, pl);
    free(pkey);
    for (int i = 0; ok && i < n; i++) {
        ok = !h[i]->flags && place_rank(m, mkey, kl, copies, h[i]->id) == i;
        for (int k = 0; ok && k < i; k++)
            ok = h[k] != h[i];
    }
    return ok;
}

static void test_copies(void)
{
    struct cmap *m = fixture_map(TARGETS);
    const struct cmap_node *h[CMAP_COPIES_MAX], *g[CMAP_COPIES_MAX];
    char mkey[64];
    int held[TARGETS] = {0};
    for (int i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof(name), "obj-%d", i);
        size_t kl = fixture_mkey("b", name, mkey, sizeof(mkey));
        int n = place_holders(m, mkey, kl, 3, h);
        CHECK(n == 3 && holders_sound(m, mkey, kl, 3, h, n));
        for (int k = 0; k < n; k++)
            held[atoi(h[k]->id + 1)]++;
        /* a target that holds none of it: its rank is -1 */
        for (int t = 0; t < m->n; t++) {
            const struct cmap_node *nd = &m->nodes[t];
            int in = nd == h[0] || nd == h[1] || nd == h[2];
            if (nd->role == NODE_TARGET && !in)
                CHECK(place_rank(m, mkey, kl, 3, nd->id) == -1);
        }
        /* taking out a non-holder moves nothing; a holder, keeps the order */
        struct cmap *less = cmap_clone(m);
        const char *other = NULL;
        for (int t = 0; t < m->n && !other; t++)
            if (m->nodes[t].role == NODE_TARGET && &m->nodes[t] != h[0] &&
                &m->nodes[t] != h[1] && &m->nodes[t] != h[2])
                other = m->nodes[t].id;
        CHECK(cmap_del_node(less, other) == 1);
        CHECK(place_holders(less, mkey, kl, 3, g) == 3);
        CHECK(!strcmp(g[0]->id, h[0]->id) && !strcmp(g[1]->id, h[1]->id) &&
              !strcmp(g[2]->id, h[2]->id));
        cmap_unref(less);
        less = cmap_clone(m);
        CHECK(cmap_set_flags(less, h[1]->id, CMAP_FLAG_DOWN, 0) == 1);
        CHECK(place_holders(less, mkey, kl, 3, g) == 3 && holders_sound(less, mkey, kl, 3, g, 3));
        CHECK(!strcmp(g[0]->id, h[0]->id) && !strcmp(g[1]->id, h[2]->id));
        CHECK(place_rank(less, mkey, kl, 3, h[1]->id) == -1);
        cmap_unref(less);
    }
    /* every target holds a share: none left out, none takes all */
    for (int t = 0; t < TARGETS; t++)
        CHECK(held[t] > 300 * 3 / TARGETS / 2 && held[t] < 300 * 3 / TARGETS * 2);
    /* more copies than targets: every active one, once */
    size_t kl = fixture_mkey("b", "many", mkey, sizeof(mkey));
    struct cmap *maint = cmap_clone(m);
    CHECK(cmap_set_flags(maint, "t3", CMAP_FLAG_MAINT, 0) == 1);
    int n = place_holders(maint, mkey, kl, 10, h);
    CHECK(n == TARGETS - 1 && holders_sound(maint, mkey, kl, 10, h, n));
    for (int k = 0; k < n; k++)
        CHECK(strcmp(h[k]->id, "t3"));
    cmap_unref(maint);
    /* a malformed key (no bucket) has no holder */
    CHECK(place_holders(m, "oshoal", 6, 3, h) == 0);
    cmap_unref(m);
}

static void test_slice_keys(void)
{
    char mkey[64];
    size_t kl = fixture_mkey("b", "dir/shard-0001.tar", mkey, sizeof(mkey));
    for (int idx = 0; idx < 24; idx++) {
        size_t sl, back;
        int got = -1;
        char *sk = slice_key(mkey, kl, idx, &sl);
        CHECK(sk && sk[0] == 's');
        char *ok = sk ? slice_obj_key(sk, sl, &back, &got) : NULL;
        CHECK(ok && back == kl && !memcmp(ok, mkey, kl) && got == idx);
        /* the slices of one object are told apart, and from another's */
        size_t sl2;
        char *sk2 = slice_key(mkey, kl, (idx + 1) % 24, &sl2);
        CHECK(sk && sk2 && (sl != sl2 || memcmp(sk, sk2, sl)));
        free(ok);
        free(sk2);
        free(sk);
    }
}

int main(void)
{
    test_copies();
    test_slice_keys();
    return check_done("test_placement");
}
