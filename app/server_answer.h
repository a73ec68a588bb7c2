/* server_answer.h - a chat answer split as it streams into reasoning,
 * content and tool calls, whatever the template: harmony's channels
 * (analysis -> reasoning, final and preambles -> content, commentary to
 * functions.NAME -> a call), or a thinking model's <think> block
 * (server_think.h) with Qwen3-style <tool_call> JSON in the content when the
 * request declared tools. */
#ifndef SL_APP_SERVER_ANSWER_H
#define SL_APP_SERVER_ANSWER_H

#include <stdbool.h>

#include "chat/harmony_stream.h"
#include "chat/toolcall_stream.h"
#include "server_think.h"

typedef struct srv_answer {
    bool harmony, tools;
    srv_think think;
    sl_harmony_stream hs;
    sl_tc_stream tc;         /* tool calls found (and the <tool_call> parser) */
    char *call_args;         /* harmony: the arguments of the call being read */
    size_t n_args;
    bool in_call;
    char call_name[128];
    srv_think_out out;
    void *ud;
} srv_answer;

/* harmony: the template is harmony; think_*: as srv_think_init; tools: the
 * request declared tools (parse <tool_call>). out receives reasoning and
 * content as they are known. */
void srv_answer_init(srv_answer *a, bool harmony, bool think_enabled, bool think_inside,
                     bool tools, srv_think_out out, void *ud);
void srv_answer_feed(srv_answer *a, const char *text, size_t len);
/* At the end: held text goes out; the calls are then in a->tc. */
void srv_answer_finish(srv_answer *a);
void srv_answer_free(srv_answer *a);

/* A whole answer's text split: [0] content, [1] reasoning (each malloc'd,
 * NUL-terminated, NULL when empty); oom when a part could not grow. */
typedef struct srv_answer_text {
    char *p[2];
    size_t n[2];
    bool oom;
} srv_answer_text;

/* Runs a whole answer (prime, may be NULL, then text[0..len)) through a
 * fresh parser *a (the flags as srv_answer_init's) into *out; the calls
 * are then in a->tc. The caller frees both (srv_answer_free,
 * srv_answer_text_free). */
void srv_answer_whole(srv_answer *a, srv_answer_text *out, bool harmony, bool think_enabled,
                      bool think_inside, bool tools, const char *prime, const char *text,
                      size_t len);
void srv_answer_text_free(srv_answer_text *t);

#endif
