/* attn_kernels.h - the inner loops of attention over an f16 or f32 KV
 * cache: q . k and out += a * v, with scalar reference versions and AVX2
 * (F16C) versions chosen at run time with the quant kernels' ISA. */
#ifndef SL_OPS_ATTN_KERNELS_H
#define SL_OPS_ATTN_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Positions per tile of the blocked attention (llama.cpp's KV tile). */
#define SL_ATTN_TILE 64
/* llama.cpp's query tile (GGML_FA_TILE_Q): its CPU flash attention tiles a
 * batch of at least this many query tokens over f16 / f32 caches and takes
 * the one-chunk form (sl_attn_attend_seq's order) for fewer. */
#define SL_ATTN_QTILE 64

/* One block of blocked causal attention: n_q query rows that share one K/V
 * head (a grouped-query group of one token), over cache positions
 * [pos_lo, n_pos), with an optional sink logit per row in the softmax's
 * denominator. A block may hold n_tok > 1 consecutive tokens of a prompt
 * (sl_attn_attend_tokens): token i's rows are q + i q_tok, its outputs
 * out + i out_tok, and it attends to [lo_i, n_pos + i), lo_i = max(pos_lo,
 * n_pos + i - n_swa) when n_swa > 0, else pos_lo. The caller owns every
 * buffer; scratch holds sl_attn_scratch_floats(dk, dv, n_q) floats. */
typedef struct sl_attn_block {
    const float *q;       /* n_q rows of dk values, q_stride floats apart */
    size_t q_stride;
    const void *k, *v;    /* position 0 of this head's keys / values (f16 or f32) */
    size_t k_stride, v_stride; /* bytes from one position to the next */
    int dk, dv, n_q, n_pos;
    float scale;          /* applied to q . k */
    float *out;           /* n_q rows of dv values, out_stride floats apart */
    size_t out_stride;
    float *scratch;
    int pos_lo;           /* the first position attended (a sliding window), else 0 */
    const float *sinks;   /* n_q sink logits (one per query row) or NULL */
    int n_tok;            /* tokens in the block (0 counts as 1) */
    size_t q_tok, out_tok; /* floats from one token's rows to the next's */
    int n_swa;            /* the sliding window of the tokens after the first, or 0 */
    const int *sel;       /* sl_attn_attend_seq only: the positions attended, n_sel
                             of them ascending, instead of [pos_lo, n_pos); or NULL */
    int n_sel;
    int split_n, split_len; /* sl_attn_attend_seq only, without sel: when split_n > 1,
                             positions [c split_len, (c + 1) split_len) attended
                             apart for each c < split_n, then combined (llama.cpp's
                             one-token decode over a cache view of 512+ on
                             split_n threads); else 0 */
} sl_attn_block;

/* Adds the block's sinks to its rows' accumulators acc[n_q][dv], running
 * maxima mx and sums, as llama.cpp's tiled flash attention does (the last
 * step before the division; scalar, shared by every tiled kernel set): the
 * larger of the maximum and the sink rescales the other side, and the sum
 * becomes S x ms + vs in ONE rounding, an FMA: llama.cpp's CPU build
 * contracts that line of its tiled form (vfmadd132ss in the AVX2 library),
 * while its one-chunk form's S updates stay two roundings. The two differ
 * only when the sink exceeds the row's maximum (then ms < 1 and vs = 1). */
void sl_attn_sinks_tiled(const sl_attn_block *b, float *acc, const float *mx, float *sum);

/* One query row's online-softmax step over a tile of T scores (the scalar
 * tiled kernels' order): sc[0..T) holds the tile's scaled scores, -INFINITY
 * where a position is not visible, T a multiple of 8, tmax their maximum.
 * Raises *mx to the new maximum (rescaling the row's dv accumulated values
 * at acc and *sum when it grows), replaces each score by its weight
 * exp(score - max) and adds the tile's weights to *sum (in groups of 8,
 * summed in double). The caller then accumulates weight x value itself. */
void sl_attn_tile_softmax(float *sc, int T, float tmax, float *mx, float *sum, float *acc, int dv);

/* Scratch floats sl_attn_block needs for these dimensions (enough for
 * the tiled kernels, for a block of sl_attn_block_tokens tokens, and for
 * sl_attn_attend_seq). */
size_t sl_attn_scratch_floats(int dk, int dv, int n_q);

/* The most tokens one block of these dimensions takes at once
 * (sl_attn_attend_tokens; >= 1) with scratch_floats of scratch: as many as
 * the scratch holds the state of, at most SL_ATTN_QBLOCK and ~256 KiB of
 * state. sl_attn_scratch_floats(dk, dv, n_q) holds that many. */
#define SL_ATTN_QBLOCK 16
int sl_attn_block_tokens(int dk, int dv, int n_q, size_t scratch_floats);

/* Token i's first position in a block of several tokens (see sl_attn_block). */
int sl_attn_tok_lo(const sl_attn_block *b, int i);

typedef struct sl_attn_kernels {
    float (*dot_f16)(const float *q, const uint16_t *k, int n);
    void (*axpy_f16)(float *out, float a, const uint16_t *v, int n);
    float (*dot_f32)(const float *q, const float *k, int n);
    void (*axpy_f32)(float *out, float a, const float *v, int n);
    /* softmax(q . K * scale) . V for each query row of the block, computed
     * as llama.cpp's tiled flash attention does (positions in tiles of
     * SL_ATTN_TILE from 0; per tile: scores as one FMA chain over dk, the
     * running maximum, the old sums rescaled by e^(old - new max), e^(s -
     * max) by the reference's polynomial, their sum in eights then double;
     * values accumulated as one FMA chain over positions; divided by the sum
     * at the end), so the bits match it. The ref and AVX2 versions agree bit
     * for bit. f16 or f32 cache. */
    void (*attend_f16)(const sl_attn_block *b);
    void (*attend_f32)(const sl_attn_block *b);
    /* The element loops of sl_attn_attend_seq, in ggml's vec.h arithmetic:
     * y[i] = fma(x[i], v, y[i]); y[i] *= v; the same with an f16 y (each
     * result rounded to f16); and ggml_vec_dot_f16's order for two f16
     * rows (four 8-lane FMA chains over steps of 32, combined pairwise,
     * the halves added, two horizontal adds, the tail in double). */
    void (*mad_f32)(float *y, const float *x, float v, int n);
    void (*scale_f32)(float *y, float v, int n);
    void (*mad_f16)(uint16_t *y, const uint16_t *x, float v, int n);
    void (*scale_f16)(uint16_t *y, float v, int n);
    float (*dot_f16f16)(const uint16_t *x, const uint16_t *y, int n);
    /* attend_f16/f32 for a block of n_tok tokens at once (a prompt's query
     * block against each K/V tile: the flash-attention tiling), each token's
     * rows computed with the one-token kernel's arithmetic, so the bits are
     * those of n_tok one-token calls; NULL when the set has none (then
     * sl_attn_attend_tokens makes the one-token calls). */
    void (*attend_tok_f16)(const sl_attn_block *b);
    void (*attend_tok_f32)(const sl_attn_block *b);
    /* sl_attn_attend_seq's loop over positions [lo, hi) (or b->sel) for f16
     * K and V: row r's query in f16 at (uint16_t *)(qc + r dk), its f16
     * accumulator at (uint16_t *)(acc + r dv), mx[r] and sum[r] its state,
     * all zeroed (mx -inf) by the caller; each score, weight and
     * accumulation in the order and roundings of the element loops above,
     * so the bits are theirs (a position's rows' scores computed together,
     * its K and V rows read once for them). NULL: the element loops. */
    void (*seq_range_f16)(const sl_attn_block *b, const float *qc, float *acc, float *mx,
                          float *sum, int lo, int hi);
    /* n floats to f16, rounded to nearest even (as sl_f32_to_fp16 for
     * finite values); NULL: sl_f32_to_fp16 element by element. */
    void (*to_f16)(const float *x, uint16_t *y, int n);
} sl_attn_kernels;

/* The block's tokens (n_tok, or one) attended with kr's kernels: the
 * query-block kernel when the set has one, else token by token; f16 or
 * f32 cache. Bit-identical either way. */
void sl_attn_attend_tokens(const sl_attn_kernels *kr, const sl_attn_block *b, int f16);

/* softmax(q . K * scale) . V for each query row of the block over a cache
 * of any K and V types (k_type, v_type: SL_TYPE_F32, F16, Q8_0 or Q4_0), as
 * llama.cpp's one-chunk flash attention computes it, the path it takes
 * for quantised or mixed caches: each query row converted to the type K's
 * dot product takes (Q8_0 for quantised K, f16 for f16 K), then position
 * by position from pos_lo (or over sel): the score by that dot product, scaled; a new
 * maximum rescales the accumulator and sum by expf(old - new), otherwise
 * the weight is expf(s - max); the value row (dequantised to f32 unless
 * it is f16 or f32) added with that weight, into an f16 accumulator when
 * V is f16, else f32; the sum as sum x ms + w, rounded twice (no FMA). Then the sinks and one
 * division. Each row's result depends on its own inputs only, so the
 * rows of a group may be computed together (each K row and dequantised V
 * row read once for the group). Head sizes of quantised types are
 * multiples of 32. kr gives the element loops. With split_n > 1 each
 * chunk of split_len positions is attended so from a fresh state (the
 * sinks in the first), and the chunks' maxima, sums and f32 accumulators
 * combined in order (ggml_flash_attn_ext_reduce_partials: new maximum,
 * both sides rescaled by expf, the sums as s_old e_old + s_c e_c), then
 * divided. */
void sl_attn_attend_seq(const sl_attn_kernels *kr, const sl_attn_block *b, int k_type,
                        int v_type);

/* The kernels for this CPU (AVX2+F16C when the quant dispatch chose AVX2,
 * with the 512-bit grouped-query steps when the CPU has AVX-512F; NEON on
 * ARM64; else scalar). Static; never NULL. */
const sl_attn_kernels *sl_attn_kernels_get(void);

/* The scalar reference set, for tests. */
const sl_attn_kernels *sl_attn_kernels_ref(void);

/* AVX2 set, or NULL when not compiled in (attn_kernels_avx2.c). */
const sl_attn_kernels *sl_attn_kernels_avx2(void);

/* The AVX2 set whose grouped-query attention (eight query rows or more per
 * K/V head) takes 512-bit steps (attn_kernels512_avx2.c), bit-identical to
 * it; NULL when not compiled in or the CPU lacks AVX-512F. */
const sl_attn_kernels *sl_attn_kernels_avx512(void);

#endif
