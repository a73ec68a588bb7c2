/* quant_neon.h - the aarch64 Advanced SIMD (NEON) kernel set.
 *
 * The *_neon.c files fill the NEON kernel set of the dispatch (quant.c):
 * the K-quants (Q2_K .. Q6_K) with the Q8_K activation quantiser, Q8_0 with
 * its quantiser (both single- and multi-token), and the f32 / f16 / bf16
 * dots. Every kernel computes its
 * scalar twin's integers and float steps in the twin's order, so its bits
 * are the twin's (and the AVX2 kernel's). With dotprod the integer inner
 * loops use SDOT (*_dotprod.c, built with -march=armv8.2-a+dotprod and only
 * called when the CPU has it); without, widening multiplies and pairwise
 * adds give the same int32 lanes. The legacy types Q4_0 .. Q5_1 have both
 * forms (vec_dot_legacy_neon.c / vec_dot_legacy_neon_dotprod.c); the table types IQ4_NL, MXFP4 and IQ4_XS have both
 * forms (vec_dot_iq_neon.c / vec_dot_iq_dotprod.c), and so has the rp32
 * order of Q4_0 / IQ4_NL / MXFP4 on both its layouts (vec_dot_rp32_neon*.c,
 * reached through vec_dot_rp32_ref.c's and vec_dot_rp32x8_ref.c's dispatch).
 * So have Q4_K's repacked orders (vec_dot_rp32_neon.h too, reached through
 * vec_dot_n_ref.c's dispatch).
 * Each fill returns false (and leaves k untouched) when built for another
 * target. Include only inside src/quant/ (and tests). */
#ifndef SL_QUANT_QUANT_NEON_H
#define SL_QUANT_QUANT_NEON_H

#include <stdbool.h>
#include <stdint.h>

#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"

bool sl_vec_dot_fill_k_neon(sl_quant_kernels *k, bool dotprod);
bool sl_vec_dot_fill_q8_neon(sl_quant_kernels *k, bool dotprod);
bool sl_vec_dot_fill_fp_neon(sl_quant_kernels *k);
/* Q4_0, Q5_0 (against Q8_0) and Q4_1, Q5_1 (against Q8_1), single- and
 * multi-token, the SDOT form when dotprod (vec_dot_legacy_neon.c) */
bool sl_vec_dot_fill_legacy_neon(sl_quant_kernels *k, bool dotprod);
/* IQ4_NL, MXFP4 (against Q8_0) and IQ4_XS (against Q8_K), single- and
 * multi-token, the SDOT form when dotprod (vec_dot_iq_neon.c; called by
 * sl_vec_dot_fill_k_neon, so the dispatch's NEON branch fills them) */
bool sl_vec_dot_fill_iq_neon(sl_quant_kernels *k, bool dotprod);

/* The SDOT twins of the K-quant and Q8_0 dots into k (vec_dot_k_dotprod.c,
 * built for ARMv8.2-A+dotprod: call only when the CPU has SDOT). */
void sl_vec_dot_k_dotprod_fill(sl_quant_kernels *k);
/* The same for the table types (vec_dot_iq_dotprod.c) and the legacy
 * types (vec_dot_legacy_neon_dotprod.c). */
void sl_vec_dot_iq_dotprod_fill(sl_quant_kernels *k);
void sl_vec_dot_legacy_dotprod_fill(sl_quant_kernels *k);

/* The rp32 kernels of one type (vec_dot_rp.h contracts): the multi-token
 * and eight-row kernels on the plain layout, the eight-row one on x8. */
typedef struct sl_rp32_neon {
    sl_vec_dot_n_fn n;
    sl_vec_dot_rows8_fn rows8;
    sl_vec_dot_rows8_fn x8;
} sl_rp32_neon;

/* Fills *k with the NEON rp32 kernels of type (Q4_0, IQ4_NL, MXFP4), the
 * SDOT forms when dotprod (call with true only when the CPU has SDOT);
 * false, *k untouched, for other types or off aarch64
 * (vec_dot_rp32_neon.c). */
bool sl_rp32_neon_get(sl_type type, bool dotprod, sl_rp32_neon *k);
/* The SDOT forms alone (vec_dot_rp32_neon_dotprod.c). */
bool sl_rp32_sdot_get(sl_type type, sl_rp32_neon *k);

/* The same for Q4_K's repacked orders (vec_dot_rp.h: gemm, gemv): the
 * multi-token kernel and the eight-row one (x8 NULL); false off aarch64. */
bool sl_rp_q4k_neon_get(sl_rp_order order, bool dotprod, sl_rp32_neon *k);
bool sl_rp_q4k_sdot_get(sl_rp_order order, sl_rp32_neon *k);

/* Whether the NEON set was chosen with SDOT (quant.c; false before
 * sl_quant_init and off aarch64). */
bool sl_quant_neon_dotprod(void);

/* The activation quantisers, bit for bit sl_quant_q8_K_ref and
 * sl_quant_q8_0_ref (quant_act_neon.c). */
void sl_quant_q8_K_neon(const float *src, void *dst, int64_t n);
void sl_quant_q8_0_neon(const float *src, void *dst, int64_t n);

#endif
