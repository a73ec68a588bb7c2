/* tokenizer.h - text <-> token ids for the vocabularies that GGUF files carry.
 *
 * Owns: building a tokenizer from GGUF metadata (or from an in-memory
 * description, which tests use), encoding text to ids, and decoding ids back
 * to bytes. Two algorithms:
 *   - byte-level BPE (tokenizer.ggml.model = "gpt2"): the text is split by the
 *     pre-tokenizer named in tokenizer.ggml.pre (PCRE2 patterns), each piece
 *     is mapped through the GPT-2 byte<->unicode table and merged by rank;
 *   - SentencePiece BPE (tokenizer.ggml.model = "llama"): a space prefix,
 *     spaces as U+2581, merges by highest score, <0xNN> byte fallback;
 *   - Gemma 4's SentencePiece-style BPE (tokenizer.ggml.model = "gemma4",
 *     or "gpt2" with the pre-tokenizer "gemma4"): spaces as U+2581, no
 *     space prefix, the text cut into runs of newlines and of the rest,
 *     merges by rank over raw UTF-8 (no byte mapping), <0xNN> fallback;
 *     BOS always added.
 * Control and user-defined tokens are cut out of the raw text first (longest
 * text first); user-defined ones always, control ones only when asked.
 * The behaviour follows llama.cpp's tokenizer so its test vectors hold.
 *
 * Must not know: models, tensors, sampling, chat templates, the terminal.
 *
 * Thread safety: a built tokenizer is immutable; encode and the piece
 * accessors may run concurrently. A decoder belongs to one thread. */
#ifndef SL_TOK_TOKENIZER_H
#define SL_TOK_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "util/status.h"

typedef struct sl_tokenizer sl_tokenizer;

/* An absent token id (no BOS in the vocabulary, no such text, ...). */
#define SL_TOK_NONE (-1)

typedef enum sl_tok_model {
    SL_TOK_MODEL_BPE = 1, /* "gpt2": byte-level BPE */
    SL_TOK_MODEL_SPM = 2, /* "llama": SentencePiece */
    SL_TOK_MODEL_GEMMA4 = 3, /* "gemma4": SentencePiece-style BPE (raw UTF-8) */
} sl_tok_model;

/* Token types, numbered as in tokenizer.ggml.token_type. */
typedef enum sl_tok_type {
    SL_TOK_TYPE_UNDEFINED = 0,
    SL_TOK_TYPE_NORMAL = 1,
    SL_TOK_TYPE_UNKNOWN = 2,
    SL_TOK_TYPE_CONTROL = 3,
    SL_TOK_TYPE_USER_DEFINED = 4,
    SL_TOK_TYPE_UNUSED = 5,
    SL_TOK_TYPE_BYTE = 6,
} sl_tok_type;

typedef struct sl_tok_str {
    const char *ptr;
    size_t len;
} sl_tok_str;

/* A vocabulary described independently of where it comes from. Optional
 * fields use NULL, or -1 for "absent" ids and booleans, and then get the
 * defaults llama.cpp uses for the model type (SPM: bos 1, eos 2, unk 0,
 * add_bos true, space prefix true; BPE: no BOS/EOS, add_bos false except
 * for the llama3 pre-tokenizer). Nothing is retained: build copies. */
typedef struct sl_tok_spec {
    const char *model;        /* "gpt2", "llama" or "gemma4" */
    const char *pre;          /* tokenizer.ggml.pre; NULL if absent */
    const char *name;         /* general.name (per-model quirks); may be NULL */
    uint32_t n_tokens;
    const sl_tok_str *tokens; /* n_tokens texts */
    const float *scores;      /* n_tokens, or NULL (all 0) */
    const int32_t *types;     /* n_tokens sl_tok_type values, or NULL (normal) */
    uint32_t n_merges;
    const sl_tok_str *merges; /* "left right", rank = index (BPE only) */
    int64_t bos, eos, eot, eom, unk, pad;        /* -1: absent */
    int add_bos, add_eos, add_space_prefix;      /* -1: absent, else 0/1 */
    /* fill-in-the-middle pad, repository and file-separator ids (-1:
     * absent): llama.cpp ends generation at them, found by text if absent */
    int64_t fim_pad, fim_rep, fim_sep;
} sl_tok_spec;

/* Sets every optional field of spec to "absent". */
void sl_tok_spec_init(sl_tok_spec *spec);

/* Builds a tokenizer from a description. On success *out owns copies of all
 * strings. Fails with SL_EUNSUPPORTED for other tokenizer models, SL_EFORMAT
 * for an inconsistent vocabulary (no tokens, add_bos/add_eos without the
 * token), SL_ENOMEM. Special ids out of range are ignored with a warning
 * (sl_tokenizer_id_warning); merges that are not "left right" or whose
 * result is not a token are kept as llama.cpp keeps them (unusable, or
 * falling back to single-byte tokens). */
int sl_tokenizer_build(sl_tokenizer **out, const sl_tok_spec *spec, sl_err *err);

/* Builds a tokenizer from the tokenizer.ggml.* metadata of an open GGUF file
 * (a vocabulary-only file is enough). The GGUF handle may be closed
 * afterwards. Errors name the key and the value seen. */
int sl_tokenizer_load(sl_tokenizer **out, const sl_gguf *g, sl_err *err);

/* Frees everything; NULL is allowed. */
void sl_tokenizer_free(sl_tokenizer *tok);

/* ---- properties ---------------------------------------------------------- */

sl_tok_model sl_tokenizer_model(const sl_tokenizer *tok);
uint32_t sl_tokenizer_n_tokens(const sl_tokenizer *tok);
/* Name of the pre-tokenizer pattern set in use ("gpt-2", "llama3", ...;
 * "none" for SentencePiece). */
const char *sl_tokenizer_pre_name(const sl_tokenizer *tok);
/* NULL, or a sentence saying the file's pre-tokenizer was missing or unknown
 * and the default patterns are used instead (for the CLI to warn). */
const char *sl_tokenizer_pre_warning(const sl_tokenizer *tok);
/* NULL, or sentences (joined by "; ") naming each special-token id in the
 * metadata (tokenizer.ggml.bos_token_id, ...) that lies outside the
 * vocabulary: it was ignored and the model type's default kept, as
 * llama.cpp does (for the CLI to warn). Owned by tok. */
const char *sl_tokenizer_id_warning(const sl_tokenizer *tok);

/* Special ids, SL_TOK_NONE if the vocabulary has none. */
int32_t sl_tokenizer_bos(const sl_tokenizer *tok);
int32_t sl_tokenizer_eos(const sl_tokenizer *tok);
int32_t sl_tokenizer_eot(const sl_tokenizer *tok);
int32_t sl_tokenizer_unk(const sl_tokenizer *tok);
int32_t sl_tokenizer_pad(const sl_tokenizer *tok);
/* Whether the model expects BOS / EOS around a prompt (from metadata). */
bool sl_tokenizer_add_bos(const sl_tokenizer *tok);
bool sl_tokenizer_add_eos(const sl_tokenizer *tok);

/* Per-token queries; an out-of-range id answers false / UNDEFINED / NULL. */
sl_tok_type sl_tokenizer_token_type(const sl_tokenizer *tok, int32_t id);
bool sl_tokenizer_is_control(const sl_tokenizer *tok, int32_t id);
/* End of generation: EOS, EOT, EOM and control tokens whose text is a known
 * end-of-turn marker (<|im_end|>, <|eot_id|>, <|endoftext|>, ...). */
bool sl_tokenizer_is_eog(const sl_tokenizer *tok, int32_t id);
/* The token's text as stored in the vocabulary (byte-mapped for BPE, with
 * U+2581 for SPM); *len receives its length. Owned by tok. */
const char *sl_tokenizer_token_text(const sl_tokenizer *tok, int32_t id, size_t *len);
/* The id whose vocabulary text is exactly text[0..len), or SL_TOK_NONE. */
int32_t sl_tokenizer_find(const sl_tokenizer *tok, const char *text, size_t len);

/* ---- encoding ------------------------------------------------------------ */

enum {
    SL_TOK_ADD_BOS = 1u << 0,       /* prepend BOS (if the vocabulary has one) */
    SL_TOK_ADD_EOS = 1u << 1,       /* append EOS (if the vocabulary has one) */
    SL_TOK_PARSE_SPECIAL = 1u << 2, /* match control tokens' text in the input */
};

/* A growable id list owned by the caller. Zero-initialise, free with
 * sl_tok_ids_free. */
typedef struct sl_tok_ids {
    int32_t *ids;
    size_t n;
    size_t cap;
} sl_tok_ids;

void sl_tok_ids_free(sl_tok_ids *v);

/* Encodes text[0..len) (any bytes; invalid UTF-8 is tokenized as U+FFFD by
 * BPE and as byte tokens by SPM) and APPENDS the ids to *out. flags is a set
 * of SL_TOK_*. The caller decides BOS from sl_tokenizer_add_bos(). Fails only
 * with SL_ENOMEM or SL_EINVAL (a regex engine error, a vocabulary without a
 * byte token it needs); *out keeps what it held before the call on failure. */
int sl_tokenizer_encode(const sl_tokenizer *tok, const char *text, size_t len, unsigned flags,
                        sl_tok_ids *out, sl_err *err);

/* ---- decoding ------------------------------------------------------------ */

enum {
    /* Render control/unknown tokens as their text (default: nothing). */
    SL_TOK_DECODE_SPECIAL = 1u << 0,
    /* Drop the space the encoder prefixed (SPM with a space prefix only):
     * one leading space of the first non-empty piece. Use it to decode a
     * whole encoded text, not a continuation. */
    SL_TOK_DECODE_STRIP_PREFIX_SPACE = 1u << 1,
};

/* The bytes a token stands for (spaces restored, byte tokens as the byte,
 * byte-level BPE unmapped). A piece can be a fragment of a UTF-8 sequence:
 * use a decoder to print. Control and unknown tokens give "" unless special.
 * Returns NULL (and *len = 0) for an id out of range. Owned by tok. */
const char *sl_tokenizer_piece(const sl_tokenizer *tok, int32_t id, bool special, size_t *len);

/* Turns a stream of ids into text, emitting only complete, valid UTF-8: an
 * incomplete multi-byte sequence is held back until its continuation bytes
 * arrive, and ill-formed bytes come out as U+FFFD (one per maximal ill-formed
 * subpart, as Unicode recommends). Fields are private. */
typedef struct sl_tok_decoder {
    const sl_tokenizer *tok;
    unsigned flags;
    bool started;          /* a non-empty piece has been seen */
    uint8_t pend[4];       /* held-back bytes of an incomplete sequence */
    uint8_t n_pend, need;  /* held count, total length of the sequence */
    uint8_t lo, hi;        /* allowed range of the second byte */
    char *buf;             /* output of the last call */
    size_t cap;
} sl_tok_decoder;

/* Prepares a decoder for tok with SL_TOK_DECODE_* flags. Allocates its
 * output buffer once (sized for the longest piece); push never allocates. */
int sl_tok_decoder_init(sl_tok_decoder *d, const sl_tokenizer *tok, unsigned flags, sl_err *err);

/* Frees the buffer; safe on a zeroed decoder. */
void sl_tok_decoder_free(sl_tok_decoder *d);

/* Forgets held-back bytes and the start-of-text state. */
void sl_tok_decoder_reset(sl_tok_decoder *d);

/* Feeds one id. The newly completed text (possibly empty) is returned in
 * *text and *len, valid until the next call on d. SL_EINVAL for an id out of range. */
int sl_tok_decoder_push(sl_tok_decoder *d, int32_t id, const char **text, size_t *len,
                        sl_err *err);

/* Ends the stream: held-back bytes come out as one U+FFFD. */
void sl_tok_decoder_flush(sl_tok_decoder *d, const char **text, size_t *len);

/* Decodes ids[0..n) in one go (a decoder, flushed at the end) into a new
 * NUL-terminated buffer *out that the caller frees; *out_len its length.
 * With SL_TOK_DECODE_STRIP_PREFIX_SPACE, decoding what encode (no BOS/EOS)
 * gave for valid UTF-8 returns the text exactly, with two exceptions that
 * are properties of the tokenizers themselves: SentencePiece cannot tell a
 * literal U+2581 from a space, and special tokens marked to strip
 * whitespace (Phi-3's) or followed by an SPM space prefix change spacing. */
int sl_tokenizer_decode(const sl_tokenizer *tok, const int32_t *ids, size_t n, unsigned flags,
                        char **out, size_t *out_len, sl_err *err);

#endif
