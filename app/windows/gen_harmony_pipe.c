/* gen_harmony_pipe.c - gen_harmony_open / close on Windows, which has no
 * cookie streams: h->f is the write end of a pipe, and a thread reads the
 * other end and hands the text to gen_harmony_feed. Close waits for the
 * thread, so everything written is printed before it returns. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

typedef struct pipe_state {
    int rfd;
    pthread_t th;
} pipe_state;

static void *reader_main(void *arg)
{
    gen_harmony_out *h = arg;
    pipe_state *ps = h->plat;
    char buf[4096];
    int n;
    while ((n = _read(ps->rfd, buf, sizeof buf)) > 0) {
        gen_harmony_feed(h, buf, (size_t)n);
        fflush(h->dst);
    }
    return NULL;
}

FILE *gen_harmony_open(gen_harmony_out *h, FILE *dst, bool show_reasoning)
{
    memset(h, 0, sizeof *h);
    h->dst = dst;
    h->show_reasoning = show_reasoning;
    sl_harmony_stream_init(&h->hs);
    pipe_state *ps = calloc(1, sizeof *ps);
    int fds[2];
    if (!ps || _pipe(fds, 1 << 16, _O_BINARY | _O_NOINHERIT) != 0) {
        free(ps);
        return NULL;
    }
    ps->rfd = fds[0];
    h->plat = ps;
    h->f = _fdopen(fds[1], "wb");
    if (!h->f || pthread_create(&ps->th, NULL, reader_main, h) != 0) {
        if (h->f) fclose(h->f);
        else _close(fds[1]);
        _close(fds[0]);
        free(ps);
        h->plat = NULL;
        h->f = NULL;
        errno = ENOMEM;
        return NULL;
    }
    setvbuf(h->f, NULL, _IONBF, 0);
    return h->f;
}

int gen_harmony_close(gen_harmony_out *h)
{
    int rc = h->f ? fclose(h->f) : 0;
    h->f = NULL;
    pipe_state *ps = h->plat;
    if (ps) {
        pthread_join(ps->th, NULL);
        _close(ps->rfd);
        free(ps);
        h->plat = NULL;
    }
    gen_harmony_finish(h);
    if (fflush(h->dst) != 0) rc = EOF;
    return rc;
}
