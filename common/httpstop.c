/*
 * httpstop: the end of a server (see http.h): draining (the connections
 * between requests close, new requests get 503 while those under way
 * finish), halting the loops, stopping; and the count of open
 * connections.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <pthread.h>
#include <time.h>

#include "http_int.h"
#include "loopq.h"
#include "util.h"

/* On w's loop: the connections between requests close. (New ones are
 * still taken, so that their requests get a 503 rather than a refusal.) */
static void drain_on_loop(void *arg)
{
    struct http_worker *w = arg;
    for (struct http_conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->req || c->closing || c->aborting || c->lingering)
            continue;
        if (evbuffer_get_length(bufferevent_get_output(c->bev)))
            c->closing = 1;      /* an answer still going out: close after it */
        else
            http_conn_free(c);
    }
}

void http_server_drain(struct http_server *s, int grace_s)
{
    for (int i = 0; i < s->n; i++) {
        __atomic_store_n(&s->w[i].draining, 1, __ATOMIC_RELAXED);
        loopq_post(s->w[i].q, drain_on_loop, &s->w[i]);
    }
    uint64_t end = mono_ms() + (uint64_t)grace_s * 1000u;
    while (mono_ms() < end) {
        int open = 0;
        for (int i = 0; i < s->n; i++)
            open += __atomic_load_n(&s->w[i].nconns, __ATOMIC_RELAXED);
        if (!open)
            return;
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
}

void http_server_halt(struct http_server *s)
{
    for (int i = 0; i < s->n; i++)
        event_base_loopbreak(s->w[i].base);
    for (int i = 0; i < s->n; i++)
        pthread_join(s->threads[i], NULL);
}

int http_server_conns(const struct http_server *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += __atomic_load_n(&s->w[i].nconns, __ATOMIC_RELAXED);
    return n;
}

void http_server_stop(struct http_server *s)
{
    http_server_halt(s);
    http_server_free(s);
}
