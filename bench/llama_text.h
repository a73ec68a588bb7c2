/* llama_text.h - for the bench tools that drive llama.cpp (llama_kld.c,
 * llama_dump.c): a text file's tokens as llama.cpp's tokenizer gives them,
 * the model's BOS first where it adds one. Header-only, as each tool is one
 * file built by its script. */
#ifndef SL_BENCH_LLAMA_TEXT_H
#define SL_BENCH_LLAMA_TEXT_H

#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

/* The tokens of the file at path into a malloc'ed array (the caller frees
 * it), their count into *n_tok (negative when the tokenizer fails). NULL
 * after printing why when the file cannot be read. */
static llama_token *llama_text_tokens(const struct llama_vocab *vocab, const char *path,
                                      int *n_tok)
{
    FILE *tf = fopen(path, "rb");
    if (!tf) {
        fprintf(stderr, "cannot read %s\n", path);
        return NULL;
    }
    fseek(tf, 0, SEEK_END);
    const long text_len = ftell(tf);
    rewind(tf);
    char *text = text_len >= 0 ? malloc((size_t)text_len + 1) : NULL;
    const int ok = text && fread(text, 1, (size_t)text_len, tf) == (size_t)text_len;
    fclose(tf);
    const int cap = (int)text_len + 16;
    llama_token *tokens = ok ? malloc(sizeof(llama_token) * (size_t)cap) : NULL;
    if (tokens) *n_tok = llama_tokenize(vocab, text, (int)text_len, tokens, cap, true, false);
    else fprintf(stderr, "cannot read %s\n", path);
    free(text);
    return tokens;
}

#endif
