/* kld_eval.h - sluice against a llama.cpp KL-divergence base, for tests. */
#ifndef SL_TESTS_KLD_EVAL_H
#define SL_TESTS_KLD_EVAL_H

#include <stddef.h>

#include "eval/kld.h"

/* Loads gguf (2 threads), evaluates the first `chunks` chunks of the base
 * file kld (llama.cpp's, written by llama-perplexity --kl-divergence-base or
 * bench/llama_ref.sh) through the library's evaluation procedure, a fresh
 * cache per chunk in batches of 128 as `llama-perplexity -b 128` does, and
 * fills *st. Returns 0 when it ran; 1 when the model was refused at load or
 * `supported` (may be NULL) says no for its architecture, with the reason in
 * why; -1 on any other failure, with the reason in why. */
int t_kld_eval(const char *gguf, const char *kld, int chunks,
               int (*supported)(const char *arch), sl_kld_stats *st, char *why, size_t cap);

/* t_kld_eval with the attention cache's K and V types (sl_kv_type values;
 * t_kld_eval takes the model's defaults). */
int t_kld_eval_cache(const char *gguf, const char *kld, int chunks, int type_k, int type_v,
                     int (*supported)(const char *arch), sl_kld_stats *st, char *why, size_t cap);

/* How many scored rows sluice's logits encode to the very bytes of the
 * base's rows (llama-perplexity's uint16 log-probabilities): total == same
 * is bit-identity as far as the base file can show it. */
typedef struct t_kld_rows {
    long same, total;
} t_kld_rows;

/* t_kld_eval_cache (type_k / type_v -1: the model's defaults) that also
 * fills *rows (may be NULL). */
int t_kld_eval_rows(const char *gguf, const char *kld, int chunks, int type_k, int type_v,
                    int (*supported)(const char *arch), sl_kld_stats *st, t_kld_rows *rows,
                    char *why, size_t cap);

/* Chunk `chunk` (0-based) of the base file kld alone, evaluated as
 * t_kld_eval_rows evaluates each chunk (a fresh cache, the BOS in place of
 * its first token, batches of 128), its scored rows compared with the
 * base's bytes into *rows. Returns 0 when it ran, -1 with the reason in
 * why (a model that does not load, a chunk the file lacks). */
int t_kld_rows_chunk(const char *gguf, const char *kld, int chunk, t_kld_rows *rows, char *why,
                     size_t cap);

/* The llama.cpp revision (sl_llama_rev) the following evaluations load
 * their models with; -1 (the start): the library's default. */
void t_kld_eval_set_rev(int rev);

#endif
