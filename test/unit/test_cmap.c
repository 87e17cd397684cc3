#include <errno.h>
#include <string.h>

#include "bmd.h"
#include "check.h"
#include "cmap.h"

static void test_cmap(void)
{
    char err[256];
    struct cmap *m = cmap_new("uuid1", "p1", 5);
    CHECK(cmap_put_node(m, "p1", NODE_PROXY, "http://127.0.0.1:1") == 1);
    CHECK(cmap_put_node(m, "t2", NODE_TARGET, "http://127.0.0.1:3") == 1);
    CHECK(cmap_put_node(m, "t1", NODE_TARGET, "http://127.0.0.1:2") == 1);
    CHECK(cmap_put_node(m, "t1", NODE_TARGET, "http://127.0.0.1:2") == 0);
    CHECK(cmap_put_node(m, "t1", NODE_TARGET, "http://127.0.0.1:9") == 1);
    CHECK(m->n == 3 && m->n_targets == 2);
    CHECK(!strcmp(m->nodes[0].id, "p1") && !strcmp(m->nodes[1].id, "t1"));
    CHECK(cmap_count(m, NODE_TARGET) == 2);

    json_t *j = cmap_to_json(m);
    struct cmap *d = cmap_from_json(j, err, sizeof(err));
    CHECK(d != NULL);
    CHECK(d && d->snap.version == 5 && d->n == 3 && !strcmp(d->primary, "p1"));
    CHECK(d && !strcmp(cmap_find(d, "t1")->url, "http://127.0.0.1:9"));
    /* placement agrees after a round trip */
    for (int i = 0; d && i < 200; i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "shoal/b/%d", i);
        CHECK(!strcmp(cmap_owner(m, key, (size_t)n)->id, cmap_owner(d, key, (size_t)n)->id));
    }
    json_decref(j);

    /* malformed maps are refused with a message */
    json_t *bad = json_loads("{\"version\":1,\"uuid\":\"u\",\"primary\":\"p\","
                             "\"nodes\":[{\"id\":\"x\",\"role\":\"king\",\"url\":\"u\"}]}",
                             0, NULL);
    err[0] = '\0';
    CHECK(cmap_from_json(bad, err, sizeof(err)) == NULL && err[0]);
    json_decref(bad);
    bad = json_loads("{\"version\":\"1\"}", 0, NULL);
    CHECK(cmap_from_json(bad, err, sizeof(err)) == NULL);
    json_decref(bad);

    /* version ordering: only newer maps install */
    CHECK(cmap_install(m, 0) == 1);
    struct cmap *older = cmap_clone(m);
    older->snap.version = 4;
    CHECK(cmap_install(older, 0) == 0);
    struct cmap *same = cmap_clone(m);
    CHECK(cmap_install(same, 0) == 0);
    struct cmap *newer = cmap_clone(m);
    newer->snap.version = 6;
    CHECK(cmap_del_node(newer, "t2") == 1 && cmap_del_node(newer, "t2") == 0);
    CHECK(cmap_install(newer, 0) == 1);
    struct cmap *cur = cmap_current();
    CHECK(cur->snap.version == 6 && cur->n_targets == 1);
    cmap_unref(cur);
    cmap_unref(d);
}

static void test_bmd(void)
{
    char err[256];
    struct bmd *b = bmd_new(3);
    CHECK(bmd_add(b, "shoal", "zeta", NULL, 10) == 0);
    CHECK(bmd_add(b, "shoal", "alpha", NULL, 11) == 0);
    CHECK(bmd_add(b, "shoal", "alpha", NULL, 12) == -EEXIST);
    CHECK(b->n == 2 && !strcmp(b->b[0].name, "alpha"));
    json_t *patch = json_loads("{\"labels\":{\"team\":\"nlp\"}}", 0, NULL);
    CHECK(bmd_props_check(patch, err, sizeof(err)) == 0);
    CHECK(bmd_patch(b, "shoal", "zeta", patch) == 0);
    CHECK(bmd_patch(b, "shoal", "nope", patch) == -ENOENT);
    json_decref(patch);
    /* a JSON merge patch: null removes a property; a new bucket has no nulls */
    patch = json_loads("{\"labels\":null,\"lru\":null}", 0, NULL);
    CHECK(bmd_props_check(patch, err, sizeof(err)) == 0);
    CHECK(bmd_patch(b, "shoal", "alpha", patch) == 0);
    CHECK(bmd_add(b, "shoal", "nulls", patch, 13) == 0);
    CHECK(json_object_size(bmd_find(b, "shoal", "nulls")->props) == 0);
    CHECK(json_object_size(patch) == 2);   /* the caller's is left alone */
    json_decref(patch);
    patch = json_loads("{\"labels\":{\"a\":\"b\"}}", 0, NULL);
    CHECK(bmd_patch(b, "shoal", "alpha", patch) == 0);
    json_decref(patch);
    patch = json_loads("{\"labels\":null}", 0, NULL);
    CHECK(bmd_patch(b, "shoal", "alpha", patch) == 0);
    CHECK(!json_object_get(bmd_find(b, "shoal", "alpha")->props, "labels"));
    json_decref(patch);
    CHECK(bmd_del(b, "shoal", "nulls") == 0);
    json_t *j = bmd_to_json(b);
    struct bmd *d = bmd_from_json(j, err, sizeof(err));
    json_decref(j);
    CHECK(d && d->snap.version == 3 && d->n == 2);
    const struct bmd_bucket *z = d ? bmd_find(d, "shoal", "zeta") : NULL;
    CHECK(z && !strcmp(json_string_value(json_object_get(json_object_get(z->props, "labels"),
                                                         "team")),
                       "nlp"));
    CHECK(bmd_del(d, "shoal", "zeta") == 0 && bmd_find(d, "shoal", "zeta") == NULL);
    CHECK(bmd_del(d, "shoal", "zeta") == -ENOENT);

    /* property validation */
    json_t *p1 = json_loads("{\"mirrors\":2}", 0, NULL);
    CHECK(bmd_props_check(p1, err, sizeof(err)) == -1 && strstr(err, "mirrors"));
    json_decref(p1);
    p1 = json_loads("{\"labels\":{\"a\":1}}", 0, NULL);
    CHECK(bmd_props_check(p1, err, sizeof(err)) == -1);
    json_decref(p1);
    p1 = json_loads("[1]", 0, NULL);
    CHECK(bmd_props_check(p1, err, sizeof(err)) == -1);
    json_decref(p1);
    static const char *const mirrors_bad[] = {
        "{\"mirror\":{\"copies\":0}}", "{\"mirror\":{\"copies\":5}}",
        "{\"mirror\":{\"copies\":\"2\"}}", "{\"mirror\":{\"copies\":2,\"x\":1}}",
        "{\"mirror\":{}}", "{\"mirror\":2}", "{\"mirror\":{\"copies\":2.0}}"};
    for (size_t i = 0; i < sizeof(mirrors_bad) / sizeof(mirrors_bad[0]); i++) {
        p1 = json_loads(mirrors_bad[i], 0, NULL);
        CHECK(bmd_props_check(p1, err, sizeof(err)) == -1 && strstr(err, "mirror"));
        json_decref(p1);
    }
    p1 = json_loads("{\"mirror\":{\"copies\":3}}", 0, NULL);
    CHECK(bmd_props_check(p1, err, sizeof(err)) == 0);
    CHECK(bmd_add(b, "shoal", "mirrored", p1, 13) == 0);
    CHECK(bmd_copies(bmd_find(b, "shoal", "mirrored")) == 3);
    CHECK(bmd_copies(bmd_find(b, "shoal", "alpha")) == 1);
    json_decref(p1);

    /* names */
    CHECK(bmd_valid_name("train-data.v2_x", 15));
    CHECK(!bmd_valid_name("", 0));
    CHECK(!bmd_valid_name(".", 1) && !bmd_valid_name("..", 2));
    CHECK(!bmd_valid_name("-lead", 5));
    CHECK(!bmd_valid_name("has space", 9) && !bmd_valid_name("a/b", 3));
    char longname[70];
    memset(longname, 'a', 64);
    CHECK(bmd_valid_name(longname, 63) && !bmd_valid_name(longname, 64));

    /* version ordering */
    CHECK(bmd_install(b, 0) == 1);
    struct bmd *old = bmd_new(2);
    CHECK(bmd_install(old, 0) == 0);
    d->snap.version = 4;
    CHECK(bmd_install(d, 0) == 1);
    struct bmd *cur = bmd_current();
    CHECK(cur->snap.version == 4 && cur->n == 1);
    bmd_unref(cur);
}

/* Targets that are down, in maintenance or leaving own nothing, but keep
 * their rank: where a name lived before is still known. */
static void test_flags(void)
{
    struct cmap *m = cmap_new("u", "p0", 1);
    char id[16], key[32];
    for (int i = 0; i < 4; i++) {
        snprintf(id, sizeof(id), "t%d", i);
        cmap_put_node(m, id, NODE_TARGET, "http://x");
    }
    cmap_put_node(m, "p0", NODE_PROXY, "http://p");
    struct cmap *all = cmap_clone(m);
    CHECK(m->n_targets == 4 && m->n_members == 4 && m->n_all == 4);
    CHECK(cmap_set_flags(m, "t1", CMAP_FLAG_DOWN, 0) == 1);
    CHECK(cmap_set_flags(m, "t1", CMAP_FLAG_DOWN, 0) == 0);
    CHECK(cmap_set_flags(m, "t2", CMAP_FLAG_MAINT, 0) == 1);
    CHECK(cmap_set_flags(m, "nobody", CMAP_FLAG_MAINT, 0) == 0);
    CHECK(m->n_targets == 2 && m->n_members == 3 && m->n_all == 4);
    CHECK(!cmap_same_placement(m, all) && cmap_same_placement(all, all));
    int moved_ok = 1, ranked_ok = 1;
    for (int k = 0; k < 2000; k++) {
        int n = snprintf(key, sizeof(key), "shoal/b/o%d", k);
        const struct cmap_node *rk[8];
        CHECK(cmap_ranked(m, key, (size_t)n, rk, 8) == 4);
        const struct cmap_node *before = cmap_owner(all, key, (size_t)n);
        const struct cmap_node *now = cmap_owner(m, key, (size_t)n);
        /* the ranking is the full map's: its first is the owner of old */
        ranked_ok &= !strcmp(rk[0]->id, before->id);
        /* only names of t1 and t2 move; the owner is the first active one */
        if (strcmp(before->id, "t1") && strcmp(before->id, "t2"))
            moved_ok &= !strcmp(before->id, now->id);
        int i = 0;
        while (rk[i]->flags)
            i++;
        ranked_ok &= !strcmp(rk[i]->id, now->id);
    }
    CHECK(moved_ok && ranked_ok);
    /* copies: the best active targets, the owner first, never a flagged one */
    int held_ok = 1, stable = 1;
    for (int k = 0; k < 2000; k++) {
        int n = snprintf(key, sizeof(key), "shoal/b/o%d", k);
        const struct cmap_node *h[CMAP_COPIES_MAX], *ha[CMAP_COPIES_MAX];
        held_ok &= cmap_holders(m, key, (size_t)n, h, 3) == 2;
        held_ok &= h[0] == cmap_owner(m, key, (size_t)n) && h[0] != h[1];
        held_ok &= !h[0]->flags && !h[1]->flags;
        /* with every target active, the active ones of m keep their order */
        CHECK(cmap_holders(all, key, (size_t)n, ha, 4) == 4);
        int j = 0;
        for (int x = 0; x < 4; x++)
            if (!strcmp(ha[x]->id, "t0") || !strcmp(ha[x]->id, "t3"))
                stable &= !strcmp(ha[x]->id, h[j++]->id);
    }
    CHECK(held_ok && stable);
    /* a node that joins again is back */
    CHECK(cmap_put_node(m, "t1", NODE_TARGET, "http://x") == 1);
    CHECK(!(cmap_find(m, "t1")->flags & CMAP_FLAG_DOWN) && m->n_targets == 3);
    /* maintenance survives in the JSON, as a state too */
    json_t *j = cmap_to_json(m);
    char err[128];
    struct cmap *back = cmap_from_json(j, err, sizeof(err));
    CHECK(back && cmap_find(back, "t2")->flags == CMAP_FLAG_MAINT && back->n_targets == 3);
    json_t *nodes = json_object_get(j, "nodes");
    size_t i;
    json_t *e;
    int states = 0;
    json_array_foreach(nodes, i, e)
        states += !strcmp(json_string_value(json_object_get(e, "state")),
                          !strcmp(json_string_value(json_object_get(e, "id")), "t2")
                              ? "maintenance" : "active");
    CHECK(states == 5);
    json_decref(j);
    cmap_unref(back);
    cmap_unref(all);
    cmap_unref(m);
}

int main(void)
{
    test_cmap();
    test_flags();
    test_bmd();
    return check_done("test_cmap");
}
