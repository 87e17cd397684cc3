/*
 * shoal-proxy's context: the one struct proxy every handler reaches as
 * r->w->ctx (the server's ctx; it starts with its struct node).
 *
 * The proxy's files, each a concern with its own header, calling one way:
 *   main       the route tables and start-up
 *   objects    an object's owner and signed URL; the native 307
 *   reach      the targets this proxy can reach, by its own probes
 *   buckets    the bucket API, the merged listing, remote buckets
 *   cluster    membership on the primary, pushes to every node
 *   quorum     the proxies' Raft group: commits maps and BMDs, elects the primary
 *   raftnet    its connections, authenticated with the cluster secret
 *   nodes      maintenance and decommission of targets
 *   s3route    the S3 API's entry: authentication, buckets vs objects
 *   s3bucket   S3 bucket operations
 *   s3listing  S3 listings (objects, versions, multipart uploads)
 *   s3fwd      S3 object requests: checks, redirect, streamed forward
 *   s3relay    S3 GET and HEAD relayed socket to socket
 *   worker     each worker's client and target connections
 */
#ifndef SHOAL_PROXY_H
#define SHOAL_PROXY_H

#include <pthread.h>
#include <stdint.h>

#include "config.h"
#include "node.h"

struct seen {
    char *id;
    uint64_t at_ms;              /* last join or keepalive */
};

struct quorum;

struct proxy {
    struct node node;            /* first: see struct node */
    struct conf conf;
    struct quorum *quorum;
    pthread_mutex_t mu;          /* guards seen[] on the primary */
    struct seen *seen;
    int n_seen;
    int was_primary;             /* control thread: seen[] is set up for this term */
};

#endif
