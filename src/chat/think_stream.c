/* think_stream.c - see think_stream.h. */
#include "chat/think_stream.h"

#include <string.h>

static const char OPEN[] = "<think>", CLOSE[] = "</think>";

void sl_think_init(sl_think *t, bool enabled, bool inside)
{
    memset(t, 0, sizeof *t);
    t->mode = !enabled ? SL_THINK_OFF : inside ? SL_THINK_REASON_START : SL_THINK_DETECT;
}

static bool reasoning(const sl_think *t)
{
    return t->mode == SL_THINK_REASON || t->mode == SL_THINK_REASON_START;
}

static void emit(sl_think *t, const char *s, size_t n, sl_think_out out, void *ud)
{
    if (n) out(ud, reasoning(t), s, n);
}

void sl_think_feed(sl_think *t, const char *s, size_t n, sl_think_out out, void *ud)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        switch (t->mode) {
        case SL_THINK_OFF:
        case SL_THINK_CONTENT:
            emit(t, s + i, n - i, out, ud);
            return;
        case SL_THINK_DETECT:
            if (t->n_hold == 0 && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) continue;
            t->hold[t->n_hold++] = c;
            if (t->n_hold == sizeof OPEN - 1 && !memcmp(t->hold, OPEN, t->n_hold)) {
                t->n_hold = 0;
                t->mode = SL_THINK_REASON_START;
            } else if (memcmp(t->hold, OPEN, t->n_hold)) {
                t->mode = SL_THINK_CONTENT; /* no think block: all of it is content */
                size_t h = t->n_hold;
                t->n_hold = 0;
                emit(t, t->hold, h, out, ud);
            }
            break;
        case SL_THINK_REASON_START:
        case SL_THINK_CONTENT_START:
            if (c == '\n' || c == '\r' || (t->mode == SL_THINK_CONTENT_START && (c == ' ' || c == '\t')))
                continue;
            t->mode = t->mode == SL_THINK_REASON_START ? SL_THINK_REASON : SL_THINK_CONTENT;
            i--; /* look at c again in the new mode */
            break;
        case SL_THINK_REASON:
            if (t->n_hold || c == '<') {
                t->hold[t->n_hold++] = c;
                if (t->n_hold == sizeof CLOSE - 1 && !memcmp(t->hold, CLOSE, t->n_hold)) {
                    t->n_hold = 0;
                    t->mode = SL_THINK_CONTENT_START;
                } else if (memcmp(t->hold, CLOSE, t->n_hold)) {
                    /* not the tag: the first held byte is reasoning, look at the rest again */
                    size_t h = t->n_hold;
                    char tmp[sizeof t->hold];
                    memcpy(tmp, t->hold, h);
                    t->n_hold = 0;
                    emit(t, tmp, 1, out, ud);
                    sl_think_feed(t, tmp + 1, h - 1, out, ud);
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

void sl_think_flush(sl_think *t, sl_think_out out, void *ud)
{
    size_t h = t->n_hold;
    t->n_hold = 0;
    if (t->mode == SL_THINK_DETECT) t->mode = SL_THINK_CONTENT;
    emit(t, t->hold, h, out, ud);
}
