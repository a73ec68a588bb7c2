/* gen_talk.h - what `sluice run` and `sluice chat` add to gen.h (and gen.c
 * implements): the model's chat template as src/chat's renderer, and a
 * harmony answer printed by channel. */
#ifndef SL_APP_GEN_TALK_H
#define SL_APP_GEN_TALK_H

#include <stdbool.h>
#include <stdio.h>

#include "chat/chat.h"
#include "chat/harmony_stream.h"
#include "gen.h"

/* The model's chat template as src/chat's renderer (run and chat render
 * with it; the server with the public sl_chat): the same detection, BOS and
 * EOS texts as sl_chat_create. name: override or NULL; effort: NULL = medium. The one
 * place app code reads the model's metadata directly (model/model.h).
 * Free with sl_chat_template_free. */
int gen_chat_template(const sl_model *m, const char *name, bool thinking, const char *effort,
                      sl_chat_template *t, sl_err *err);

/* A harmony answer printed by channel (gpt-oss): its text (decoded with
 * special tokens) is split into messages; the final channel and preambles
 * go to dst, the analysis channel and tool calls only with show_reasoning,
 * each such message on lines of its own after a "[analysis]" or
 * "[call NAME]" tag. */
struct gen_harmony_out {
    FILE *dst;
    bool show_reasoning;
    bool hidden_msg, tagged;
    sl_harmony_stream hs;
};

void gen_harmony_init(gen_harmony_out *h, FILE *dst, bool show_reasoning);
/* n bytes of answer text, split and printed by channel. */
void gen_harmony_feed(gen_harmony_out *h, const char *buf, size_t n);
/* The end of the answer: held text goes out. */
void gen_harmony_finish(gen_harmony_out *h);

#endif
