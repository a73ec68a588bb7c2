/* answer_stream.h - a chat answer split as it streams into reasoning,
 * content and tool calls, whatever the template: harmony's channels
 * (analysis -> reasoning, final and preambles -> content, commentary to
 * functions.NAME -> a call), or a thinking model's <think> block
 * (think_stream.h) with Qwen3-style <tool_call> JSON in the content when the
 * request declared tools. */
#ifndef SL_CHAT_ANSWER_STREAM_H
#define SL_CHAT_ANSWER_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "chat/harmony_stream.h"
#include "chat/toolcall_stream.h"
#include "chat/chat.h"
#include "chat/think_stream.h"

typedef struct sl_answer {
    bool harmony, tools;
    sl_think think;
    sl_harmony_stream hs;
    sl_tc_stream tc;         /* tool calls found (and the <tool_call> parser) */
    char *call_args;         /* harmony: the arguments of the call being read */
    size_t n_args;
    bool in_call;
    char call_name[128];
    sl_think_out out;
    void *ud;
} sl_answer;

/* Whether an answer to prompt (len bytes: the template's own rendering,
 * without a forced call's opening) keeps its reasoning in a <think> block
 * to split off: the prompt leaves one open (*inside: the answer starts as
 * reasoning), or the family opens one itself (Qwen3). */
bool sl_answer_thinks(sl_chat_family family, const char *prompt, size_t len, bool *inside);

/* harmony: the template is harmony; think_*: as sl_think_init; tools: the
 * request declared tools (parse <tool_call>). out receives reasoning and
 * content as they are known. */
void sl_answer_init(sl_answer *a, bool harmony, bool think_enabled, bool think_inside,
                     bool tools, sl_think_out out, void *ud);
void sl_answer_feed(sl_answer *a, const char *text, size_t len);
/* At the end: held text goes out; the calls are then in a->tc. */
void sl_answer_finish(sl_answer *a);
void sl_answer_free(sl_answer *a);

/* A whole answer's text split: [0] content, [1] reasoning (each malloc'd,
 * NUL-terminated, NULL when empty); oom when a part could not grow. */
typedef struct sl_answer_text {
    char *p[2];
    size_t n[2];
    bool oom;
} sl_answer_text;

/* Runs a whole answer (prime, may be NULL, then text[0..len)) through a
 * fresh parser *a (the flags as sl_answer_init's) into *out; the calls
 * are then in a->tc. The caller frees both (sl_answer_free,
 * sl_answer_text_free). */
void sl_answer_whole(sl_answer *a, sl_answer_text *out, bool harmony, bool think_enabled,
                     bool think_inside, bool tools, const char *prime, const char *text,
                     size_t len);
void sl_answer_text_free(sl_answer_text *t);

#endif
