/* chat_kimi.c - Kimi K2's chat format, read from the official templates
 * (K2-Instruct and K2-Thinking): "<|im_system|>system<|im_middle|>...",
 * "<|im_user|>user<|im_middle|>...", "<|im_assistant|>assistant<|im_middle|>
 * ..." each closed by "<|im_end|>", a default system message when the
 * conversation has none. The thinking model writes "<think></think>" before
 * assistant answers up to the last one without tool calls, and
 * "<think>{reasoning}</think>" on those after it. */
#include "chat/chat_internal.h"

#include <string.h>

#define put sl_sbuf_put

void sl_chat_render_kimi(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                         const sl_chat_role *ro, size_t n, bool cont, bool gen)
{
    const bool thinking = t->family == SL_CHAT_KIMI_THINKING;
    if (!cont && (n == 0 ? thinking : ro[0] != SL_ROLE_SYSTEM)) {
        put(b, "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by "
               "Moonshot AI.<|im_end|>");
        if (!thinking) put(b, "\n"); /* the Instruct template keeps this newline */
    }
    size_t last_plain = (size_t)-1; /* last assistant answer without tool calls */
    for (size_t i = 0; i < n; i++)
        if (ro[i] == SL_ROLE_ASSISTANT && !m[i].n_tool_calls) last_plain = i;
    for (size_t i = 0; i < n; i++) {
        switch (ro[i]) {
        case SL_ROLE_USER: put(b, "<|im_user|>user<|im_middle|>"); break;
        case SL_ROLE_ASSISTANT: put(b, "<|im_assistant|>assistant<|im_middle|>"); break;
        default: put(b, "<|im_system|>system<|im_middle|>"); break;
        }
        if (thinking && ro[i] == SL_ROLE_ASSISTANT) {
            bool suffix = last_plain == (size_t)-1 || i > last_plain;
            put(b, "<think>");
            if (suffix && m[i].reasoning) put(b, m[i].reasoning);
            put(b, "</think>");
        }
        put(b, m[i].content);
        put(b, "<|im_end|>");
    }
    if (gen) put(b, "<|im_assistant|>assistant<|im_middle|>");
}
