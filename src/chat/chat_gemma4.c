/* chat_gemma4.c - Gemma 4's chat format, read from its official template
 * (without tools): {bos}, a system turn when there is a system message or
 * thinking is on ("<|turn>system\n" + "<|think|>\n" when thinking + the
 * trimmed system text + "<turn|>\n"), then "<|turn>user\n{u}<turn|>\n" and
 * "<|turn>model\n{a}<turn|>\n" with contents trimmed and the model's
 * "<|channel>...<channel|>" thought parts removed; an assistant message
 * right after another continues the same model turn (no header). The
 * generation prompt is "<|turn>model\n", plus the empty thought channel
 * "<|channel>thought\n<channel|>" when thinking is off. */
#include "chat/chat_internal.h"

#include <stdlib.h>
#include <string.h>

#define put sl_sbuf_put
#define put_n sl_sbuf_put_n

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void put_trim(sl_sbuf *b, const char *s, size_t n)
{
    while (n && is_ws(s[n - 1])) n--;
    while (n && is_ws(*s)) s++, n--;
    put_n(b, s, n);
}

/* the template's strip_thinking: of each part between "<channel|>"s, the
 * text before "<|channel>"; then trimmed */
static void put_stripped(sl_sbuf *b, const char *c)
{
    sl_sbuf tmp = {0};
    const char *p = c;
    for (;;) {
        const char *close = strstr(p, "<channel|>");
        size_t n = close ? (size_t)(close - p) : strlen(p);
        const char *open = NULL;
        for (const char *q = p; q + 10 <= p + n; q++)
            if (!memcmp(q, "<|channel>", 10)) {
                open = q;
                break;
            }
        sl_sbuf_put_n(&tmp, p, open ? (size_t)(open - p) : n);
        if (!close) break;
        p = close + 10;
    }
    if (tmp.oom) b->oom = true;
    else if (tmp.p) put_trim(b, tmp.p, tmp.len);
    free(tmp.p);
}

void sl_chat_render_gemma4(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                           const sl_chat_role *ro, size_t n, bool cont, bool gen)
{
    size_t i = 0;
    if (!cont && (t->enable_thinking || (n > 0 && ro[0] == SL_ROLE_SYSTEM))) {
        put(b, "<|turn>system\n");
        if (t->enable_thinking) put(b, "<|think|>\n");
        if (n > 0 && ro[0] == SL_ROLE_SYSTEM) {
            put_trim(b, m[0].content, strlen(m[0].content));
            i = 1;
        }
        put(b, "<turn|>\n");
    }
    for (; i < n; i++) {
        bool model = ro[i] == SL_ROLE_ASSISTANT;
        if (!(model && i > 0 && ro[i - 1] == SL_ROLE_ASSISTANT)) {
            put(b, model ? "<|turn>model\n" : ro[i] == SL_ROLE_USER ? "<|turn>user\n"
                                                                   : "<|turn>system\n");
        }
        if (model) put_stripped(b, m[i].content);
        else put_trim(b, m[i].content, strlen(m[i].content));
        put(b, "<turn|>\n");
    }
    if (gen) {
        put(b, "<|turn>model\n");
        if (!t->enable_thinking) put(b, "<|channel>thought\n<channel|>");
    }
}
