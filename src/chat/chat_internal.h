/* chat_internal.h - shared by the renderers of src/chat only: a growing
 * string buffer and the parsed roles of a conversation. */
#ifndef SL_CHAT_INTERNAL_H
#define SL_CHAT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "chat/chat.h"

typedef struct sl_sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sl_sbuf;

/* Appends s[0..n) (a failed allocation sets oom; later appends do nothing). */
void sl_sbuf_put_n(sl_sbuf *b, const char *s, size_t n);
void sl_sbuf_put(sl_sbuf *b, const char *s);

typedef enum sl_chat_role {
    SL_ROLE_SYSTEM,
    SL_ROLE_USER,
    SL_ROLE_ASSISTANT,
    SL_ROLE_DEVELOPER,
    SL_ROLE_TOOL,
} sl_chat_role;

/* Harmony (chat_harmony.c): the whole conversation or a continuation, with
 * the tools array (a parsed jansson array, or NULL). */
int sl_chat_render_harmony(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                           const sl_chat_role *ro, size_t n, bool cont, const void *tools,
                           sl_err *err);

/* Qwen3.5 / 3.6 (chat_qwen35.c): the whole conversation or a continuation
 * with the tools array (a parsed jansson array, or NULL). SL_EINVAL for a
 * system message that is not first, or tool call arguments that are not a
 * JSON object. */
int sl_chat_render_qwen35(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                          const sl_chat_role *ro, size_t n, bool cont, const void *tools,
                          sl_err *err);

/* The reasoning and the answer of an assistant content c[0..cn) as the
 * Qwen-style templates split it when it holds "</think>":
 *   reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
 *   answer    = content.split('</think>')[-1].lstrip('\n')
 * Without "</think>": *r = NULL, the answer is all of c. Pointers into c. */
void sl_chat_split_think(const char *c, size_t cn, const char **r, size_t *rn,
                         const char **body, size_t *bn);

/* DeepSeek V3 / V3.1 / R1 (chat_deepseek.c), Kimi K2 (chat_kimi.c), GLM-4.5
 * to 4.7 (chat_glm.c): system, user and assistant turns (tools are refused
 * before these are called); the generation prompt when gen. */
void sl_chat_render_deepseek(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                             const sl_chat_role *ro, size_t n, bool cont, bool gen);
void sl_chat_render_kimi(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                         const sl_chat_role *ro, size_t n, bool cont, bool gen);
void sl_chat_render_gemma4(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                           const sl_chat_role *ro, size_t n, bool cont, bool gen);
void sl_chat_render_glm(sl_sbuf *b, const sl_chat_template *t, const sl_chat_turn *m,
                        const sl_chat_role *ro, size_t n, bool cont, bool gen);

/* Qwen3's tools system block (chat_tools.c): "<|im_start|>system\n" + system
 * text + "\n\n" (if any) + the tool list + the calling instructions +
 * "<|im_end|>\n". */
int sl_chat_put_qwen3_tools(sl_sbuf *b, const char *system, const void *tools, sl_err *err);

/* Qwen3's form of one assistant tool call: "<tool_call>\n{"name": "N",
 * "arguments": ARGS}\n</tool_call>" (ARGS as given). */
void sl_chat_put_qwen3_call(sl_sbuf *b, const sl_chat_tool_call *c);

#endif
