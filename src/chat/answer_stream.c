/* answer_stream.c - see answer_stream.h. */
#include "chat/answer_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool sl_answer_thinks(sl_chat_family family, const char *prompt, size_t len, bool *inside)
{
    *inside = (len >= 8 && !memcmp(prompt + len - 8, "<think>\n", 8)) ||
              (len >= 7 && !memcmp(prompt + len - 7, "<think>", 7));
    return *inside || family == SL_CHAT_QWEN3;
}

int sl_answer_create(sl_answer **ap, bool harmony, bool think_enabled, bool think_inside,
                     bool tools, sl_answer_out out, void *ud)
{
    sl_answer *a = *ap = calloc(1, sizeof *a);
    if (!a) return SL_ENOMEM;
    a->harmony = harmony;
    a->tools = tools;
    a->out = out;
    a->ud = ud;
    sl_think_init(&a->think, think_enabled, think_inside);
    sl_harmony_stream_init(&a->hs);
    sl_tc_init(&a->tc);
    return SL_OK;
}

void sl_answer_free(sl_answer *a)
{
    if (!a) return;
    sl_tc_free(&a->tc);
    free(a->call_args);
    free(a);
}

const sl_answer_call *sl_answer_calls(const sl_answer *a, int *n)
{
    *n = a->tc.n_calls;
    return a->tc.calls;
}

static void content_out(void *ud, const char *text, size_t len)
{
    sl_answer *a = ud;
    if (len) a->out(a->ud, false, text, len);
}

/* after the think splitter: content goes through the <tool_call> parser */
static void think_out(void *ud, bool reasoning, const char *text, size_t len)
{
    sl_answer *a = ud;
    if (reasoning || !a->tools) a->out(a->ud, reasoning, text, len);
    else sl_tc_feed(&a->tc, text, len, content_out, a);
}

static void harmony_event(void *ud, const sl_harmony_event *ev)
{
    sl_answer *a = ud;
    switch (ev->kind) {
    case SL_HARMONY_MSG_START:
        a->in_call = !strncmp(ev->recipient, "functions.", 10);
        if (a->in_call) {
            snprintf(a->call_name, sizeof a->call_name, "%s", ev->recipient + 10);
            a->n_args = 0;
        }
        break;
    case SL_HARMONY_TEXT:
        if (a->in_call) {
            char *p = realloc(a->call_args, a->n_args + ev->len + 1);
            if (!p) return;
            memcpy(p + a->n_args, ev->text, ev->len);
            a->n_args += ev->len;
            p[a->n_args] = '\0';
            a->call_args = p;
        } else if (ev->recipient[0]) {
            /* a call to a tool that is not a function (browser, python): not shown */
        } else {
            a->out(a->ud, ev->channel == SL_HARMONY_ANALYSIS, ev->text, ev->len);
        }
        break;
    case SL_HARMONY_MSG_END:
        if (a->in_call)
            sl_tc_add(&a->tc, a->call_name, a->call_args ? a->call_args : "{}",
                      a->call_args ? a->n_args : 2);
        a->in_call = false;
        break;
    }
}

void sl_answer_feed(sl_answer *a, const char *text, size_t len)
{
    if (a->harmony) sl_harmony_stream_feed(&a->hs, text, len, harmony_event, a);
    else sl_think_feed(&a->think, text, len, think_out, a);
}

void sl_answer_finish(sl_answer *a)
{
    if (a->harmony) {
        sl_harmony_stream_finish(&a->hs, harmony_event, a);
        return;
    }
    sl_think_flush(&a->think, think_out, a);
    if (a->tools) sl_tc_finish(&a->tc, content_out, a);
}

static void collect(void *ud, bool reasoning, const char *text, size_t len)
{
    sl_answer_text *b = ud;
    const int k = reasoning ? 1 : 0;
    if (!len) return;
    char *np = realloc(b->p[k], b->n[k] + len + 1);
    if (!np) {
        b->oom = true;
        return;
    }
    memcpy(np + b->n[k], text, len);
    b->n[k] += len;
    np[b->n[k]] = '\0';
    b->p[k] = np;
}

sl_answer *sl_answer_whole(sl_answer_text *out, bool harmony, bool think_enabled,
                           bool think_inside, bool tools, const char *prime, const char *text,
                           size_t len)
{
    memset(out, 0, sizeof *out);
    sl_answer *a;
    if (sl_answer_create(&a, harmony, think_enabled, think_inside, tools, collect, out)) {
        out->oom = true;
        return NULL;
    }
    if (prime) sl_answer_feed(a, prime, strlen(prime));
    sl_answer_feed(a, text ? text : "", len);
    sl_answer_finish(a);
    return a;
}

void sl_answer_text_free(sl_answer_text *t)
{
    free(t->p[0]);
    free(t->p[1]);
    memset(t, 0, sizeof *t);
}
