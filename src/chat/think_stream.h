/* server_think.h - separating a thinking model's reasoning from its
 * answer in generated text, as it streams: the text between "<think>"
 * and "</think>" is reasoning (OpenAI-style servers return it as
 * reasoning_content), the rest is content. A reply may start inside the
 * block (the template opened it in the prompt) or open it itself as its
 * first non-blank text. The newlines that follow each tag are dropped.
 * Text that could be the start of a tag is held back until it is known. */
#ifndef SL_APP_SERVER_THINK_H
#define SL_APP_SERVER_THINK_H

#include <stdbool.h>
#include <stddef.h>

typedef enum srv_think_mode {
    SRV_THINK_OFF = 0,       /* everything is content */
    SRV_THINK_DETECT,        /* before any content: "<think>" may come */
    SRV_THINK_REASON_START,  /* after "<think>": newlines dropped */
    SRV_THINK_REASON,
    SRV_THINK_CONTENT_START, /* after "</think>": blank space dropped */
    SRV_THINK_CONTENT,
} srv_think_mode;

typedef struct srv_think {
    srv_think_mode mode;
    char hold[16];           /* a possible tag's first bytes */
    size_t n_hold;
} srv_think;

/* out receives each run of text with whether it is reasoning. */
typedef void (*srv_think_out)(void *ud, bool reasoning, const char *text, size_t len);

/* enabled: the template knows thinking; inside: the prompt left a think
 * block open (the reply starts as reasoning). */
void srv_think_init(srv_think *t, bool enabled, bool inside);
void srv_think_feed(srv_think *t, const char *s, size_t n, srv_think_out out, void *ud);
/* At the end: held-back text goes out as what it was. */
void srv_think_flush(srv_think *t, srv_think_out out, void *ud);

#endif
