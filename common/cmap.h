/*
 * cmap: the cluster map, a versioned immutable snapshot of the nodes
 * (proxies and targets) and of which proxy is primary. Placement of objects
 * on targets is decided from it with HRW.
 */
#ifndef SHOAL_CMAP_H
#define SHOAL_CMAP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "snap.h"

enum node_role { NODE_PROXY, NODE_TARGET };

/* A target with any flag owns no names (placement skips it). */
#define CMAP_FLAG_MAINT 0x1u     /* in maintenance: its objects move away, still readable */
#define CMAP_FLAG_DOWN 0x2u      /* silent: gone from placement, its names unavailable */
#define CMAP_FLAG_DECOMM 0x4u    /* decommissioning: as maintenance, then it leaves */

struct cmap_node {
    char *id;
    enum node_role role;
    char *url;                   /* public URL, no trailing slash */
    uint32_t flags;
    uint64_t hash;               /* hrw_hash(id) */
    char *raft;                  /* a proxy's consensus address host:port, or NULL */
};

struct cmap {
    struct snap snap;            /* must be first; snap.version is the map version */
    char *uuid;                  /* cluster identity */
    char *primary;               /* id of the primary proxy */
    int n;
    struct cmap_node *nodes;
    int n_targets;               /* active targets (no flags), for placement */
    int *targets;                /* indexes into nodes */
    uint64_t *target_hashes;
    int n_members;               /* targets that are up (active, maintenance, */
    int *members;                /* decommissioning): they hold and list objects */
    int n_all;                   /* every target, down ones too */
    int *all;
    uint64_t *all_hashes;
};

struct cmap *cmap_new(const char *uuid, const char *primary, int64_t version);
/* A modifiable deep copy with the same version; the caller bumps it. */
struct cmap *cmap_clone(const struct cmap *m);
/* Add or update a node. Returns 1 if the map changed, 0 if not. */
int cmap_put_node(struct cmap *m, const char *id, enum node_role role, const char *url);
/* Set a proxy's consensus address. Returns 1 if it changed. */
int cmap_set_raft(struct cmap *m, const char *id, const char *addr);
/* Set and clear flags of a node. Returns 1 if they changed. */
int cmap_set_flags(struct cmap *m, const char *id, uint32_t set, uint32_t clear);
/* Remove a node. Returns 1 if it was there. */
int cmap_del_node(struct cmap *m, const char *id);
const struct cmap_node *cmap_find(const struct cmap *m, const char *id);
/* Owner target of a placement key, or NULL when the map has no target. */
const struct cmap_node *cmap_owner(const struct cmap *m, const char *key, size_t n);
int cmap_count(const struct cmap *m, enum node_role role);
/* The k best targets of a key by HRW among all of them, down ones too,
 * best first, into out; returns how many. The first without flags is the
 * owner; the ones before it are where the name lived before they left or
 * went into maintenance. */
int cmap_ranked(const struct cmap *m, const char *key, size_t n, const struct cmap_node **out,
                int k);
/* The targets that hold a key's copies when a bucket keeps k of them
 * (mirror.copies): the k best active targets by HRW, the owner first,
 * into out; returns how many (fewer when the map has fewer). */
#define CMAP_COPIES_MAX 32           /* 1 + 16 data + 8 parity slices fit */
int cmap_holders(const struct cmap *m, const char *key, size_t n, const struct cmap_node **out,
                 int k);
/* Do a and b place names alike (the same active targets)? */
int cmap_same_placement(const struct cmap *a, const struct cmap *b);

json_t *cmap_to_json(const struct cmap *m);
/* Returns a new map or NULL with a message in err. */
struct cmap *cmap_from_json(const json_t *j, char *err, size_t errlen);

void cmap_unref(struct cmap *m);

/* The process-wide current map. */
struct cmap *cmap_current(void);               /* new reference or NULL */
int cmap_install(struct cmap *m, int force);   /* takes m; 1 if installed */

#endif
