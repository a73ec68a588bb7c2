/* test_vecdot_iq4xs.c - the IQ4_XS x Q8_K kernels in the reference's order.
 *
 * llama.cpp's AVX2 build that wrote the reference files multiplies every
 * IQ4_XS matrix with ggml_vec_dot_iq4_xs_q8_K: per super-block eight int32
 * lanes, lane l the exact sum over the eight sub-blocks of (ls_k - 32)
 * times elements 4l..4l+3 of sub-block k, then one FMA per lane
 *   lane_l = fmaf(d * y.d, (float)I_l, lane_l)
 * and the lanes summed as its hsum_float_8 ((l0+l4)+(l2+l6)) + ((l1+l5)+
 * (l3+l7)) at the end. node-llama-cpp 3.22.1's build (--llama-ref 2026-09)
 * takes its IQ panel gemm for rows % 8 == 0 instead: one scalar FMA of the
 * super-block's whole integer sum (sl_vec_dot_iq4_xs_panel). The oracles
 * here decode the block bytes themselves (f16 d; 16 bits of high scale
 * bits, two per sub-block; 4 bytes of low scale nibbles, sub-block k in
 * nibble k % 2 of byte k / 2; 128 bytes of nibbles, sub-block k in bytes
 * 16k..16k+15, element j in the low nibble, j + 16 in the high) with their
 * own copy of the level table; every kernel set's single- and multi-token
 * kernels must give the lane form's bits and the panel kernel the panel
 * form's (memcmp), at the variant fixture's row lengths (256 and 1024
 * columns: one and four super-blocks) among others. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rand_blocks.h"
#include "quant/quant_internal.h"
#include "quant/vec_dot_rp.h"
#include "test.h"

static uint64_t g_rng = 0x243F6A8885A308D3ull;

static uint32_t rnd32(void) { return t_rng_u32(&g_rng); }
static float grand(void) { return t_rng_gauss(&g_rng); }

static const int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                               1,    13,   25,  38,  53,  69,  89,  113};

enum { BB = 136 }; /* bytes per block */

/* I_k of super-block i: lane l of sub-block k, times its scale */
static long long lane_int(const uint8_t *b, const sl_block_q8_K *y, int k, int l)
{
    uint16_t sh;
    memcpy(&sh, b + 2, 2);
    const int lo = (b[4 + k / 2] >> (4 * (k % 2))) & 0x0F;
    const int ls = lo | ((sh >> (2 * k)) & 3) << 4;
    long long dot = 0;
    for (int j = 4 * l; j < 4 * l + 4; j++) {
        const uint8_t q = b[8 + 16 * k + j % 16];
        dot += levels[j < 16 ? (q & 0x0F) : (q >> 4)] * y->qs[32 * k + j];
    }
    return (ls - 32) * dot;
}

static float oracle(const uint8_t *x, const sl_block_q8_K *y, int nb)
{
    float lane[8] = {0};
    for (int i = 0; i < nb; i++) {
        const uint8_t *b = x + (size_t)i * BB;
        uint16_t d;
        memcpy(&d, b, 2);
        for (int l = 0; l < 8; l++) {
            long long sumi = 0;
            for (int k = 0; k < 8; k++) sumi += lane_int(b, &y[i], k, l);
            lane[l] = fmaf(sl_fp16_to_f32(d) * y[i].d, (float)sumi, lane[l]);
        }
    }
    return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

static float oracle_panel(const uint8_t *x, const sl_block_q8_K *y, int nb)
{
    float acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t *b = x + (size_t)i * BB;
        uint16_t d;
        memcpy(&d, b, 2);
        long long sumi = 0;
        for (int k = 0; k < 8; k++)
            for (int l = 0; l < 8; l++) sumi += lane_int(b, &y[i], k, l);
        acc = fmaf(sl_fp16_to_f32(d) * y[i].d, (float)sumi, acc);
    }
    return acc;
}

static void fill(uint8_t *x, int nb, bool gauss)
{
    if (gauss) {
        float *f = malloc(sizeof(float) * SL_QK_K * (size_t)nb);
        for (int i = 0; i < SL_QK_K * nb; i++) f[i] = grand();
        sl_type_get(SL_TYPE_IQ4_XS)->from_float(f, x, SL_QK_K * nb);
        free(f);
        return;
    }
    for (int i = 0; i < BB * nb; i++) x[i] = (uint8_t)rnd32();
    for (int i = 0; i < nb; i++) {
        uint16_t h = (uint16_t)(((7 + rnd32() % 12) << 10) | (rnd32() & 0x3FF) | ((rnd32() & 1) << 15));
        memcpy(x + (size_t)i * BB, &h, 2);
    }
}

TEST(kernels_match_formula)
{
    enum { NA = SL_VEC_DOT_N_MAX + 1 };
    int compared = 0, forms_differ = 0;
    for (int rep = 0; rep < 12; rep++) {
        const int nb = rep < 2 ? 1 + 3 * rep : 1 + (int)(rnd32() % 6); /* 256, 1024 first */
        uint8_t *x = malloc((size_t)BB * (size_t)nb);
        sl_block_q8_K *y = malloc(sizeof *y * (size_t)nb * NA);
        const void *ys[NA];
        fill(x, nb, rep % 2 == 1);
        float *a = malloc(sizeof(float) * SL_QK_K * (size_t)nb);
        float want[NA];
        for (int t = 0; t < NA; t++) {
            for (int i = 0; i < SL_QK_K * nb; i++) a[i] = (float)(1 + t % 3) * grand();
            sl_quant_from_float_isa(SL_TYPE_Q8_K, SL_ISA_SCALAR)(a, y + (size_t)t * nb, SL_QK_K * nb);
            ys[t] = y + (size_t)t * nb;
            want[t] = oracle(x, y + (size_t)t * nb, nb);
            const float panel = oracle_panel(x, y + (size_t)t * nb, nb);
            float got;
            sl_vec_dot_iq4_xs_panel(SL_QK_K * nb, &got, x, ys[t]);
            CHECK_MSG(memcmp(&got, &panel, 4) == 0, "panel nb %d t %d: %.9g, formula %.9g", nb, t,
                      (double)got, (double)panel);
            forms_differ += memcmp(&panel, &want[t], 4) != 0;
        }
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            sl_vec_dot_fn f = sl_quant_vec_dot_isa(SL_TYPE_IQ4_XS, (sl_isa)isa);
            int max = 0;
            sl_vec_dot_n_fn fn = sl_quant_vec_dot_n_isa(SL_TYPE_IQ4_XS, (sl_isa)isa, &max);
            if (!f) continue;
            for (int t = 0; t < NA; t++) {
                float got;
                f(SL_QK_K * nb, &got, x, ys[t]);
                CHECK_MSG(memcmp(&got, &want[t], 4) == 0, "%s vec_dot nb %d t %d: %.9g, formula %.9g",
                          sl_isa_name((sl_isa)isa), nb, t, (double)got, (double)want[t]);
                compared++;
            }
            if (!fn) continue;
            for (int nt = 1; nt <= max; nt++)
                for (int off = 0; off + nt <= NA; off += nt) {
                    float got[SL_VEC_DOT_N_MAX];
                    fn(SL_QK_K * nb, got, x, ys + off, nt);
                    for (int t = 0; t < nt; t++) {
                        CHECK_MSG(memcmp(&got[t], &want[off + t], 4) == 0,
                                  "%s vec_dot_n nb %d nt %d t %d: %.9g, formula %.9g",
                                  sl_isa_name((sl_isa)isa), nb, nt, off + t, (double)got[t],
                                  (double)want[off + t]);
                        compared++;
                    }
                }
        }
        free(a);
        free(x);
        free(y);
    }
    CHECK_MSG(compared > 12 * 20, "%d comparisons", compared);
    /* the two orders are told apart on these inputs, so each check bites */
    CHECK_MSG(forms_differ > 12, "the lane and panel forms differ on only %d inputs", forms_differ);
}

/* One super-block: d = 1, every scale 33 (ls - 32 = 1: low nibble 1, high
 * bits 2), every nibble 8 (level 1); activations all 2 with y.d = 0.5:
 * sum 256 * 2 = 512, times 0.5 = 256. */
TEST(hand_built_block)
{
    uint8_t x[BB];
    const uint16_t one = 0x3C00, sh = 0xAAAA; /* bits 10 per sub-block: 2 */
    memcpy(x, &one, 2);
    memcpy(x + 2, &sh, 2);
    memset(x + 4, 0x11, 4);
    memset(x + 8, 0x88, 128);
    sl_block_q8_K y;
    memset(&y, 0, sizeof y);
    y.d = 0.5f;
    memset(y.qs, 2, sizeof y.qs);
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        sl_vec_dot_fn f = sl_quant_vec_dot_isa(SL_TYPE_IQ4_XS, (sl_isa)isa);
        if (!f) continue;
        float s = 0.0f;
        f(SL_QK_K, &s, x, &y);
        CHECK_MSG(s == 256.0f, "%s: %.9g, want 256", sl_isa_name((sl_isa)isa), (double)s);
    }
}

int main(void)
{
    RUN(kernels_match_formula);
    RUN(hand_built_block);
    return TEST_REPORT();
}
