/*
 * purge: the objects of destroyed buckets removed (purge.c).
 */
#ifndef SHOAL_TARGET_PURGE_H
#define SHOAL_TARGET_PURGE_H

struct node;
struct bmd;

/* The node's on_bmd hook (any thread): every bucket in old_bmd but not in
 * new_bmd loses its objects on this target, on the I/O pool. */
void purge_on_bmd(struct node *n, struct bmd *old_bmd, struct bmd *new_bmd);

#endif
