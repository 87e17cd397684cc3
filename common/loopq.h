/*
 * loopq: hands a function call from any thread to one event loop. The call
 * runs on the loop's thread, in the order posted. Used to complete I/O pool
 * jobs and to deliver cluster updates.
 */
#ifndef SHOAL_LOOPQ_H
#define SHOAL_LOOPQ_H

struct event_base;
struct loopq;

struct loopq *loopq_new(struct event_base *base);
/* Runs nothing that is still queued. Call on the loop's thread. */
void loopq_free(struct loopq *q);
/* Thread-safe. fn(arg) runs later on q's loop. */
void loopq_post(struct loopq *q, void (*fn)(void *), void *arg);

#endif
