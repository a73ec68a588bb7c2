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
#include "sluice.h"

/* The parser behind sluice.h's sl_answer_* (declared there). */
struct sl_answer {
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
};

#endif
