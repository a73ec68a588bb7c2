/* harmony_stream.h - splitting a harmony reply (gpt-oss) into its messages
 * as it streams in, for front-ends that show channels apart.
 *
 * The reply follows a prompt that ends with "<|start|>assistant", so it
 * begins inside a message header. A message is
 *   {header}<|message|>{content}<|end|>   (or <|return|>, <|call|>)
 * and the next one starts with "<|start|>"; the header holds the role, then
 * "<|channel|>NAME", a recipient " to=NAME" (in the role part or after the
 * channel) and "<|constrain|>TYPE". The text fed is the decoded reply with
 * the special tokens written as their text (decode with specials); a
 * content that only looks like the start of a marker is held back until it
 * is known. A reply that writes no header (no "<|message|>" within 255
 * bytes, or none before its end) is passed through as final content.
 * Events: the start of a message's content (channel and
 * recipient known), content text, the end of a message.
 *
 * Knows nothing about tokenizers or output; never allocates. */
#ifndef SL_CHAT_HARMONY_STREAM_H
#define SL_CHAT_HARMONY_STREAM_H

#include <stdbool.h>
#include <stddef.h>

typedef enum sl_harmony_channel {
    SL_HARMONY_FINAL = 0,   /* also a message without a channel */
    SL_HARMONY_ANALYSIS,
    SL_HARMONY_COMMENTARY,
    SL_HARMONY_OTHER,
} sl_harmony_channel;

typedef enum sl_harmony_kind {
    SL_HARMONY_MSG_START,   /* content begins: channel and recipient are known */
    SL_HARMONY_TEXT,        /* text[0..len) of the content */
    SL_HARMONY_MSG_END,     /* the message ended (marker, or the end of the reply) */
} sl_harmony_kind;

typedef struct sl_harmony_event {
    sl_harmony_kind kind;
    sl_harmony_channel channel;
    const char *recipient; /* "" or e.g. "functions.get_weather" */
    const char *text;
    size_t len;
} sl_harmony_event;

typedef void (*sl_harmony_cb)(void *ud, const sl_harmony_event *ev);

typedef struct sl_harmony_stream {
    int state;                 /* private */
    char header[256];          /* the current header (cut at 255 bytes) */
    size_t n_header;
    char hold[16];             /* content that may be the start of a marker */
    size_t n_hold;
    sl_harmony_channel channel;
    char recipient[128];
} sl_harmony_stream;

/* Starts a reply (inside the first message's header). */
void sl_harmony_stream_init(sl_harmony_stream *s);
void sl_harmony_stream_feed(sl_harmony_stream *s, const char *text, size_t len, sl_harmony_cb cb,
                            void *ud);
/* The end of the reply: held text goes out, an open message ends. */
void sl_harmony_stream_finish(sl_harmony_stream *s, sl_harmony_cb cb, void *ud);

#endif
