/* chat_deepseek.c - DeepSeek's chat formats, read from the official
 * templates: V3.1 (thinking switch: "<think></think>" closes an empty think
 * block, "<think>" opens one), R1 (the generation prompt opens
 * "<think>\n"), and V3 (no think block). All start with BOS and the system
 * text without a header, then "<｜User｜>{u}" and
 * "<｜Assistant｜>{a}<｜end▁of▁sentence｜>", with earlier answers'
 * reasoning (up to "</think>") dropped. */
#include "chat/chat_internal.h"

#include <string.h>

#define put sl_sbuf_put
#define put_n sl_sbuf_put_n

static const char k_user[] = "<\xef\xbd\x9cUser\xef\xbd\x9c>";
static const char k_assistant[] = "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>";
static const char k_eos[] = "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";

void sl_chat_render_deepseek(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                             const sl_chat_role *ro, size_t n, bool cont, bool gen)
{
    const bool v31 = t->family == SL_CHAT_DEEPSEEK_V31;
    if (!cont) {
        /* V3.1 joins every system message with "\n\n"; V3 and R1 keep the last */
        const char *last = NULL;
        bool first = true;
        for (size_t i = 0; i < n; i++) {
            if (ro[i] != SL_ROLE_SYSTEM) continue;
            if (v31) {
                if (!first) put(b, "\n\n");
                put(b, m[i].content);
                first = false;
            }
            last = m[i].content;
        }
        if (!v31 && last) put(b, last);
    }
    bool last_user = false;
    for (size_t i = 0; i < n; i++) {
        const char *c = m[i].content;
        if (ro[i] == SL_ROLE_USER) {
            put(b, k_user);
            put(b, c);
            last_user = true;
        } else if (ro[i] == SL_ROLE_ASSISTANT) {
            const char *close = v31 ? strstr(c, "</think>") : NULL;
            if (!v31) /* split('</think>')[-1] */
                for (const char *p = strstr(c, "</think>"); p; p = strstr(p + 1, "</think>"))
                    close = p;
            if (v31 && last_user) {
                put(b, k_assistant);
                put(b, "<think></think>");
            } else if (!v31) {
                put(b, k_assistant);
            }
            last_user = false;
            put(b, close ? close + 8 : c);
            put(b, k_eos);
        }
    }
    if (!gen || (v31 && !last_user && (n > 0 || !cont))) return;
    put(b, k_assistant);
    if (v31) put(b, t->enable_thinking ? "<think>" : "<think></think>");
    else if (t->family == SL_CHAT_DEEPSEEK_R1) put(b, t->enable_thinking ? "<think>\n" : "<think>\n</think>");
}
