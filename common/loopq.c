/*
 * loopq: a mutex-protected FIFO and an eventfd. Posting appends and writes
 * the eventfd; the loop's read event drains the whole list at once, so a
 * burst of completions costs one wake-up.
 */
#include "loopq.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

struct item {
    void (*fn)(void *);
    void *arg;
    struct item *next;
};

struct loopq {
    pthread_mutex_t mu;
    struct item *head, *tail;
    int fd;
    struct event *ev;
};

static void loopq_run(evutil_socket_t fd, short what, void *arg)
{
    struct loopq *q = arg;
    uint64_t v;
    (void)what;
    ssize_t r = read(fd, &v, sizeof(v));
    (void)r;
    pthread_mutex_lock(&q->mu);
    struct item *it = q->head;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->mu);
    while (it) {
        struct item *next = it->next;
        it->fn(it->arg);
        free(it);
        it = next;
    }
}

struct loopq *loopq_new(struct event_base *base)
{
    struct loopq *q = xcalloc(1, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->fd < 0) {
        /* at start-up only (one per loop): out of descriptors already */
        log_error("loopq: eventfd: %s", strerror(errno));
        abort();
    }
    q->ev = event_new(base, q->fd, EV_READ | EV_PERSIST, loopq_run, q);
    event_add(q->ev, NULL);
    return q;
}

void loopq_free(struct loopq *q)
{
    if (!q)
        return;
    event_free(q->ev);
    close(q->fd);
    for (struct item *it = q->head, *n; it; it = n) {
        n = it->next;
        free(it);
    }
    pthread_mutex_destroy(&q->mu);
    free(q);
}

void loopq_post(struct loopq *q, void (*fn)(void *), void *arg)
{
    struct item *it = xmalloc(sizeof(*it));
    it->fn = fn;
    it->arg = arg;
    it->next = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    pthread_mutex_unlock(&q->mu);
    uint64_t one = 1;
    while (write(q->fd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
}
