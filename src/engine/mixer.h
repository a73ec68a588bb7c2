/* mixer.h - what mixes a layer's tokens, as one interface per kind.
 *
 * A layer's description (sl_layer_desc.mixer) names its kind; the kind's
 * operations say how much state and scratch the session keeps for the
 * layer, run a batch through it, and say what truncation the state
 * allows. Kinds live in files of their own: mix_attn.c (causal softmax
 * attention over a K/V cache) here, a family's own kinds in its folder
 * (src/families/qwen35/mix_gdn.c: gated DeltaNet; deepseek2/mix_mla.c;
 * deepseek4/mix_ds4.c). The layer kinds (block.h) call the mixer between
 * their norms and residual adds.
 * Must not know: the FFN, routing, experts, streaming. */
#ifndef SL_ENGINE_MIXER_H
#define SL_ENGINE_MIXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "sluice.h"

/* A layer's state in a session: up to two row streams indexed by position
 * (attention: K and V), owned by the session's arena. */
typedef struct sl_layer_state {
    uint8_t *rows[2];     /* n_slots rows of row_bytes[i] each */
    size_t row_bytes[2];  /* bytes per position of each stream */
    /* How a stream is ordered (kv_ring.h): heads[i] == 1, position-major
     * (each position's row whole, slot after slot); heads[i] > 1,
     * head-major: the row is heads[i] equal parts (an attention layer's
     * K/V heads), and part h of every slot is stored together, n_slots
     * parts of row_bytes[i] / heads[i] bytes one after another, so one
     * head's cache is read as one contiguous run. */
    int heads[2];
    size_t n_slots;       /* rows each stream stores: n_ctx, or 2 ring_cap */
    float *seq;           /* the state of the whole sequence so far (recurrent
                             mixers), zero at position 0 */
    size_t seq_bytes;
    /* A sliding-window attention layer's rows kept as a mirrored ring
     * (engine/kv_ring.h): ring_cap > 0 when each stream holds 2 ring_cap
     * rows, position p in slots p % ring_cap and p % ring_cap + ring_cap;
     * 0 when row p is at p (the whole context). */
    int ring_cap;
    /* The first position whose rows the layer still holds (a ring
     * overwrites older ones; a restored file may hold only the last
     * ones); positions [ring_lo, n_past) are intact. 0 after a restart. */
    int ring_lo;
} sl_layer_state;

typedef struct sl_session sl_session;

/* What a kind keeps in the session's cache, of the cache types the session
 * was given (sl_session_params.type_k / type_v, -ctk / -ctv): llama.cpp
 * keeps every kind without a V (MLA's latent, indexer keys, deepseek4's
 * rows) in its K cache, of type_k. */
typedef enum sl_cache_use {
    SL_CACHE_NONE = 0, /* no rows per position (a recurrent state, f32) */
    SL_CACHE_KV,       /* attention: K rows of type_k, V rows of type_v, any
                          type whose blocks divide the head sizes */
    SL_CACHE_K_PLAIN,  /* rows of type_k only, f16 or f32 (the kind's kernels
                          read no quantised rows): a quantised type_k is refused */
} sl_cache_use;

typedef struct sl_mixer_ops {
    const char *name;
    sl_cache_use cache;
    /* What the rows are, for messages (SL_CACHE_K_PLAIN): "the latent ...". */
    const char *cache_rows;
    /* Bytes per position of each of the layer's two row streams, for
     * cached values of elem bytes (2: f16, 4: f32; an SL_CACHE_KV kind's
     * rows are sized from elem 4 per value of its types). */
    void (*state_rows)(const sl_layer_desc *d, size_t elem, uint64_t row_bytes[2]);
    /* Bytes of state that summarise the whole sequence (a recurrent
     * state), whatever its length. */
    uint64_t (*state_seq)(const sl_layer_desc *d);
    /* Parts each row of stream r is stored head-major in (sl_layer_state's
     * heads); NULL: 1 for both (position-major). */
    int (*state_heads)(const sl_layer_desc *d, int r);
    /* Runs the batch's n tokens at positions s->n_past ...: reads their
     * normalised inputs s->xb (n, n_embd), appends to layer il's state,
     * and writes the block's output (n, n_embd) into out. */
    void (*forward)(sl_session *s, const sl_layer *L, int il, int n, float *out);
    /* The state can be cut back to any earlier position (a K/V cache can;
     * a recurrent state only to a snapshot). */
    bool truncatable;
    /* The earliest position n > 0 the layer's state st can be cut back to
     * (every n from it to n_past is allowed, and 0 always is): a sliding
     * window's ring needs the window before n still held. NULL: any n,
     * as truncatable says. */
    int (*truncate_floor)(const sl_layer_desc *d, const sl_layer_state *st);
    /* Floats of scratch the kind needs to run micro-batches of up to B
     * tokens of layer d of model m, into *floats. The session keeps one
     * buffer (kind_scratch) as large as the largest kind's need; a kind
     * carves it as it likes and may assume nothing of its contents between
     * calls (deepseek4's block and mixer share one carving: ds4.h). False
     * when the size overflows 64 bits. NULL: none. */
    bool (*scratch_floats)(const sl_model *m, const sl_layer_desc *d, uint64_t B,
                           uint64_t *floats);
} sl_mixer_ops;

/* The operations of kind k (k < SL_MIXER_COUNT). */
const sl_mixer_ops *sl_mixer_of(sl_mixer_kind k);

/* The attention mixer (mix_attn.c) and gated DeltaNet (families/qwen35). */
extern const sl_mixer_ops sl_mixer_attn;
extern const sl_mixer_ops sl_mixer_gdn;
/* Multi-head latent attention (families/deepseek2, also glm-dsa's). */
extern const sl_mixer_ops sl_mixer_mla;
/* deepseek4's attention: raw window, compressed blocks, indexer (families/deepseek4). */
extern const sl_mixer_ops sl_mixer_ds4;

#endif
