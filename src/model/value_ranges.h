/* value_ranges.h - the sane ranges of a model file's float hyperparameters
 * and of its small f32 tensors, which the loader holds a file to.
 *
 * A value outside them is a damaged or hostile file: it would load and
 * then compute degenerate output (a 1e30 epsilon or a 1e-30 softcap makes
 * every logit equal; a 3.4e38 bias saturates the norms). Each range admits
 * every published model of the supported families with room to spare
 * (../shared/ARCHS.md, the presets of src/synth); the figures in the
 * comments are the real values. Model-internal: the loader (hparams.c,
 * family_*.c, model_load.c) and the tests read it. */
#ifndef SL_MODEL_VALUE_RANGES_H
#define SL_MODEL_VALUE_RANGES_H

#include <stdbool.h>

#include "model/model.h"
#include "util/status.h"

/* A closed range [lo, hi] of float32 values (the bounds rounded to float
 * as the file's values are); with zero_off, 0 is accepted too (the file's
 * way of saying the feature is off). NaN and infinities are never in. */
typedef struct sl_f32_range {
    float lo, hi;
    bool zero_off;
} sl_f32_range;

/* RMS norm epsilon and deepseek4's hyper-connection epsilon: 1e-5 and
 * 1e-6 in every real model. */
extern const sl_f32_range SL_RANGE_EPS;          /* [1e-12, 0.01] */
/* gemma4's final logit softcap: 30 (0: none). */
extern const sl_f32_range SL_RANGE_SOFTCAP;      /* 0 or [1, 10000] */
/* Rope frequency bases (rope.freq_base, gemma4's freq_base_swa,
 * deepseek4's compress_rope_freq_base): 1e4 to 1e7 published, 3.6e9 in
 * the longest-context fine-tunes. */
extern const sl_f32_range SL_RANGE_ROPE_BASE;    /* [2, 1e11] */
/* rope.scaling.factor (linear or YaRN): 4 to 64 published. */
extern const sl_f32_range SL_RANGE_ROPE_FACTOR;  /* [1, 1024] */
/* rope.scaling.yarn_log_multiplier, as stored (0.1 x mscale_all_dim):
 * 0.0707 and 0.1. */
extern const sl_f32_range SL_RANGE_YARN_LOG_MUL; /* [0, 1] */
/* expert_weights_scale (routed_scaling_factor): 1 to 16 (DeepSeek-V2),
 * 2.5 and 2.827 in V3 and Kimi K2 (0: none). */
extern const sl_f32_range SL_RANGE_EXPERT_SCALE; /* 0 or [0.01, 100] */
/* deepseek4's SwiGLU clamps: 10 (at most 1e-6: none). */
extern const sl_f32_range SL_RANGE_CLAMP;        /* [0, 1e6] */

/* The largest magnitude a norm weight, bias, sink, scale or other small
 * f32 tensor of a layer may hold: real ones stay below 1e3. */
#define SL_SMALL_TENSOR_MAX 1e6f

/* Whether v lies in r. */
bool sl_in_range(const sl_f32_range *r, double v);

/* Fails (SL_EFORMAT) when v is outside r, with one line naming the key,
 * the value and the range: "metadata 'KEY' = V is out of range [LO, HI]".
 * key is the full GGUF key. */
int sl_check_range(const sl_f32_range *r, const char *key, double v, sl_err *err);

/* Fails (SL_EFORMAT, naming the tensor, the entry and its value) when a
 * resident f32 tensor that is no matrix (norms, biases, sinks, scales,
 * the output norm, deepseek4's hc base and scale; not rope_freqs, whose
 * 1e30 entries are real) holds a NaN, an infinity or a magnitude of
 * SL_SMALL_TENSOR_MAX or more. Reads those tensors once, after they are
 * placed. */
int sl_check_small_tensors(const sl_model *m, sl_err *err);

#endif
