/* think_stream.h - separating a thinking model's reasoning from its
 * answer in generated text, as it streams: the text between "<think>"
 * and "</think>" is reasoning (OpenAI-style servers return it as
 * reasoning_content), the rest is content. A reply may start inside the
 * block (the template opened it in the prompt) or open it itself as its
 * first non-blank text. The newlines that follow each tag are dropped.
 * Text that could be the start of a tag is held back until it is known. */
#ifndef SL_CHAT_THINK_STREAM_H
#define SL_CHAT_THINK_STREAM_H

#include <stdbool.h>
#include <stddef.h>

typedef enum sl_think_mode {
    SL_THINK_OFF = 0,       /* everything is content */
    SL_THINK_DETECT,        /* before any content: "<think>" may come */
    SL_THINK_REASON_START,  /* after "<think>": newlines dropped */
    SL_THINK_REASON,
    SL_THINK_CONTENT_START, /* after "</think>": blank space dropped */
    SL_THINK_CONTENT,
} sl_think_mode;

typedef struct sl_think {
    sl_think_mode mode;
    char hold[16];           /* a possible tag's first bytes */
    size_t n_hold;
} sl_think;

/* out receives each run of text with whether it is reasoning. */
typedef void (*sl_think_out)(void *ud, bool reasoning, const char *text, size_t len);

/* enabled: the template knows thinking; inside: the prompt left a think
 * block open (the reply starts as reasoning). */
void sl_think_init(sl_think *t, bool enabled, bool inside);
void sl_think_feed(sl_think *t, const char *s, size_t n, sl_think_out out, void *ud);
/* At the end: held-back text goes out as what it was. */
void sl_think_flush(sl_think *t, sl_think_out out, void *ud);

#endif
