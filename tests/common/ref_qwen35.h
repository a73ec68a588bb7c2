/* ref_qwen35.h - the test oracle for qwen35moe (Qwen3.5 / 3.6 MoE): a plain
 * reference forward pass of the hybrid gated-DeltaNet + gated-attention
 * model, written from ../shared/ARCHS.md section 1 alone.
 *
 * Like ref_forward.h it dequantises every weight to f32 up front and runs
 * textbook loops on one thread, one token at a time (the recurrence strictly
 * sequential), with f32 recurrent states and an f32 KV cache (or f16 values,
 * see ref_q35_set_kv_f16). It shares
 * nothing with the engine but the GGUF reader and the dequantisers, and
 * decides every rule of the architecture on its own. Products with a
 * quantised weight see their input rounded through that weight's activation
 * type (as ref_forward.c does); f32 weights see no rounding. */
#ifndef SL_TESTS_REF_QWEN35_H
#define SL_TESTS_REF_QWEN35_H

#include <stdint.h>

typedef struct ref_q35 ref_q35;

/* Loads a qwen35moe GGUF from path (the main layers; MTP blocks beyond
 * block_count - nextn_predict_layers are not read). On failure returns NULL
 * and writes a sentence into errbuf (missing key or tensor, wrong shape,
 * unreadable type). The caller frees the model with ref_q35_free. */
ref_q35 *ref_q35_load(const char *path, char *errbuf, int errcap);
void ref_q35_free(ref_q35 *m);
int ref_q35_n_vocab(const ref_q35 *m);
int ref_q35_n_layer(const ref_q35 *m);
/* on != 0: full-attention layers cache K and V rounded to f16, as
 * llama.cpp's default cache type does (ARCHS.md section 0); attention
 * arithmetic stays in double. Default off (f32 cache, as ref_forward.h). */
void ref_q35_set_kv_f16(ref_q35 *m, int on);
/* 1 if layer l is gated DeltaNet, 0 if full attention. */
int ref_q35_layer_is_linear(const ref_q35 *m, int l);

/* Runs tokens[0..n) from position 0 with empty state, token by token, and
 * writes the logits of every position into logits (n * n_vocab floats).
 * margin, if non-NULL, receives per position the smallest log-probability
 * gap between the last chosen and the best rejected expert over all layers
 * (a near-tie any rounding may flip). Returns 0, or -1 on a token id out of
 * range or out of memory. */
int ref_q35_forward(ref_q35 *m, const int32_t *tokens, int n, float *logits, float *margin);

#endif
