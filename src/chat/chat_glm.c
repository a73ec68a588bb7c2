/* chat_glm.c - GLM-4.5 / 4.6 and GLM-4.7's chat formats, read from their
 * official templates: "[gMASK]<sop>", then "<|system|>", "<|user|>",
 * "<|assistant|>" headers with no closing marker (the model ends its turn
 * by writing the next header, <|user|> or <|observation|>). Assistant turns
 * carry an empty think block, or their reasoning when they follow the last
 * user message. 4.5/4.6 put "\n" after each header and mark user messages
 * "/nothink" when thinking is off; 4.7 writes no newlines and opens
 * (thinking) or closes the think block in the generation prompt. */
#include "chat/chat_internal.h"

#include <string.h>

#define put sl_sbuf_put
#define put_n sl_sbuf_put_n

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Python's str.strip() for ASCII whitespace */
static const char *strip(const char *s, size_t *n)
{
    while (*n && is_space(s[*n - 1])) (*n)--;
    while (*n && is_space(*s)) s++, (*n)--;
    return s;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), tn = strlen(tail);
    return n >= tn && !memcmp(s + n - tn, tail, tn);
}

void sl_chat_render_glm(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                        const sl_chat_role *ro, size_t n, bool cont, bool gen)
{
    const bool v47 = t->family == SL_CHAT_GLM47;
    const char *nl = v47 ? "" : "\n";
    if (!cont) put(b, "[gMASK]<sop>");
    size_t last_user = (size_t)-1;
    for (size_t i = 0; i < n; i++)
        if (ro[i] == SL_ROLE_USER) last_user = i;
    for (size_t i = 0; i < n; i++) {
        const char *c = m[i].content;
        if (ro[i] == SL_ROLE_USER) {
            put(b, "<|user|>");
            put(b, nl);
            put(b, c);
            if (!v47 && !t->enable_thinking && !ends_with(c, "/nothink")) put(b, "/nothink");
        } else if (ro[i] == SL_ROLE_ASSISTANT) {
            size_t cn = strlen(c), rn = 0;
            const char *r = NULL;
            if (m[i].reasoning) r = m[i].reasoning, rn = strlen(r);
            else sl_chat_split_think(c, cn, &r, &rn, &c, &cn);
            if (r) r = strip(r, &rn);
            bool after = last_user == (size_t)-1 || i > last_user;
            put(b, "<|assistant|>");
            if (after && rn) {
                put(b, nl);
                put(b, "<think>");
                put_n(b, r, rn);
                put(b, "</think>");
            } else {
                put(b, v47 ? "</think>" : "\n<think></think>");
            }
            c = strip(c, &cn);
            if (cn) {
                put(b, nl);
                put_n(b, c, cn);
            }
        } else { /* system (developer read as system) */
            put(b, "<|system|>");
            put(b, nl);
            put(b, c);
        }
    }
    if (!gen) return;
    put(b, "<|assistant|>");
    if (v47) put(b, t->enable_thinking ? "<think>" : "</think>");
    else if (!t->enable_thinking) put(b, "\n<think></think>");
}
