/*
 * cmap: nodes are kept sorted by id so that two maps with the same content
 * encode identically; the target index used by placement is rebuilt after
 * every change (cmap_reindex), so lookups never allocate.
 */
#include "cmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hrw.h"
#include "util.h"

static struct snap_holder holder = SNAP_HOLDER_INIT;

static void cmap_destroy(struct snap *s)
{
    struct cmap *m = (struct cmap *)s;
    for (int i = 0; i < m->n; i++) {
        free(m->nodes[i].id);
        free(m->nodes[i].url);
        free(m->nodes[i].raft);
    }
    free(m->nodes);
    free(m->targets);
    free(m->target_hashes);
    free(m->members);
    free(m->all);
    free(m->all_hashes);
    free(m->uuid);
    free(m->primary);
    free(m);
}

void cmap_unref(struct cmap *m)
{
    if (m)
        snap_unref(&m->snap);
}

static void cmap_reindex(struct cmap *m)
{
    free(m->targets);
    free(m->target_hashes);
    free(m->members);
    free(m->all);
    free(m->all_hashes);
    m->targets = xcalloc((size_t)m->n + 1, sizeof(int));
    m->target_hashes = xcalloc((size_t)m->n + 1, sizeof(uint64_t));
    m->members = xcalloc((size_t)m->n + 1, sizeof(int));
    m->all = xcalloc((size_t)m->n + 1, sizeof(int));
    m->all_hashes = xcalloc((size_t)m->n + 1, sizeof(uint64_t));
    m->n_targets = m->n_members = m->n_all = 0;
    for (int i = 0; i < m->n; i++) {
        const struct cmap_node *nd = &m->nodes[i];
        if (nd->role != NODE_TARGET)
            continue;
        m->all[m->n_all] = i;
        m->all_hashes[m->n_all++] = nd->hash;
        if (!(nd->flags & CMAP_FLAG_DOWN))
            m->members[m->n_members++] = i;
        if (nd->flags)
            continue;
        m->targets[m->n_targets] = i;
        m->target_hashes[m->n_targets++] = nd->hash;
    }
}

struct cmap *cmap_new(const char *uuid, const char *primary, int64_t version)
{
    struct cmap *m = xcalloc(1, sizeof(*m));
    snap_init(&m->snap, version, cmap_destroy);
    m->uuid = xstrdup(uuid);
    m->primary = xstrdup(primary);
    cmap_reindex(m);
    return m;
}

struct cmap *cmap_clone(const struct cmap *src)
{
    struct cmap *m = cmap_new(src->uuid, src->primary, src->snap.version);
    m->nodes = xcalloc((size_t)src->n + 1, sizeof(*m->nodes));
    for (int i = 0; i < src->n; i++) {
        m->nodes[i] = src->nodes[i];
        m->nodes[i].id = xstrdup(src->nodes[i].id);
        m->nodes[i].url = xstrdup(src->nodes[i].url);
        m->nodes[i].raft = src->nodes[i].raft ? xstrdup(src->nodes[i].raft) : NULL;
    }
    m->n = src->n;
    cmap_reindex(m);
    return m;
}

static int node_pos(const struct cmap *m, const char *id, int *found)
{
    int lo = 0, hi = m->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(m->nodes[mid].id, id);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

int cmap_put_node(struct cmap *m, const char *id, enum node_role role, const char *url)
{
    int found;
    int i = node_pos(m, id, &found);
    if (found) {
        struct cmap_node *nd = &m->nodes[i];
        if (nd->role == role && strcmp(nd->url, url) == 0 && !(nd->flags & CMAP_FLAG_DOWN))
            return 0;
        nd->flags &= ~CMAP_FLAG_DOWN;    /* back */
        nd->role = role;
        free(nd->url);
        nd->url = xstrdup(url);
    } else {
        m->nodes = xrealloc(m->nodes, sizeof(*m->nodes) * (size_t)(m->n + 1));
        memmove(&m->nodes[i + 1], &m->nodes[i], sizeof(*m->nodes) * (size_t)(m->n - i));
        m->n++;
        struct cmap_node *nd = &m->nodes[i];
        nd->id = xstrdup(id);
        nd->role = role;
        nd->url = xstrdup(url);
        nd->flags = 0;
        nd->hash = hrw_hash(id, strlen(id));
        nd->raft = NULL;
    }
    cmap_reindex(m);
    return 1;
}

int cmap_set_raft(struct cmap *m, const char *id, const char *addr)
{
    int found;
    int i = node_pos(m, id, &found);
    if (!found || (m->nodes[i].raft && !strcmp(m->nodes[i].raft, addr)))
        return 0;
    free(m->nodes[i].raft);
    m->nodes[i].raft = xstrdup(addr);
    return 1;
}

int cmap_set_flags(struct cmap *m, const char *id, uint32_t set, uint32_t clear)
{
    int found;
    int i = node_pos(m, id, &found);
    if (!found)
        return 0;
    uint32_t f = (m->nodes[i].flags | set) & ~clear;
    if (f == m->nodes[i].flags)
        return 0;
    m->nodes[i].flags = f;
    cmap_reindex(m);
    return 1;
}

int cmap_del_node(struct cmap *m, const char *id)
{
    int found;
    int i = node_pos(m, id, &found);
    if (!found)
        return 0;
    free(m->nodes[i].id);
    free(m->nodes[i].url);
    memmove(&m->nodes[i], &m->nodes[i + 1], sizeof(*m->nodes) * (size_t)(m->n - i - 1));
    m->n--;
    cmap_reindex(m);
    return 1;
}

const struct cmap_node *cmap_find(const struct cmap *m, const char *id)
{
    int found;
    int i = node_pos(m, id, &found);
    return found ? &m->nodes[i] : NULL;
}

const struct cmap_node *cmap_owner(const struct cmap *m, const char *key, size_t n)
{
    int i = hrw_pick(hrw_hash(key, n), m->target_hashes, m->n_targets);
    return i < 0 ? NULL : &m->nodes[m->targets[i]];
}

int cmap_holders(const struct cmap *m, const char *key, size_t n, const struct cmap_node **out,
                 int k)
{
    int order[CMAP_COPIES_MAX];
    if (k > CMAP_COPIES_MAX)
        k = CMAP_COPIES_MAX;
    int got = hrw_top(hrw_hash(key, n), m->target_hashes, m->n_targets, order, k);
    for (int i = 0; i < got; i++)
        out[i] = &m->nodes[m->targets[order[i]]];
    return got;
}

int cmap_ranked(const struct cmap *m, const char *key, size_t n, const struct cmap_node **out,
                int k)
{
    int order[8];
    if (k > 8)
        k = 8;
    int got = hrw_top(hrw_hash(key, n), m->all_hashes, m->n_all, order, k);
    for (int i = 0; i < got; i++)
        out[i] = &m->nodes[m->all[order[i]]];
    return got;
}

int cmap_same_placement(const struct cmap *a, const struct cmap *b)
{
    if (a->n_targets != b->n_targets)
        return 0;
    for (int i = 0; i < a->n_targets; i++)
        if (strcmp(a->nodes[a->targets[i]].id, b->nodes[b->targets[i]].id))
            return 0;
    return 1;
}

int cmap_count(const struct cmap *m, enum node_role role)
{
    int c = 0;
    for (int i = 0; i < m->n; i++)
        c += m->nodes[i].role == role;
    return c;
}

json_t *cmap_to_json(const struct cmap *m)
{
    json_t *nodes = json_array();
    for (int i = 0; i < m->n; i++) {
        const struct cmap_node *nd = &m->nodes[i];
        const char *state = nd->flags & CMAP_FLAG_DOWN     ? "down"
                            : nd->flags & CMAP_FLAG_DECOMM ? "decommissioning"
                            : nd->flags & CMAP_FLAG_MAINT  ? "maintenance"
                                                           : "active";
        json_t *jn = json_pack("{s:s, s:s, s:s, s:I, s:s}", "id", nd->id, "role",
                               nd->role == NODE_PROXY ? "proxy" : "target", "url", nd->url,
                               "flags", (json_int_t)nd->flags, "state", state);
        if (nd->raft)
            json_object_set_new(jn, "raft", json_string(nd->raft));
        json_array_append_new(nodes, jn);
    }
    return json_pack("{s:I, s:s, s:s, s:o}", "version", (json_int_t)m->snap.version, "uuid",
                     m->uuid, "primary", m->primary, "nodes", nodes);
}

struct cmap *cmap_from_json(const json_t *j, char *err, size_t errlen)
{
    json_int_t version;
    const char *uuid, *primary;
    json_t *nodes;
    json_error_t je;
    if (json_unpack_ex((json_t *)j, &je, 0, "{s:I, s:s, s:s, s:o}", "version", &version,
                       "uuid", &uuid, "primary", &primary, "nodes", &nodes)) {
        snprintf(err, errlen, "cluster map: %s", je.text);
        return NULL;
    }
    if (!json_is_array(nodes) || version < 0) {
        snprintf(err, errlen, "cluster map: bad nodes or version");
        return NULL;
    }
    struct cmap *m = cmap_new(uuid, primary, version);
    size_t i;
    json_t *e;
    json_array_foreach(nodes, i, e) {
        const char *id, *role, *url, *raft = NULL;
        je.text[0] = '\0';
        json_int_t flags = 0;
        if (json_unpack_ex(e, &je, 0, "{s:s, s:s, s:s, s?I, s?s}", "id", &id, "role", &role,
                           "url", &url, "flags", &flags, "raft", &raft) ||
            (strcmp(role, "proxy") && strcmp(role, "target")) || !id[0]) {
            snprintf(err, errlen, "cluster map: node %zu: %s", i,
                     je.text[0] ? je.text : "bad role or id");
            cmap_unref(m);
            return NULL;
        }
        cmap_put_node(m, id, strcmp(role, "proxy") ? NODE_TARGET : NODE_PROXY, url);
        int found;
        int pos = node_pos(m, id, &found);
        m->nodes[pos].flags = (uint32_t)flags;
        if (raft && raft[0])
            cmap_set_raft(m, id, raft);
    }
    cmap_reindex(m);
    return m;
}

struct cmap *cmap_current(void)
{
    return (struct cmap *)snap_get(&holder);
}

int cmap_install(struct cmap *m, int force)
{
    return snap_install(&holder, &m->snap, force);
}
