/* ds4.h - deepseek4 (ARCHS.md section 9) in the engine: the scratch its
 * layers share (the session's kind_scratch, carved here), the hyper-connection
 * block (block_ds4.c) and the attention mixer (mix_ds4.c).
 * Must not know: files, streaming, sampling. */
#ifndef SL_ENGINE_DS4_H
#define SL_ENGINE_DS4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/session.h"

/* The largest head (D) and indexer key (di) sizes the engine takes (the
 * compressor's rows live on the stack); the family file refuses larger. */
#define SL_DS4_MAX_HEAD 4096

/* Where each piece of the deepseek4 scratch starts, in floats from the
 * start of the session's kind_scratch, for micro-batches of B tokens. */
typedef struct sl_ds4_scratch {
    uint64_t x;        /* (B, hc E) the residual streams */
    uint64_t res;      /* (B, hc E) the streams before the current half */
    uint64_t flat;     /* (B, hc E) their unweighted RMS norm */
    uint64_t mix;      /* (B, (2 + hc) hc) the mixes */
    uint64_t pre, post, comb; /* (B, hc), (B, hc), (B, hc hc) */
    uint64_t qr;       /* (B, q_lora) */
    uint64_t ca, cg;   /* (B, 2 D) the compressor's rows of the batch */
    uint64_t ia, ig;   /* (B, 2 di) the indexer compressor's */
    uint64_t iq;       /* (B, ih di) indexer queries */
    uint64_t iw;       /* (B, ih) indexer head weights */
    uint64_t sel;      /* (B, 1 + top_k) ints: each token's chosen blocks */
    uint64_t gin;      /* (B, H D / G) one output group's input */
    uint64_t gout;     /* (B, R) its output */
    uint64_t oa;       /* (B, G R) every group's */
    uint64_t total;
} sl_ds4_scratch;

/* The scratch layout of model m for batches of B (total 0 when m is not
 * deepseek4). Cannot fail; sizes are checked by the caller's sum. */
void sl_ds4_scratch_layout(const sl_model *m, uint64_t B, sl_ds4_scratch *out);

/* The floats of that layout for micro-batches of B, the hyper-connection
 * block's and the mixer's declared scratch (block.h, mixer.h). Never
 * overflows: the family file bounds every dimension (below 2^24) and B is
 * below 2^16, so each term is below 2^60. */
bool sl_ds4_scratch_floats(const sl_model *m, uint64_t B, uint64_t *floats);

/* A pointer into the session's kind_scratch at offset off floats. */
static inline float *sl_ds4_at(const sl_session *s, uint64_t off)
{
    return s->kind_scratch + off;
}

/* y = sum_s w[s] X[s] over the 4 streams of one token (x: 4 rows of E,
 * stream-major; y: E). fused: llama.cpp's DSV4_HC_PRE op, x0 w0 then one
 * multiply-add per further stream; else its unfused graph, every product
 * and sum rounded in stream order. Pure. (block_ds4.c) */
void sl_ds4_stream_sum(float *y, const float *x, const float *w, size_t E, bool fused);

/* o = f pv + sum_s c[4 s] R[s] for one destination stream of one token
 * (f: the branch output, E; r: the 4 saved streams, stream-major; c: the
 * comb column of this destination, stride 4). fused: DSV4_HC_POST's
 * multiply-add chain after the rounded f pv; else every product and sum
 * rounded. Pure. (block_ds4.c) */
void sl_ds4_post_mix(float *o, const float *f, float pv, const float *r, const float *c, size_t E,
                     bool fused);

/* The embedding rows of the batch (s->x, n rows) copied to every stream. */
void sl_ds4_embed(sl_session *s, int n);

/* One deepseek4 layer on the batch's streams: hc pre, attn_norm, the
 * attention (mix_ds4.c), hc post; hc pre, ffn_norm, the routed FFN, hc
 * post. The tokens are s->tokens. Fails only when a streamed expert cannot
 * be read. (block_ds4.c) */
int sl_block_ds4(sl_session *s, const sl_layer *L, int il, int n, sl_err *err);

/* The hc head for rows [first, first + cnt) of the batch: each collapsed
 * to one E-vector, written to s->x rows 0 .. cnt - 1. (block_ds4.c) */
void sl_ds4_head(sl_session *s, int first, int cnt);

#endif
