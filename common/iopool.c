#include "iopool.h"

#include <pthread.h>
#include <stdlib.h>

#include "loopq.h"
#include "util.h"

struct job {
    void (*work)(void *);
    void (*done)(void *);
    void *arg;
    struct loopq *q;
    struct job *next;
};

struct iopool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *head, *tail;
    int stopping;
    int n;
    pthread_t *threads;
};

static void *iopool_main(void *arg)
{
    struct iopool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        struct job *j = p->head;
        if (!j) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        j->work(j->arg);
        if (j->done)
            loopq_post(j->q, j->done, j->arg);
        free(j);
    }
}

struct iopool *iopool_new(int nthreads)
{
    struct iopool *p = xcalloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->n = nthreads;
    p->threads = xcalloc((size_t)nthreads, sizeof(pthread_t));
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&p->threads[i], NULL, iopool_main, p))
            abort();
    return p;
}

void iopool_free(struct iopool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static void submit(struct iopool *p, struct loopq *q, void (*work)(void *),
                   void (*done)(void *), void *arg, int first)
{
    struct job *j = xmalloc(sizeof(*j));
    j->work = work;
    j->done = done;
    j->arg = arg;
    j->q = q;
    j->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (first) {
        j->next = p->head;
        p->head = j;
        if (!p->tail)
            p->tail = j;
    } else {
        if (p->tail)
            p->tail->next = j;
        else
            p->head = j;
        p->tail = j;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void iopool_submit(struct iopool *p, struct loopq *q, void (*work)(void *),
                   void (*done)(void *), void *arg)
{
    submit(p, q, work, done, arg, 0);
}

void iopool_submit_first(struct iopool *p, struct loopq *q, void (*work)(void *),
                         void (*done)(void *), void *arg)
{
    submit(p, q, work, done, arg, 1);
}
