/* quant.c - the traits table: one row per GGUF tensor type id.
 *
 * Owns: block sizes and bytes per block of every type id GGUF defines (so a
 * file holding any of them can be inspected), which row functions exist,
 * and the one-time choice of dot kernels for the CPU we run on.
 * Must not know: files, tensors, models. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <strings.h>

#include "quant/quant_internal.h"
#include "util/checked.h"
#include "util/cpu.h"
#include "quant/quant_neon.h"

#define ROW(id, nm, bs, ts, q, tf, ff, vdt)                                    \
    [id] = {.name = nm, .block_size = bs, .type_size = ts, .is_quantized = q, \
            .to_float = tf, .from_float = ff, .vec_dot_type = vdt, .vec_dot = NULL}
/* a type with a block struct (quant_blocks.h pins each struct's size):
 * its bytes per block are the struct's */
#define BLK(id, nm, bs, blk, tf, ff, vdt) ROW(id, nm, bs, sizeof(blk), true, tf, ff, vdt)
/* one scalar of type c per element */
#define SCALAR(id, nm, c, tf, ff) ROW(id, nm, 1, sizeof(c), false, tf, ff, id)

/* Written once by choose_kernels (vec_dot, and from_float of the activation
 * types); read-only afterwards. Rows with name == NULL are ids that GGUF
 * never assigned or has removed. The types sluice only stores (no block
 * struct: IQ1-IQ3 but IQ4, TQ) carry GGUF's bytes per block as numbers. */
static sl_type_traits g_traits[SL_TYPE_COUNT] = {
    SCALAR(SL_TYPE_F32, "f32", float, sl_f32_to_float_row, sl_f32_from_float_row),
    /* f16 and bf16 weights meet activations rounded to their own type, as
     * llama.cpp's CPU backend does (its vec_dot_type) */
    SCALAR(SL_TYPE_F16, "f16", uint16_t, sl_f16_to_float_row, sl_f16_from_float_row),
    SCALAR(SL_TYPE_BF16, "bf16", uint16_t, sl_bf16_to_float_row, sl_bf16_from_float_row),
    BLK(SL_TYPE_Q4_0, "q4_0", SL_QK, sl_block_q4_0, sl_dequant_q4_0, sl_quant_q4_0,
        SL_TYPE_Q8_0),
    BLK(SL_TYPE_Q4_1, "q4_1", SL_QK, sl_block_q4_1, sl_dequant_q4_1, sl_quant_q4_1,
        SL_TYPE_Q8_1),
    BLK(SL_TYPE_Q5_0, "q5_0", SL_QK, sl_block_q5_0, sl_dequant_q5_0, sl_quant_q5_0,
        SL_TYPE_Q8_0),
    BLK(SL_TYPE_Q5_1, "q5_1", SL_QK, sl_block_q5_1, sl_dequant_q5_1, sl_quant_q5_1,
        SL_TYPE_Q8_1),
    BLK(SL_TYPE_Q8_0, "q8_0", SL_QK, sl_block_q8_0, sl_dequant_q8_0, sl_quant_q8_0_ref,
        SL_TYPE_Q8_0),
    BLK(SL_TYPE_Q8_1, "q8_1", SL_QK, sl_block_q8_1, sl_dequant_q8_1, sl_quant_q8_1_ref,
        SL_TYPE_Q8_1),
    BLK(SL_TYPE_Q2_K, "q2_K", SL_QK_K, sl_block_q2_K, sl_dequant_q2_K, sl_quant_q2_K,
        SL_TYPE_Q8_K),
    BLK(SL_TYPE_Q3_K, "q3_K", SL_QK_K, sl_block_q3_K, sl_dequant_q3_K, sl_quant_q3_K,
        SL_TYPE_Q8_K),
    BLK(SL_TYPE_Q4_K, "q4_K", SL_QK_K, sl_block_q4_K, sl_dequant_q4_K, sl_quant_q4_K,
        SL_TYPE_Q8_K),
    BLK(SL_TYPE_Q5_K, "q5_K", SL_QK_K, sl_block_q5_K, sl_dequant_q5_K, sl_quant_q5_K,
        SL_TYPE_Q8_K),
    BLK(SL_TYPE_Q6_K, "q6_K", SL_QK_K, sl_block_q6_K, sl_dequant_q6_K, sl_quant_q6_K,
        SL_TYPE_Q8_K),
    BLK(SL_TYPE_Q8_K, "q8_K", SL_QK_K, sl_block_q8_K, sl_dequant_q8_K, sl_quant_q8_K_ref,
        SL_TYPE_Q8_K),
    ROW(SL_TYPE_IQ2_XXS, "iq2_xxs", SL_QK_K, 66, true, NULL, NULL, SL_TYPE_Q8_K),
    ROW(SL_TYPE_IQ2_XS, "iq2_xs", SL_QK_K, 74, true, NULL, NULL, SL_TYPE_Q8_K),
    ROW(SL_TYPE_IQ3_XXS, "iq3_xxs", SL_QK_K, 98, true, NULL, NULL, SL_TYPE_Q8_K),
    ROW(SL_TYPE_IQ1_S, "iq1_s", SL_QK_K, 50, true, NULL, NULL, SL_TYPE_Q8_K),
    BLK(SL_TYPE_IQ4_NL, "iq4_nl", SL_QK, sl_block_iq4_nl, sl_dequant_iq4_nl, sl_quant_iq4_nl,
        SL_TYPE_Q8_0),
    ROW(SL_TYPE_IQ3_S, "iq3_s", SL_QK_K, 110, true, NULL, NULL, SL_TYPE_Q8_K),
    ROW(SL_TYPE_IQ2_S, "iq2_s", SL_QK_K, 82, true, NULL, NULL, SL_TYPE_Q8_K),
    BLK(SL_TYPE_IQ4_XS, "iq4_xs", SL_QK_K, sl_block_iq4_xs, sl_dequant_iq4_xs, sl_quant_iq4_xs,
        SL_TYPE_Q8_K),
    SCALAR(SL_TYPE_I8, "i8", int8_t, NULL, NULL),
    SCALAR(SL_TYPE_I16, "i16", int16_t, NULL, NULL),
    SCALAR(SL_TYPE_I32, "i32", int32_t, NULL, NULL),
    SCALAR(SL_TYPE_I64, "i64", int64_t, NULL, NULL),
    SCALAR(SL_TYPE_F64, "f64", double, NULL, NULL),
    ROW(SL_TYPE_IQ1_M, "iq1_m", SL_QK_K, 56, true, NULL, NULL, SL_TYPE_Q8_K),
    ROW(SL_TYPE_TQ1_0, "tq1_0", SL_QK_K, 54, true, NULL, NULL, SL_TYPE_Q8_K),
    ROW(SL_TYPE_TQ2_0, "tq2_0", SL_QK_K, 66, true, NULL, NULL, SL_TYPE_Q8_K),
    BLK(SL_TYPE_MXFP4, "mxfp4", SL_QK, sl_block_mxfp4, sl_dequant_mxfp4, sl_quant_mxfp4,
        SL_TYPE_Q8_0),
};

static sl_quant_kernels g_kernels[SL_ISA_COUNT];
static bool g_isa_ok[SL_ISA_COUNT];
static sl_isa g_isa = SL_ISA_SCALAR;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static bool g_dotprod; /* the NEON set uses SDOT (chosen with it) */

static bool env_forces_scalar(void)
{
    const char *v = getenv("SLUICE_NO_SIMD");
    return v && v[0] && !(v[0] == '0' && v[1] == 0);
}

static void choose_kernels(void)
{
    sl_quant_kernels *ref = &g_kernels[SL_ISA_SCALAR];
    sl_vec_dot_fill_legacy_ref(ref);
    sl_vec_dot_fill_k_ref(ref);
    sl_vec_dot_fill_iq_ref(ref);
    sl_vec_dot_fill_fp_ref(ref);
    sl_vec_dot_n_fill_ref(ref);
    sl_quant_fast_fill_ref(ref);
    g_isa_ok[SL_ISA_SCALAR] = true;

    sl_cpu_features cpu;
    sl_cpu_detect(&cpu);
    if (cpu.avx2) {
        sl_quant_kernels *k = &g_kernels[SL_ISA_AVX2];
        bool ok = sl_vec_dot_fill_legacy_avx2(k);
        ok = sl_vec_dot_fill_k_avx2(k) && ok;
        ok = sl_vec_dot_fill_iq_avx2(k) && ok;
        ok = sl_vec_dot_fill_fp_avx2(k) && ok;
        ok = sl_vec_dot_n_fill_avx2(k) && ok;
        ok = sl_quant_fast_fill_avx2(k) && ok;
        g_isa_ok[SL_ISA_AVX2] = ok;
    }
    if (cpu.neon) {
        /* NEON kernels cover what the fill functions list; the rest (the
         * IQ and MXFP4 types, the repacked orders) stay NULL and fall back
         * to the scalar set below */
        sl_quant_kernels *k = &g_kernels[SL_ISA_NEON];
        g_dotprod = cpu.dotprod;
        bool ok = sl_vec_dot_fill_k_neon(k, cpu.dotprod);
        ok = sl_vec_dot_fill_q8_neon(k, cpu.dotprod) && ok;
        ok = sl_vec_dot_fill_fp_neon(k) && ok;
        ok = sl_vec_dot_fill_legacy_neon(k, cpu.dotprod) && ok;
        /* the types without a NEON kernel take the scalar one (with its
         * multi-token twin) into this set, so the set is complete like
         * AVX2's and the traits always name the chosen set's kernel */
        for (int t = 0; t < SL_TYPE_COUNT; t++) {
            if (k->vec_dot[t] || !ref->vec_dot[t]) continue;
            k->vec_dot[t] = ref->vec_dot[t];
            k->vec_dot_n[t] = ref->vec_dot_n[t];
            k->vec_dot_n_max[t] = ref->vec_dot_n_max[t];
        }
        g_isa_ok[SL_ISA_NEON] = ok;
    }
    g_isa = SL_ISA_SCALAR;
    if (!env_forces_scalar()) {
        if (g_isa_ok[SL_ISA_AVX2]) g_isa = SL_ISA_AVX2;
        else if (g_isa_ok[SL_ISA_NEON]) g_isa = SL_ISA_NEON;
    }

    for (int t = 0; t < SL_TYPE_COUNT; t++) {
        if (!g_traits[t].name) continue;
        sl_vec_dot_fn vd = g_kernels[g_isa].vec_dot[t];
        sl_from_float_fn ff = g_kernels[g_isa].from_float[t];
        g_traits[t].vec_dot = vd ? vd : ref->vec_dot[t];
        /* the multi-token kernel must come from vec_dot's own set: only
         * then are its bits the single kernel's */
        const sl_quant_kernels *nk = vd ? &g_kernels[g_isa] : ref;
        g_traits[t].vec_dot_n = nk->vec_dot_n[t];
        g_traits[t].vec_dot_n_max = nk->vec_dot_n[t] ? nk->vec_dot_n_max[t] : 0;
        if (ff) g_traits[t].from_float = ff;
    }
}

void sl_quant_init(void)
{
    pthread_once(&g_once, choose_kernels);
}

sl_isa sl_quant_isa(void)
{
    sl_quant_init();
    return g_isa;
}

const char *sl_isa_name(sl_isa isa)
{
    switch (isa) {
    case SL_ISA_SCALAR: return "scalar";
    case SL_ISA_AVX2: return "avx2";
    case SL_ISA_NEON: return "neon";
    default: return "unknown";
    }
}

const char *sl_quant_kernel_set(void)
{
    switch (sl_quant_isa()) {
    case SL_ISA_AVX2: return "avx2";
    case SL_ISA_NEON: return g_dotprod ? "neon+dotprod" : "neon";
    default: return "ref";
    }
}

bool sl_quant_neon_dotprod(void)
{
    sl_quant_init();
    return g_dotprod;
}

sl_vec_dot_fn sl_quant_vec_dot_isa(uint32_t t, sl_isa isa)
{
    sl_quant_init();
    if (t >= SL_TYPE_COUNT || (unsigned)isa >= SL_ISA_COUNT || !g_isa_ok[isa]) return NULL;
    return g_kernels[isa].vec_dot[t];
}

sl_vec_dot_n_fn sl_quant_vec_dot_n_isa(uint32_t t, sl_isa isa, int *max)
{
    sl_quant_init();
    sl_vec_dot_n_fn f = NULL;
    if (t < SL_TYPE_COUNT && (unsigned)isa < SL_ISA_COUNT && g_isa_ok[isa])
        f = g_kernels[isa].vec_dot_n[t];
    if (max) *max = f ? g_kernels[isa].vec_dot_n_max[t] : 0;
    return f;
}

sl_from_float_fn sl_quant_from_float_isa(uint32_t t, sl_isa isa)
{
    sl_quant_init();
    if (t >= SL_TYPE_COUNT || (unsigned)isa >= SL_ISA_COUNT || !g_isa_ok[isa]) return NULL;
    return g_kernels[isa].from_float[t];
}

const sl_type_traits *sl_type_get(uint32_t t)
{
    if (t >= SL_TYPE_COUNT || !g_traits[t].name) return NULL;
    sl_quant_init();
    return &g_traits[t];
}

const char *sl_type_name(uint32_t t)
{
    /* No dispatch needed for a name; avoids pthread_once in message paths. */
    if (t >= SL_TYPE_COUNT || !g_traits[t].name) return "unknown";
    return g_traits[t].name;
}

bool sl_type_from_name(const char *name, sl_type *out)
{
    if (!name) return false;
    for (int t = 0; t < SL_TYPE_COUNT; t++) {
        if (g_traits[t].name && strcasecmp(g_traits[t].name, name) == 0) {
            if (out) *out = (sl_type)t;
            return true;
        }
    }
    return false;
}

sl_from_float_fn sl_quantize_fast_isa(uint32_t t, sl_isa isa)
{
    sl_quant_init();
    if (t >= SL_TYPE_COUNT || (unsigned)isa >= SL_ISA_COUNT || !g_isa_ok[isa]) return NULL;
    return g_kernels[isa].quantize_fast[t];
}

bool sl_quantize_fast(uint32_t t, const float *src, void *dst, int64_t n)
{
    const sl_type_traits *tr = sl_type_get(t);
    if (!tr || !tr->from_float) return false;
    sl_from_float_fn f = g_kernels[g_isa].quantize_fast[t];
    if (!f) f = g_kernels[SL_ISA_SCALAR].quantize_fast[t];
    if (f) {
        f(src, dst, n);
        return true;
    }
    f = tr->from_float;
    switch (t) {
    case SL_TYPE_Q4_1: f = sl_quant_q4_1_fast; break;
    case SL_TYPE_Q5_0: f = sl_quant_q5_0_fast; break;
    case SL_TYPE_Q5_1: f = sl_quant_q5_1_fast; break;
    case SL_TYPE_Q2_K: f = sl_quant_q2_K_fast; break;
    case SL_TYPE_Q3_K: f = sl_quant_q3_K_fast; break;
    case SL_TYPE_IQ4_NL: f = sl_quant_iq4_nl_fast; break;
    case SL_TYPE_IQ4_XS: f = sl_quant_iq4_xs_fast; break;
    default: break;
    }
    f(src, dst, n);
    return true;
}

bool sl_type_nbytes(uint32_t t, uint64_t n, uint64_t *bytes)
{
    if (t >= SL_TYPE_COUNT || !g_traits[t].name) return false;
    const sl_type_traits *tr = &g_traits[t];
    if (n % tr->block_size != 0) return false;
    return sl_mul_u64(n / tr->block_size, tr->type_size, bytes);
}
