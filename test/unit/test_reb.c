/* A rebalance walk's decision for each key a target holds (reb_decide),
 * on a map and bucket metadata built here, for every target of the map:
 * a plain bucket's object stays with its owner alone and goes from any
 * other target to it; a mirrored bucket's object is kept and shared by
 * each of its holders and sent on by the rest; an erasure-coded bucket's
 * large object is sliced by its owner only, its small ones kept by their
 * P+1 holders; a tombstone reaches every target that may hold anything
 * of its name; a name no target owns stays where it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "check.h"
#include "cmap.h"
#include "fixture.h"
#include "mirror.h"
#include "place.h"
#include "reb.h"
#include "xfer.h"

#define TARGETS 6

/* For one key: how many targets of m decide each way, and is the owner
 * (HRW's first) among those that keep it? */
static void tally(const struct cmap *m, const char *mkey, size_t kl, uint64_t size, int out[4],
                  int *owner_keeps)
{
    size_t pl;
    char *pkey = xfer_place_key(mkey, kl, &pl);
    const struct cmap_node *owner = cmap_owner(m, pkey, pl);
    free(pkey);
    out[0] = out[1] = out[2] = out[3] = 0;
    *owner_keeps = 0;
    for (int i = 0; i < m->n; i++) {
        if (m->nodes[i].role != NODE_TARGET)
            continue;
        enum reb_act a = reb_decide(m, m->nodes[i].id, mkey, kl, size);
        out[a]++;
        if (&m->nodes[i] == owner)
            *owner_keeps = a != REB_SEND;
    }
}

int main(void)
{
    struct cmap *m = fixture_map(TARGETS);
    static const char *const buckets[] = {"plain", "mir", "ec"};
    static const char *const props[] = {
        NULL, "{\"mirror\": {\"copies\": 3}}",
        "{\"ec\": {\"data\": 2, \"parity\": 1, \"objsize_limit\": 1000}}"};
    CHECK(fixture_bmd(3, buckets, props) == 0);

    char mkey[128];
    int t[4], owner_keeps;
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof(name), "o%d", i);
        size_t kl = fixture_mkey("plain", name, mkey, sizeof(mkey));
        tally(m, mkey, kl, 5000, t, &owner_keeps);
        CHECK(t[REB_KEEP] == 1 && t[REB_KEEP_SEND] == 0 && t[REB_SEND] == TARGETS - 1 &&
              owner_keeps);
        kl = fixture_mkey("mir", name, mkey, sizeof(mkey));
        tally(m, mkey, kl, 5000, t, &owner_keeps);
        CHECK(t[REB_KEEP] == 0 && t[REB_KEEP_SEND] == 3 && t[REB_SEND] == TARGETS - 3 &&
              owner_keeps);
        kl = fixture_mkey("ec", name, mkey, sizeof(mkey));
        tally(m, mkey, kl, 5000, t, &owner_keeps);   /* sliced: by its owner */
        CHECK(t[REB_KEEP_SEND] == 1 && t[REB_SEND] == TARGETS - 1 && owner_keeps);
        tally(m, mkey, kl, 500, t, &owner_keeps);    /* small: P+1 copies */
        CHECK(t[REB_KEEP_SEND] == 2 && t[REB_SEND] == TARGETS - 2 && owner_keeps);
        /* a tombstone goes to every target that may hold some of the name */
        tally(m, mkey, kl, PLACE_ANY_SIZE, t, &owner_keeps);
        CHECK(t[REB_KEEP_SEND] == place_copies(mkey, kl, PLACE_ANY_SIZE) && owner_keeps);
        kl = fixture_mkey("plain", name, mkey, sizeof(mkey));
        tally(m, mkey, kl, PLACE_ANY_SIZE, t, &owner_keeps);
        CHECK(t[REB_KEEP] == 1 && t[REB_SEND] == TARGETS - 1 && owner_keeps);
    }
    /* a map with no target: nothing owns it, nothing moves */
    struct cmap *none = cmap_new("uuid", "p1", 2);
    size_t kl = fixture_mkey("mir", "x", mkey, sizeof(mkey));
    CHECK(reb_decide(none, "t0", mkey, kl, 5000) == REB_KEEP);
    cmap_unref(none);
    cmap_unref(m);
    return check_done("test_reb");
}
