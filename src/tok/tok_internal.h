/* tok_internal.h - shared between the files of src/tok/ only.
 *
 * Owns: the layout of struct sl_tokenizer and the internal interfaces of its
 * parts (UTF-8 helpers, pre-tokenizer, special-token partition, the two
 * encoders, the merge queue). Nothing outside src/tok/ includes this. */
#ifndef SL_TOK_INTERNAL_H
#define SL_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tok/tok_map.h"
#include "tok/tokenizer.h"

/* ---- vocabulary ---------------------------------------------------------- */

enum {
    SL_TOKF_EOG = 1u << 0,     /* ends generation */
    SL_TOKF_LSTRIP = 1u << 1,  /* when matched in text, eat whitespace on its left */
    SL_TOKF_RSTRIP = 1u << 2,  /* ... and on its right */
    /* a user-defined token that is also control (an end-of-generation
     * marker typed user-defined, as llama.cpp marks it): rendered like a
     * user-defined token, matched in text only when parsing specials */
    SL_TOKF_CONTROL = 1u << 3,
};

typedef struct sl_tok_entry {
    uint32_t off, len;             /* vocabulary text in tok->pool */
    uint32_t piece_off, piece_len; /* decoded bytes in tok->pieces */
    float score;                   /* SPM merge priority */
    uint8_t type;                  /* sl_tok_type */
    uint8_t flags;                 /* SL_TOKF_* */
} sl_tok_entry;

/* ---- pre-tokenizer (tok_pretok.c) ---------------------------------------- */

#define SL_TOK_MAX_REGEX 8

typedef struct sl_tok_pretok {
    int n;                          /* patterns, applied in sequence */
    void *re[SL_TOK_MAX_REGEX];     /* pcre2_code_8 * (kept opaque here) */
    uint32_t max_groups;            /* largest capture count + 1 */
} sl_tok_pretok;

/* A piece of text: [off, off+len) of the buffer it was cut from. */
typedef struct sl_tok_span {
    size_t off, len;
} sl_tok_span;

typedef struct sl_tok_spans {
    sl_tok_span *v;
    size_t n, cap;
} sl_tok_spans;

/* Resolves a tokenizer.ggml.pre name. Returns the canonical name and fills
 * *set_id, *ignore_merges, *add_bos; NULL if the name is unknown. */
const char *sl_tok_pre_lookup(const char *name, int *set_id, bool *ignore_merges, bool *add_bos);

/* True for the pattern set of SentencePiece-style BPE (gemma4): no GPT-2
 * byte mapping, spaces as U+2581 (tok_gemma4.c encodes). */
bool sl_tok_pre_is_raw(int set_id);

/* The id of the default pattern set (used for missing/unknown names). */
int sl_tok_pre_default_set(void);

/* Compiles the pattern set (UTF + UCP, JIT when available). */
int sl_tok_pretok_init(sl_tok_pretok *p, int set_id, sl_err *err);
void sl_tok_pretok_free(sl_tok_pretok *p);

/* Splits valid UTF-8 text[0..len) into consecutive pieces covering it: each
 * pattern cuts every current piece into its matches and the gaps between
 * them (as llama.cpp does). Result replaces *out. */
int sl_tok_pretok_split(const sl_tok_pretok *p, const char *text, size_t len, sl_tok_spans *out,
                        sl_err *err);

/* The pre-tokenizer split of valid UTF-8 text, with long runs of one
 * character class shortened before the regex where that gives the same
 * pieces, so that any valid text splits (tok_bpe.c). Same contract as
 * sl_tok_pretok_split. */
int sl_tok_bpe_pretok_split(const sl_tok_pretok *p, const char *text, size_t len,
                            sl_tok_spans *out, sl_err *err);

int sl_tok_spans_push(sl_tok_spans *s, size_t off, size_t len);
void sl_tok_spans_free(sl_tok_spans *s);

/* ---- the tokenizer ------------------------------------------------------- */

struct sl_tokenizer {
    sl_tok_model model;
    uint32_t n_tokens;
    sl_tok_entry *tokens;
    char *pool;                /* vocabulary texts, each NUL-terminated */
    char *pieces;              /* decoded pieces */
    uint32_t max_piece_len;
    sl_tok_map vocab;          /* text -> id (first id wins on duplicates) */

    /* BPE */
    char *merge_pool;          /* left||right of each merge */
    sl_tok_map merges;         /* (left||right, aux = len(left)) -> rank */
    bool ignore_merges;        /* a piece that is a whole token skips merging */
    int pre_set;
    const char *pre_name;      /* static string */
    char *pre_warning;         /* NULL or an owned sentence */
    char *id_warning;          /* NULL or owned: special ids out of range */
    sl_tok_pretok pretok;

    /* SentencePiece-style BPE (gemma4): merges over raw UTF-8, spaces as
     * U+2581, <0xNN> byte fallback (tok_gemma4.c) */
    bool raw_bpe;

    /* SPM */
    bool add_space_prefix;
    bool spm_word_split;       /* no token has U+2581 after another char */

    /* SPM: id of "<0xNN>" (or the 1-byte token); gemma4: id of "<0xNN>";
     * BPE: id of the byte's mapped character. SL_TOK_NONE if missing. */
    int32_t byte_tok[256];

    /* special tokens matched in raw text: ids, longest text first */
    int32_t *specials;
    uint32_t n_specials;
    sl_tok_map special_map;    /* text -> index in specials */
    /* distinct special lengths per first byte, longest first:
     * special_lens[special_lens_at[b] .. special_lens_at[b+1]) */
    uint32_t *special_lens;
    uint32_t special_lens_at[257];

    int32_t bos, eos, eot, eom, unk, pad;
    bool add_bos, add_eos;
};

/* ---- UTF-8 (tok_utf8.c) -------------------------------------------------- */

/* Length of the sequence a lead byte announces, as llama.cpp counts it
 * (1 for continuation and invalid bytes): how SPM splits characters. */
static inline size_t sl_tok_utf8_len(unsigned char c)
{
    static const uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}

/* Length of the well-formed UTF-8 sequence at s[0..n) (1-4), or 0 if the
 * bytes there are ill-formed or truncated (Unicode Table 3-7). */
size_t sl_tok_utf8_valid_len(const unsigned char *s, size_t n);

/* Copies text into *buf replacing each byte that is not part of a
 * well-formed sequence by U+FFFD. Returns the new length, or (size_t)-1 on
 * allocation failure. *buf with capacity *cap is a reusable buffer. */
size_t sl_tok_utf8_sanitize(const char *text, size_t len, char **buf, size_t *cap);

/* GPT-2 byte-level table: byte -> the UTF-8 of its stand-in code point
 * (1 or 2 bytes). */
typedef struct sl_tok_bytemap_entry {
    uint8_t len;
    char s[2];
} sl_tok_bytemap_entry;

const sl_tok_bytemap_entry *sl_tok_byte_to_unicode(void);

/* The byte a stand-in code point represents, or -1 (cp outside the table). */
int sl_tok_unicode_to_byte(uint32_t cp);

/* Decodes one code point at s[0..n) leniently (any lead/continuation shape);
 * returns its length, 0 if ill-formed. */
size_t sl_tok_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* ---- growable buffers ------------------------------------------------------ */

/* Ensures *p holds at least n elements of size sz (doubling). false: ENOMEM. */
bool sl_tok_reserve(void **p, size_t *cap, size_t n, size_t sz);

int sl_tok_ids_push(sl_tok_ids *v, int32_t id);

/* ---- merge queue and merge loop (tok_heap.c) ------------------------------ */

/* A candidate merge of symbols left and right. Smaller key pops first, ties
 * broken by the leftmost position (both encoders want exactly this order:
 * BPE key = rank, SPM key = -score). */
typedef struct sl_tok_bigram {
    double key;
    int32_t left, right;
    uint32_t size;  /* bytes of left + right when queued: detects staleness */
} sl_tok_bigram;

typedef struct sl_tok_heap {
    sl_tok_bigram *v;
    size_t n, cap;
} sl_tok_heap;

bool sl_tok_heap_push(sl_tok_heap *h, sl_tok_bigram b);
bool sl_tok_heap_pop(sl_tok_heap *h, sl_tok_bigram *out);

/* A symbol during merging: bytes [off, off+n) of the current word, linked to
 * its live neighbours. n == 0 once merged into its left neighbour. */
typedef struct sl_tok_symbol {
    uint32_t off, n;
    int32_t prev, next;
} sl_tok_symbol;

/* Per-call working memory, reused across the fragments of one encode. */
typedef struct sl_tok_scratch {
    char *text;  size_t text_cap;     /* sanitized / escaped fragment */
    char *word;  size_t word_cap;     /* byte-mapped piece (BPE) */
    sl_tok_symbol *sym; size_t sym_cap;
    sl_tok_heap heap;
    sl_tok_spans spans;
} sl_tok_scratch;

void sl_tok_scratch_free(sl_tok_scratch *s);

/* Makes text[0..n) one symbol per character, linked in order, the
 * character's length read from its lead byte as llama.cpp reads it (so
 * ill-formed bytes still form symbols), cut at n. Returns the number of
 * symbols, or -1 when s->sym cannot grow (or n exceeds 32 bits). */
int32_t sl_tok_char_symbols(sl_tok_scratch *s, const char *text, size_t n);

/* Which adjacent pair merges first. */
typedef enum sl_tok_merge_order {
    SL_TOK_MERGE_RANK,  /* the pair with the lowest rank in tok->merges (BPE, Gemma 4) */
    SL_TOK_MERGE_SCORE, /* the pair whose concatenation is the vocabulary token
                           with the highest score (SentencePiece) */
} sl_tok_merge_order;

/* Merges the symbols s->sym[start..end) of text (linked among themselves
 * only; adjacent live symbols are contiguous bytes of text), pair by pair
 * in `order` (leftmost first on ties), until no pair can merge. Merged-away
 * symbols are left with n == 0; the survivors stay linked from start.
 * Uses s->heap. Returns SL_OK, or SL_ENOMEM (the symbols then partly
 * merged). */
int sl_tok_merge(const sl_tokenizer *tok, sl_tok_scratch *s, const char *text, int32_t start,
                 int32_t end, sl_tok_merge_order order);

/* ---- special-token partition (tok_special.c) ------------------------------ */

/* A fragment of the input: raw text [off, off+len) if id < 0, else a token. */
typedef struct sl_tok_frag {
    size_t off, len;
    int32_t id;
} sl_tok_frag;

typedef struct sl_tok_frags {
    sl_tok_frag *v;
    size_t n, cap;
} sl_tok_frags;

/* Builds the special-token tables of tok (specials, special_map, lens). */
int sl_tok_special_init(sl_tokenizer *tok, sl_err *err);

/* Cuts text into raw fragments and special tokens: for each special token,
 * longest text first, every occurrence inside a raw fragment is split out
 * (user-defined tokens always; control and unknown ones only with
 * parse_special). Result replaces *out. */
int sl_tok_partition(const sl_tokenizer *tok, const char *text, size_t len, bool parse_special,
                     sl_tok_frags *out, sl_err *err);

/* ---- encoders (tok_bpe.c, tok_spm.c) --------------------------------------- */

/* Encodes one raw fragment and appends ids. */
int sl_tok_bpe_encode(const sl_tokenizer *tok, const char *text, size_t len, sl_tok_scratch *s,
                      sl_tok_ids *out, sl_err *err);
/* The gemma4 encoder (tok_gemma4.c): any bytes; fails only with SL_ENOMEM. */
int sl_tok_gemma4_encode(const sl_tokenizer *tok, const char *text, size_t len,
                         sl_tok_scratch *s, sl_tok_ids *out, sl_err *err);
/* space_prefix: prepend a space (start of text or after a special token). */
int sl_tok_spm_encode(const sl_tokenizer *tok, const char *text, size_t len, bool space_prefix,
                      sl_tok_scratch *s, sl_tok_ids *out, sl_err *err);

/* ---- pieces (tok_decode.c) ------------------------------------------------- */

/* Computes every token's decoded piece into tok->pieces. */
int sl_tok_pieces_init(sl_tokenizer *tok, sl_err *err);

#endif
