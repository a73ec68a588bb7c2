/* server_deadline.c - the header deadline's watcher (server_deadline.h). */
#include "server_deadline.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>


typedef struct watch {
    sl_sock fd;
    bool awaiting;          /* waiting for a request head */
    bool shut;              /* shut by the watcher already */
    uint64_t since_ms;      /* when the wait began */
    struct watch *prev, *next;
} watch;

struct srv_deadline {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* signalled to stop */
    pthread_t thread;
    bool stopping;
    uint64_t limit_ms;
    watch *head;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *watcher(void *arg)
{
    srv_deadline *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stopping) {
        uint64_t now = now_ms();
        for (watch *w = d->head; w; w = w->next)
            if (w->awaiting && !w->shut && now - w->since_ms > d->limit_ms) {
                sl_sock_shut_both(w->fd);
                w->shut = true;
            }
        /* a quarter of a second: the deadline holds to within that */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&d->cv, &d->mu, &until);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

srv_deadline *srv_deadline_start(unsigned seconds)
{
    srv_deadline *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->limit_ms = (uint64_t)seconds * 1000u;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pthread_create(&d->thread, NULL, watcher, d)) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return NULL;
    }
    return d;
}

void srv_deadline_opened(srv_deadline *d, sl_sock fd, void **ctx)
{
    watch *w = calloc(1, sizeof *w);
    *ctx = w;
    if (!w) return;
    w->fd = fd;
    w->awaiting = true;
    w->since_ms = now_ms();
    pthread_mutex_lock(&d->mu);
    w->next = d->head;
    if (d->head) d->head->prev = w;
    d->head = w;
    pthread_mutex_unlock(&d->mu);
}

void srv_deadline_head_done(srv_deadline *d, void *ctx)
{
    watch *w = ctx;
    if (!w) return;
    pthread_mutex_lock(&d->mu);
    w->awaiting = false;
    pthread_mutex_unlock(&d->mu);
}

void srv_deadline_rearm(srv_deadline *d, void *ctx)
{
    watch *w = ctx;
    if (!w) return;
    pthread_mutex_lock(&d->mu);
    w->awaiting = true;
    w->since_ms = now_ms();
    pthread_mutex_unlock(&d->mu);
}

void srv_deadline_closed(srv_deadline *d, void **ctx)
{
    watch *w = *ctx;
    *ctx = NULL;
    if (!w) return;
    pthread_mutex_lock(&d->mu);
    if (w->prev) w->prev->next = w->next;
    else d->head = w->next;
    if (w->next) w->next->prev = w->prev;
    pthread_mutex_unlock(&d->mu);
    free(w);
}

void srv_deadline_halt(srv_deadline *d)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->stopping = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
}

void srv_deadline_free(srv_deadline *d)
{
    if (!d) return;
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
