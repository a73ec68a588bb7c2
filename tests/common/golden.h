/* golden.h - reading llama.cpp's tokenizer test files: X.inp holds test
 * strings, each followed by "\n__ggml_vocab_test__\n"; X.out holds, line by
 * line, the token ids (decimal, space-separated) of the string of the same
 * rank. */
#ifndef SL_TESTS_GOLDEN_H
#define SL_TESTS_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tok/tokenizer.h"

typedef struct {
    const char *text; /* the current string (inside the .inp buffer; not NUL-terminated) */
    size_t len;
    const char *out_line; /* its line of .out (NUL-terminated, in the .out buffer) */
    const int32_t *want; /* its expected ids, read from out_line by t_golden_next */
    size_t n_want;
    bool out_short; /* set when .out ended before .inp: the walk stopped early */
    /* private */
    char *inp, *out, *next, *end, *line;
    int32_t *ids;
    size_t cap;
} t_golden;

/* Reads the two files whole into g (zeroed first). Returns 0, or -1 when
 * either cannot be read or memory runs out (g then holds nothing to
 * free). */
int t_golden_open(t_golden *g, const char *inp_path, const char *out_path);

/* Moves to the next string and its line of .out (text, len, out_line).
 * Returns false at the end of .inp, or when .out has no line for the
 * string (out_short set). */
bool t_golden_next_line(t_golden *g);

/* t_golden_next_line, then reads the line's ids into want / n_want (the
 * array grows as needed). Also false on a line that is not ids, or when
 * memory runs out. */
bool t_golden_next(t_golden *g);

/* Prints "    LABEL: id id ..." (the first 64 ids, " ..." after them when
 * there are more) on stderr: a failing case's wanted and got ids. */
void t_golden_print_ids(const char *label, const int32_t *ids, size_t n);

/* Encodes g's current string with tok under flags into ids (emptied
 * first, grown as needed; the caller frees it) and compares the result with
 * g's wanted ids. True when they are equal; else prints "  LABEL case
 * CASE_NO (its length and first 60 bytes) differs", the encoder's error if
 * it failed, and both id lists on stderr. *rc (when not NULL) receives the
 * encoder's return. */
bool t_golden_encode_check(const t_golden *g, const sl_tokenizer *tok, unsigned flags,
                           sl_tok_ids *ids, const char *label, int case_no, int *rc);

/* Decodes hn hex digits at h (pairs; a lone last digit is ignored) into a
 * new NUL-terminated buffer of *n bytes (the fixtures spell tokens and
 * merges in hex). NULL when memory runs out. */
char *t_unhex(const char *h, size_t hn, size_t *n);

/* Reads a hex vocabulary subset (lines "ID TYPE HEX": a token's id, type
 * and text in hex) into owned / tokens / types (each n_vocab long): every
 * listed id's text replaces owned[id] (freed) and tokens[id]. Returns the
 * number of lines taken, or -1 when the file cannot be read. */
int t_hex_vocab_read(const char *path, uint32_t n_vocab, char **owned, sl_tok_str *tokens,
                     int32_t *types);

/* Reads a hex merges file (lines "RANK\tLEFT\tRIGHT", left and right in
 * hex, in rank order) as "LEFT RIGHT" texts: *merges and *text (the same
 * strings, to free) are new arrays of *n. Returns 0, or -1 when the file
 * cannot be read. */
int t_hex_merges_read(const char *path, sl_tok_str **merges, char ***text, uint32_t *n);

/* Frees what t_golden_open read; g's pointers are then invalid. */
void t_golden_close(t_golden *g);

#endif
