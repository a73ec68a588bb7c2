/* synth_keys.h - a generated model's metadata keys, set through the GGUF
 * writer with the first failure kept (so a writer sets a run of keys and
 * checks once). Shared by the generators' writers (synth_write.c,
 * synth_ds.c), which choose the keys and their order: the order is the
 * file's, so each writer's files keep their bytes. */
#ifndef SL_SYNTH_SYNTH_KEYS_H
#define SL_SYNTH_SYNTH_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf/gguf_writer.h"
#include "synth/synth.h"
#include "synth/synth_vocab.h"

/* The writer, the architecture that prefixes its keys, and the first
 * failure (SL_OK until then: every setter does nothing after one). */
typedef struct sl_synth_keys {
    sl_gguf_writer *w;
    const char *arch;
    int rc;
} sl_synth_keys;

/* "ARCH.SUFFIX" = v, as each type. */
void sl_synth_key_u32(sl_synth_keys *k, const char *suffix, uint32_t v);
void sl_synth_key_f32(sl_synth_keys *k, const char *suffix, float v);
void sl_synth_key_bool(sl_synth_keys *k, const char *suffix, bool v);
void sl_synth_key_str(sl_synth_keys *k, const char *suffix, const char *v);
void sl_synth_key_i32s(sl_synth_keys *k, const char *suffix, const int32_t *v, uint64_t n);
void sl_synth_key_value(sl_synth_keys *k, const char *suffix, const sl_gguf_value *v);

/* general.architecture (k->arch), general.name, general.file_type (of
 * type), general.quantization_version and general.alignment, in that
 * order. */
void sl_synth_keys_general(sl_synth_keys *k, const char *name, sl_synth_type type);

/* tokenizer.ggml.model ("gpt2"), .pre, .tokens, .token_type, .merges,
 * .bos_token_id and .eos_token_id of v, in that order. */
void sl_synth_keys_vocab(sl_synth_keys *k, const sl_synth_vocab *v, const char *pre);

#endif
