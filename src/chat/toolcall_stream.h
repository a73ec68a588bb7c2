/* toolcall_stream.h - Qwen3-style tool calls in a streamed answer: text
 * between "<tool_call>" and "</tool_call>" is a JSON object {"name": ...,
 * "arguments": {...}}, or Qwen3.5's XML form "<function=NAME>\n<parameter=K>\n
 * V\n</parameter>\n</function>" (values that parse as JSON are JSON, others
 * strings); everything else is content. Text that may be the
 * start of the opening tag is held back until it is known. A call whose
 * JSON does not parse, or has no string name, is given back as content.
 * Calls are collected (at most SL_TC_MAX); never prints. */
#ifndef SL_CHAT_TOOLCALL_STREAM_H
#define SL_CHAT_TOOLCALL_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice.h" /* sl_answer_call */

#define SL_TC_MAX 16

/* A call found: its name and the compact JSON text of its arguments (both
 * owned by the stream). */
typedef sl_answer_call sl_tc_call;


/* content: text that is not part of a call. */
typedef void (*sl_tc_out)(void *ud, const char *text, size_t len);

typedef struct sl_tc_stream {
    bool in_call;
    char hold[16];
    size_t n_hold;
    char *buf;       /* the current call's text */
    size_t n_buf, cap_buf;
    sl_tc_call calls[SL_TC_MAX];
    int n_calls;
    bool oom;
} sl_tc_stream;

void sl_tc_init(sl_tc_stream *s);
void sl_tc_feed(sl_tc_stream *s, const char *text, size_t len, sl_tc_out out, void *ud);
/* End of the answer: held text and an unclosed call go out as content. */
void sl_tc_finish(sl_tc_stream *s, sl_tc_out out, void *ud);
/* Frees the calls and buffers. */
void sl_tc_free(sl_tc_stream *s);

/* Adds a call (copies); false when full or out of memory. Also used for
 * harmony's calls (chat/harmony_stream.h). */
bool sl_tc_add(sl_tc_stream *s, const char *name, const char *args, size_t args_len);

#endif
