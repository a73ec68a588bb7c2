/* harmony_stream.c - see harmony_stream.h. */
#include "chat/harmony_stream.h"

#include <stdio.h>
#include <string.h>

enum { ST_HEADER, ST_CONTENT, ST_BETWEEN };

static const char MSG[] = "<|message|>", START[] = "<|start|>";
static const char *const k_ends[] = {"<|end|>", "<|return|>", "<|call|>", "<|start|>"};

void sl_harmony_stream_init(sl_harmony_stream *s)
{
    memset(s, 0, sizeof *s);
    s->state = ST_HEADER;
}

static void emit(sl_harmony_stream *s, sl_harmony_kind k, const char *t, size_t n,
                 sl_harmony_cb cb, void *ud)
{
    if (k == SL_HARMONY_TEXT && n == 0) return;
    sl_harmony_event ev = {k, s->channel, s->recipient, t, n};
    cb(ud, &ev);
}

/* The word at p (up to whitespace, '<' or the end) into dst. */
static void word(const char *p, const char *end, char *dst, size_t cap)
{
    size_t n = 0;
    while (p < end && *p != ' ' && *p != '\t' && *p != '\n' && *p != '<' && n + 1 < cap)
        dst[n++] = *p++;
    dst[n] = '\0';
}

static void parse_header(sl_harmony_stream *s)
{
    const char *h = s->header, *end = h + s->n_header;
    s->channel = SL_HARMONY_FINAL;
    s->recipient[0] = '\0';
    const char *c = strstr(h, "<|channel|>");
    if (c) {
        char name[32];
        word(c + strlen("<|channel|>"), end, name, sizeof name);
        s->channel = !strcmp(name, "analysis")     ? SL_HARMONY_ANALYSIS
                     : !strcmp(name, "commentary") ? SL_HARMONY_COMMENTARY
                     : !strcmp(name, "final")      ? SL_HARMONY_FINAL
                                                   : SL_HARMONY_OTHER;
    }
    const char *to = strstr(h, "to=");
    if (to) word(to + 3, end, s->recipient, sizeof s->recipient);
}

/* Whether hold[0..n) is a prefix of a marker that can end content. */
static int marker_state(const char *hold, size_t n)
{
    for (size_t i = 0; i < sizeof k_ends / sizeof *k_ends; i++) {
        size_t l = strlen(k_ends[i]);
        if (n <= l && !memcmp(hold, k_ends[i], n)) return n == l ? (int)i + 1 : -1;
    }
    return 0; /* not a marker */
}

static void feed_char(sl_harmony_stream *s, char ch, sl_harmony_cb cb, void *ud);

static void feed_char(sl_harmony_stream *s, char ch, sl_harmony_cb cb, void *ud)
{
    switch (s->state) {
    case ST_BETWEEN:
        /* expect "<|start|>"; anything else starts a header directly */
        s->hold[s->n_hold++] = ch;
        if (memcmp(s->hold, START, s->n_hold)) {
            s->state = ST_HEADER;
            s->n_header = 0;
            size_t h = s->n_hold;
            s->n_hold = 0;
            for (size_t i = 0; i < h; i++) feed_char(s, s->hold[i], cb, ud);
        } else if (s->n_hold == sizeof START - 1) {
            s->n_hold = 0;
            s->state = ST_HEADER;
            s->n_header = 0;
        }
        return;
    case ST_HEADER:
        if (s->n_header + 1 >= sizeof s->header) {
            /* no header is this long: the text is not in the format (a model
             * that does not write headers); let it through as final content */
            s->channel = SL_HARMONY_FINAL;
            s->recipient[0] = '\0';
            s->state = ST_CONTENT;
            emit(s, SL_HARMONY_MSG_START, "", 0, cb, ud);
            emit(s, SL_HARMONY_TEXT, s->header, s->n_header, cb, ud);
            s->n_header = 0;
            feed_char(s, ch, cb, ud);
            return;
        }
        s->header[s->n_header++] = ch;
        s->header[s->n_header] = '\0';
        if (s->n_header >= sizeof MSG - 1 &&
            !memcmp(s->header + s->n_header - (sizeof MSG - 1), MSG, sizeof MSG - 1)) {
            s->n_header -= sizeof MSG - 1;
            s->header[s->n_header] = '\0';
            parse_header(s);
            s->state = ST_CONTENT;
            emit(s, SL_HARMONY_MSG_START, "", 0, cb, ud);
        }
        return;
    case ST_CONTENT:
        if (s->n_hold == 0 && ch != '<') {
            emit(s, SL_HARMONY_TEXT, &ch, 1, cb, ud);
            return;
        }
        s->hold[s->n_hold++] = ch;
        int m = marker_state(s->hold, s->n_hold);
        if (m > 0) {
            s->n_hold = 0;
            emit(s, SL_HARMONY_MSG_END, "", 0, cb, ud);
            s->channel = SL_HARMONY_FINAL;
            s->recipient[0] = '\0';
            s->state = ST_HEADER;
            s->n_header = 0;
            if (m != 4) s->state = ST_BETWEEN; /* after <|end|> & co, a <|start|> */
        } else if (m == 0) {
            /* not a marker: the first held byte is text, the rest looked at again */
            char tmp[sizeof s->hold];
            size_t h = s->n_hold;
            memcpy(tmp, s->hold, h);
            s->n_hold = 0;
            emit(s, SL_HARMONY_TEXT, tmp, 1, cb, ud);
            for (size_t i = 1; i < h; i++) feed_char(s, tmp[i], cb, ud);
        }
        return;
    }
}

void sl_harmony_stream_feed(sl_harmony_stream *s, const char *text, size_t len, sl_harmony_cb cb,
                            void *ud)
{
    size_t i = 0;
    while (i < len) {
        if (s->state == ST_CONTENT && s->n_hold == 0) {
            /* a run of plain text up to the next '<' in one event */
            size_t j = i;
            while (j < len && text[j] != '<') j++;
            emit(s, SL_HARMONY_TEXT, text + i, j - i, cb, ud);
            if (j == len) return;
            i = j;
        }
        feed_char(s, text[i++], cb, ud);
    }
}

void sl_harmony_stream_finish(sl_harmony_stream *s, sl_harmony_cb cb, void *ud)
{
    if (s->state == ST_HEADER && s->n_header > 0 && !strstr(s->header, "<|channel|>")) {
        /* a reply that never wrote a header: its text is the answer */
        s->channel = SL_HARMONY_FINAL;
        s->recipient[0] = '\0';
        s->state = ST_CONTENT;
        emit(s, SL_HARMONY_MSG_START, "", 0, cb, ud);
        emit(s, SL_HARMONY_TEXT, s->header, s->n_header, cb, ud);
        s->n_header = 0;
    }
    if (s->state == ST_CONTENT) {
        size_t h = s->n_hold;
        s->n_hold = 0;
        emit(s, SL_HARMONY_TEXT, s->hold, h, cb, ud);
        emit(s, SL_HARMONY_MSG_END, "", 0, cb, ud);
    }
    s->n_hold = 0;
    s->state = ST_BETWEEN;
}
