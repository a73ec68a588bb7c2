/* synth_vocab.h - the byte-level BPE tokenizer written into generated models.
 *
 * Owns: the GPT-2 byte-to-unicode mapping, a small deterministic BPE training
 * run over a built-in English text, the layout of the vocabulary and the
 * ChatML template. Knows nothing about GGUF files or tensors.
 *
 * Vocabulary layout (ids):
 *   0 .. 255                 the 256 byte tokens, in byte order, each spelt
 *                            with GPT-2's byte-to-unicode mapping (type 1)
 *   256 .. 256+M-1           one token per learnt merge whose result was new,
 *                            in the order learnt (type 1)
 *   then                     <|endoftext|> <|im_start|> <|im_end|> (type 3)
 *   then up to n_vocab       <|pad_0|> <|pad_1|> ... (type 5, unused)
 * M is the number of merges learnt before the budget (n_vocab - 259, capped
 * at SL_SYNTH_MAX_MERGES) runs out or no pair is left (every piece of the
 * corpus is then one token: M = 674 for the built-in text). Because
 * training is greedy, a smaller vocabulary has a prefix of a larger one's
 * merges.
 *
 * Pre-tokenizer: the text is split with the "qwen2" pattern
 * (tokenizer.ggml.pre = "qwen2"), i.e. the PCRE2 regex SL_SYNTH_PRE_PATTERN
 * with UTF and Unicode properties; merges never cross those pieces. */
#ifndef SL_SYNTH_SYNTH_VOCAB_H
#define SL_SYNTH_SYNTH_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define SL_SYNTH_N_SPECIAL 3
/* Smallest vocabulary: 256 bytes + 3 specials + 1 merge. */
#define SL_SYNTH_VOCAB_MIN 260u
#define SL_SYNTH_MAX_MERGES 4000u

/* GGUF token types (llama.cpp's llama_token_type). */
#define SL_SYNTH_TOK_NORMAL 1
#define SL_SYNTH_TOK_CONTROL 3
#define SL_SYNTH_TOK_UNUSED 5

/* Qwen2's split pattern, as llama.cpp applies it for pre = "qwen2". */
#define SL_SYNTH_PRE_NAME "qwen2"
#define SL_SYNTH_PRE_PATTERN                                                      \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"         \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

typedef struct sl_synth_vocab {
    uint32_t n_tokens;       /* == n_vocab requested */
    char **tokens;           /* n_tokens NUL-terminated UTF-8 strings */
    int32_t *types;          /* n_tokens token types */
    uint32_t n_merges;
    char **merges;           /* n_merges "left right" strings, rank order */
    uint32_t n_learnt;       /* tokens added by merges (M above) */
    int32_t eot_id;          /* <|endoftext|> */
    int32_t im_start_id;
    int32_t im_end_id;
    int32_t bos_id, eos_id, pad_id; /* bos = pad = <|endoftext|>, eos = <|im_end|> */
} sl_synth_vocab;

/* Trains and lays out a vocabulary of exactly n_vocab tokens
 * (>= SL_SYNTH_VOCAB_MIN). Deterministic. On success v owns its arrays;
 * release with sl_synth_vocab_free. Fails on allocation or a PCRE2 error. */
int sl_synth_vocab_build(sl_synth_vocab *v, uint32_t n_vocab, sl_err *err);

/* Frees the arrays; safe on a zeroed or freed vocab. */
void sl_synth_vocab_free(sl_synth_vocab *v);

/* The built-in training text (static, NUL-terminated). */
const char *sl_synth_corpus(void);

/* ChatML Jinja template written as tokenizer.chat_template (static). */
const char *sl_synth_chat_template(void);

/* Writes the GPT-2 byte-to-unicode spelling of byte b (1 or 2 UTF-8 bytes)
 * plus a NUL into out[3]; returns the length. Printable bytes
 * '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the other 68
 * take code points 256, 257, ... in byte order. */
int sl_synth_byte_to_utf8(uint8_t b, char out[3]);

#endif
