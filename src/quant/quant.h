/* quant.h - tensor element types and their traits table.
 *
 * The traits table is the single source of truth for a type: its GGUF id,
 * name, elements per block, bytes per block, and its kernels (dequantise,
 * quantise, dot products). Type ids are the ones GGUF files use on disk.
 * Knows nothing about files or models.
 *
 * The files of src/quant/, by concern (each kernel file has a scalar
 * reference twin, *_ref.c, that the bit tests hold it to):
 *   quant.c                   the traits table: one row per type id
 *   quant_blocks.h            the on-disk block layouts
 *   quant_fp.c                f16 / bf16 / f32 element conversions
 *   quant_legacy.c, quant_k.c, quant_iq.c
 *                             dequantise (and the legacy types' quantisers)
 *   quant_k_quantize.c, quant_fit.c
 *                             the K-quant quantisers and their scale search
 *   quant_fast*.c             the activation quantisers (Q8_0, Q8_K, ...)
 *                             behind sl_quantize_fast; quant_act_neon.c
 *   vec_dot_{fp,legacy,k,iq}_{ref,avx2,neon,dotprod}.c
 *                             one weight row times one activation row, per
 *                             type family and instruction set
 *   vec_dot_fp_order*.c       f16 / bf16 dots in llama.cpp's two orders
 *   vec_dot_n_*.c             one weight row times several tokens
 *   vec_dot_rp.h, vec_dot_rp32*.c, vec_dot_rp32x8*.c
 *                             the orders of llama.cpp's repacked gemm/gemv
 *                             (Q4_K; Q4_0 / IQ4_NL / MXFP4, plain and x8)
 *   quant_internal.h, quant_avx2.h, quant_neon.h, *_neon.h, vec_dot_k_lanes.h
 *                             declarations and helpers shared inside here
 * The matrix products over these kernels are ops/matmul.c's. */
#ifndef SL_QUANT_QUANT_H
#define SL_QUANT_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sl_type {
    SL_TYPE_F32 = 0,
    SL_TYPE_F16 = 1,
    SL_TYPE_Q4_0 = 2,
    SL_TYPE_Q4_1 = 3,
    /* 4, 5: removed Q4_2 / Q4_3, never valid in a file */
    SL_TYPE_Q5_0 = 6,
    SL_TYPE_Q5_1 = 7,
    SL_TYPE_Q8_0 = 8,
    SL_TYPE_Q8_1 = 9,
    SL_TYPE_Q2_K = 10,
    SL_TYPE_Q3_K = 11,
    SL_TYPE_Q4_K = 12,
    SL_TYPE_Q5_K = 13,
    SL_TYPE_Q6_K = 14,
    SL_TYPE_Q8_K = 15,
    SL_TYPE_IQ2_XXS = 16,
    SL_TYPE_IQ2_XS = 17,
    SL_TYPE_IQ3_XXS = 18,
    SL_TYPE_IQ1_S = 19,
    SL_TYPE_IQ4_NL = 20,
    SL_TYPE_IQ3_S = 21,
    SL_TYPE_IQ2_S = 22,
    SL_TYPE_IQ4_XS = 23,
    SL_TYPE_I8 = 24,
    SL_TYPE_I16 = 25,
    SL_TYPE_I32 = 26,
    SL_TYPE_I64 = 27,
    SL_TYPE_F64 = 28,
    SL_TYPE_IQ1_M = 29,
    SL_TYPE_BF16 = 30,
    /* 31-33: removed Q4_0_4_4 etc. */
    SL_TYPE_TQ1_0 = 34,
    SL_TYPE_TQ2_0 = 35,
    /* 36-38: removed */
    SL_TYPE_MXFP4 = 39,
    SL_TYPE_COUNT = 40,
} sl_type;

/* Dequantise n elements (a multiple of block_size) from blocks to f32. */
typedef void (*sl_to_float_fn)(const void *src, float *dst, int64_t n);
/* Quantise n elements (a multiple of block_size) from f32 to blocks.
 * Inputs must be finite. Deterministic: the same floats give the same bytes
 * on every machine and instruction set. The activation types (Q8_0, Q8_1,
 * Q8_K) never emit the level -128; the dot kernels rely on that. */
typedef void (*sl_from_float_fn)(const float *src, void *dst, int64_t n);
/* Dot product of n elements: x in this type, y in vec_dot_type (produced
 * by that type's from_float); writes *s. n is a multiple of block_size.
 * Pairings: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL MXFP4 with Q8_0; Q2_K..Q6_K and
 * IQ4_XS with Q8_K; F32 F16 BF16 with F32 (the activation row as is). */
typedef void (*sl_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);
/* Multi-token form: nt dot products of one weight row x against the
 * activation rows ys[0..nt) (each as vec_dot's y), 1 <= nt <= the traits'
 * vec_dot_n_max; writes s[0..nt). Each weight block is decoded once and
 * reused for all nt rows. s[t] has exactly the bits vec_dot(n, &s[t], x,
 * ys[t]) of the same kernel set gives: per (row, token) pair the integer
 * sums and the float accumulation order are the single kernel's, so
 * batching tokens never changes a result. */
typedef void (*sl_vec_dot_n_fn)(int64_t n, float *s, const void *x, const void *const *ys, int nt);

/* No vec_dot_n takes more activation rows than this. */
#define SL_VEC_DOT_N_MAX 8

typedef struct sl_type_traits {
    const char *name;          /* lower-case, as GGUF tools print it: "q4_K" */
    uint32_t block_size;       /* elements per block (1 for plain types) */
    uint32_t type_size;        /* bytes per block */
    bool is_quantized;
    sl_to_float_fn to_float;      /* NULL: we cannot dequantise this type */
    sl_from_float_fn from_float;  /* NULL: no quantiser */
    sl_type vec_dot_type;         /* type the other operand is quantised to */
    sl_vec_dot_fn vec_dot;        /* NULL until a kernel exists */
    sl_vec_dot_n_fn vec_dot_n;    /* NULL where absent (then call vec_dot per row) */
    int vec_dot_n_max;            /* largest nt vec_dot_n takes (<= SL_VEC_DOT_N_MAX) */
} sl_type_traits;

/* Traits of type id t, or NULL if t is not a type id sluice knows the block
 * layout of (removed ids, out of range). The table is static; never free. */
const sl_type_traits *sl_type_get(uint32_t t);

/* Name for messages; "unknown" for ids sl_type_get rejects. */
const char *sl_type_name(uint32_t t);

/* Looks a type up by name (case-insensitive: "q4_k", "Q8_0", "f16").
 * Returns false if no such type. */
bool sl_type_from_name(const char *name, sl_type *out);

/* Bytes of n elements of type t. False if t is unknown, n is not a multiple of
 * the block size, or the result overflows. */
bool sl_type_nbytes(uint32_t t, uint64_t n, uint64_t *bytes);

/* ---- kernel dispatch --------------------------------------------------------
 * The traits' vec_dot pointers (and the from_float of the activation types
 * Q8_0, Q8_1, Q8_K) are chosen once per process from the CPU's features:
 * AVX2+FMA+F16C on x86-64, else the scalar reference kernels. Setting the
 * environment variable SLUICE_NO_SIMD=1 (any value but "0" or "") before the
 * first call forces the scalar kernels. Results of the two paths agree to
 * float rounding (integer parts are exact; only the float accumulation
 * order differs); activation quantisation is bit-identical. */
typedef enum sl_isa {
    SL_ISA_SCALAR = 0,
    SL_ISA_AVX2 = 1,
    SL_ISA_NEON = 2, /* aarch64 Advanced SIMD (with SDOT where the CPU has it) */
    SL_ISA_COUNT = 3,
} sl_isa;

/* Chooses the kernels. Thread-safe and idempotent (pthread_once); called
 * lazily by sl_type_get, so calling it explicitly is optional. */
void sl_quant_init(void);

/* The instruction set the traits table uses. */
sl_isa sl_quant_isa(void);

/* "scalar", "avx2", "neon". */
const char *sl_isa_name(sl_isa isa);

/* The kernel set the traits table uses, as `sluice bench --kernels` names
 * it: "avx2", "neon", "neon+dotprod" or "ref" (also when SLUICE_NO_SIMD
 * forced the scalar kernels). Static string. */
const char *sl_quant_kernel_set(void);

/* The vec_dot of weight type t built for isa, or NULL if that kernel does not
 * exist or isa cannot run on this CPU. For tests and benchmarks that compare
 * kernel variants; everything else uses the traits table. */
sl_vec_dot_fn sl_quant_vec_dot_isa(uint32_t t, sl_isa isa);

/* Same for the multi-token kernel; *max (if max != NULL) receives its
 * vec_dot_n_max (0 when NULL is returned). */
sl_vec_dot_n_fn sl_quant_vec_dot_n_isa(uint32_t t, sl_isa isa, int *max);

/* Same for the activation quantiser (from_float) of type t. */
sl_from_float_fn sl_quant_from_float_isa(uint32_t t, sl_isa isa);

/* Quantises n elements (a multiple of t's block size) like t's from_float,
 * but with the scale search cut to one candidate per group and no
 * refinement: several times faster, squared error typically 2-10% higher.
 * F16, Q4_0, Q4_K, Q5_K and Q6_K have bulk quantisers with an AVX2 twin chosen
 * like the dot kernels (~1 ns per element on AVX2); their bytes are the
 * same on every machine. Deterministic. Meant for bulk synthetic weights.
 * Q8_0 takes its levels from the stored f16 scale (its from_float, the
 * activation quantiser, follows the reference's x86 path instead). Other
 * types whose from_float has no search (Q8_K, MXFP4, ...) just use it.
 * Returns false if t has no quantiser. */
bool sl_quantize_fast(uint32_t t, const float *src, void *dst, int64_t n);

/* The bulk quantiser sl_quantize_fast uses for t on isa, or NULL if t has
 * none of its own there (F16, Q4_0, Q4_K, Q5_K and Q6_K have one in every set,
 * with identical bytes) or isa cannot run on this CPU. For tests. */
sl_from_float_fn sl_quantize_fast_isa(uint32_t t, sl_isa isa);

/* IEEE half / bfloat16 conversions (scalar, exact, round-to-nearest-even). */
float sl_fp16_to_f32(uint16_t h);
uint16_t sl_f32_to_fp16(float f);
float sl_bf16_to_f32(uint16_t h);
uint16_t sl_f32_to_bf16(float f);

#endif
