/* server_think.c - see server_think.h. */
#include "server_think.h"

#include <string.h>

static const char OPEN[] = "<think>", CLOSE[] = "</think>";

void srv_think_init(srv_think *t, bool enabled, bool inside)
{
    memset(t, 0, sizeof *t);
    t->mode = !enabled ? SRV_THINK_OFF : inside ? SRV_THINK_REASON_START : SRV_THINK_DETECT;
}

static bool reasoning(const srv_think *t)
{
    return t->mode == SRV_THINK_REASON || t->mode == SRV_THINK_REASON_START;
}

static void emit(srv_think *t, const char *s, size_t n, srv_think_out out, void *ud)
{
    if (n) out(ud, reasoning(t), s, n);
}

void srv_think_feed(srv_think *t, const char *s, size_t n, srv_think_out out, void *ud)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        switch (t->mode) {
        case SRV_THINK_OFF:
        case SRV_THINK_CONTENT:
            emit(t, s + i, n - i, out, ud);
            return;
        case SRV_THINK_DETECT:
            if (t->n_hold == 0 && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) continue;
            t->hold[t->n_hold++] = c;
            if (t->n_hold == sizeof OPEN - 1 && !memcmp(t->hold, OPEN, t->n_hold)) {
                t->n_hold = 0;
                t->mode = SRV_THINK_REASON_START;
            } else if (memcmp(t->hold, OPEN, t->n_hold)) {
                t->mode = SRV_THINK_CONTENT; /* no think block: all of it is content */
                size_t h = t->n_hold;
                t->n_hold = 0;
                emit(t, t->hold, h, out, ud);
            }
            break;
        case SRV_THINK_REASON_START:
        case SRV_THINK_CONTENT_START:
            if (c == '\n' || c == '\r' || (t->mode == SRV_THINK_CONTENT_START && (c == ' ' || c == '\t')))
                continue;
            t->mode = t->mode == SRV_THINK_REASON_START ? SRV_THINK_REASON : SRV_THINK_CONTENT;
            i--; /* look at c again in the new mode */
            break;
        case SRV_THINK_REASON:
            if (t->n_hold || c == '<') {
                t->hold[t->n_hold++] = c;
                if (t->n_hold == sizeof CLOSE - 1 && !memcmp(t->hold, CLOSE, t->n_hold)) {
                    t->n_hold = 0;
                    t->mode = SRV_THINK_CONTENT_START;
                } else if (memcmp(t->hold, CLOSE, t->n_hold)) {
                    /* not the tag: the first held byte is reasoning, look at the rest again */
                    size_t h = t->n_hold;
                    char tmp[sizeof t->hold];
                    memcpy(tmp, t->hold, h);
                    t->n_hold = 0;
                    emit(t, tmp, 1, out, ud);
                    srv_think_feed(t, tmp + 1, h - 1, out, ud);
                }
                break;
            }
            /* a run up to the next '<' */
            size_t j = i;
            while (j < n && s[j] != '<') j++;
            emit(t, s + i, j - i, out, ud);
            i = j - 1;
            break;
        }
    }
}

void srv_think_flush(srv_think *t, srv_think_out out, void *ud)
{
    size_t h = t->n_hold;
    t->n_hold = 0;
    if (t->mode == SRV_THINK_DETECT) t->mode = SRV_THINK_CONTENT;
    emit(t, t->hold, h, out, ud);
}
