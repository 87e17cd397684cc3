/* faultfs: a FUSE file system that loses what a power cut would lose.
 * The design is described at the top of faultfs.c; this header is shared
 * by its three files: faultfs.c (the FUSE operations), durable.c (what
 * has been made durable, and the cut) and control.c (the control file
 * and the injected errors). */
#ifndef FAULTFS_H
#define FAULTFS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#define FF_CTL_NAME "/.faultfs"     /* the control file, at the mount's root */
#define FF_ROOT_ID 1                /* the durable id of the root directory */
#define FF_MAX_RANGES 64            /* dirty ranges kept apart per file */
#define FF_MAX_RULES 32             /* injected failures at once */

/* Classes of operation an injected failure applies to. */
enum { FF_OP_READ = 1, FF_OP_WRITE = 2, FF_OP_ALL = 3 };

struct ff_range {
    uint64_t lo, hi;                /* [lo, hi), hi may be UINT64_MAX */
};

/* A live file or directory, known by the backing inode of its live copy
 * and named in durable state by id. Freed only by a cut (under the
 * exclusive lock), so an open handle of the current generation may keep
 * a pointer to it. */
struct ff_node {
    uint64_t id;                    /* durable id: files/<id>, dirs/<id> */
    ino_t ino;                      /* inode of the live copy */
    pthread_mutex_t mu;             /* guards the ranges; held across a flush */
    struct ff_range ranges[FF_MAX_RANGES];
    int nranges;                    /* 0: the durable copy is up to date */
    struct ff_node *next_detached;  /* on ff.detached once its last name went */
};

struct ff_rule {
    char *prefix;                   /* a path under the mount, "/t0/mp1" */
    int err;                        /* positive errno */
    int ops;                        /* FF_OP_* */
};

struct ff_state {
    int live_fd;                    /* BACKING/live: what readers see */
    int dirs_fd;                    /* BACKING/durable/dirs: name tables */
    int files_fd;                   /* BACKING/durable/files: contents */
    /* Shared by every operation; exclusive for a directory fsync, a
     * sync, a cut and a change of the rules. */
    pthread_rwlock_t lock;
    int down;                       /* cut and not yet "up": all but control fail */
    unsigned gen;                   /* +1 per cut; older handles fail with EIO */
    pthread_mutex_t map_mu;         /* guards the inode map, next_id, detached */
    void *by_ino;                   /* tsearch tree of struct ff_node */
    struct ff_node *detached;
    uint64_t next_id;
    struct ff_rule rules[FF_MAX_RULES];
    int nrules;
    unsigned forget_delay_us;       /* "slow-forget" (control.c) */
    /* counters for the status read, updated atomically */
    uint64_t cuts, fsyncs, dirsyncs, syncs, injected, flushed_bytes;
};

extern struct ff_state ff;

/* durable.c */
const char *ff_rel(const char *path);
struct ff_node *ff_node_get(ino_t ino, int create);
void ff_node_forget_locked(ino_t ino);
void ff_node_dirty(struct ff_node *n, uint64_t lo, uint64_t hi);
int ff_flush(struct ff_node *n, int live_fd);
int ff_dir_persist(const char *path);
int ff_sync_all(void);
int ff_rebuild(void);
int ff_open_backing(const char *dir);
void ff_close_backing(void);
uint64_t ff_dirty_files(void);

/* control.c */
int ff_is_ctl(const char *path);
int ff_fault(const char *path, int ops);
int ff_ctl_command(const char *buf, size_t len);
char *ff_ctl_status(size_t *len);
void ff_rules_clear(void);

#endif
