/* gen_harmony_cookie.c - gen_harmony_open / close on glibc: a cookie stream
 * whose writes go straight to gen_harmony_feed. */
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "gen.h"

static ssize_t harmony_write(void *cookie, const char *buf, size_t n)
{
    gen_harmony_out *h = cookie;
    gen_harmony_feed(h, buf, n);
    if (fflush(h->dst) != 0 || ferror(h->dst)) return -1;
    return (ssize_t)n;
}

FILE *gen_harmony_open(gen_harmony_out *h, FILE *dst, bool show_reasoning)
{
    memset(h, 0, sizeof *h);
    h->dst = dst;
    h->show_reasoning = show_reasoning;
    sl_harmony_stream_init(&h->hs);
    cookie_io_functions_t io = {NULL, harmony_write, NULL, NULL};
    h->f = fopencookie(h, "w", io);
    if (h->f) setvbuf(h->f, NULL, _IONBF, 0);
    return h->f;
}

int gen_harmony_close(gen_harmony_out *h)
{
    int rc = h->f ? fclose(h->f) : 0;
    h->f = NULL;
    gen_harmony_finish(h);
    if (fflush(h->dst) != 0) rc = EOF;
    return rc;
}
