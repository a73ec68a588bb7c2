/* test_vecdot_q8_1.c - Q4_1 and Q5_1 pair with Q8_1 activations and compute
 * llama.cpp's AVX2 order (ggml_vec_dot_q4_1_q8_1 / q5_1_q8_1).
 *
 * Oracle, from the block layouts (Q4_1: f16 d, f16 m, 16 bytes of nibbles,
 * element j low nibble of byte j, j + 16 its high nibble; Q5_1: f16 d, f16
 * m, 4 bytes of fifth bits (bit j of the little-endian word for element
 * j), then the nibbles; Q8_1: f16 d, f16 s, 32 levels): per block the eight
 * lanes' exact integer sums of elements 4l..4l+3, each lane FMA'd with the
 * float product d * y.d; the offset a scalar fmaf chain m * y.s; at the end
 * the lanes summed as an AVX2 horizontal add ((l0 + l4) + (l2 + l6)) +
 * ((l1 + l5) + (l3 + l7)), plus the offset. Every kernel set's single- and
 * multi-token kernels must give its bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rand_blocks.h"
#include "ops/ops.h"
#include "quant/quant_internal.h"
#include "test.h"

static uint64_t g_rng = 0xB7E151628AED2A6Bull;

static uint32_t rnd32(void) { return t_rng_u32(&g_rng); }
static float grand(void) { return t_rng_gauss(&g_rng); }

static float h(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return sl_fp16_to_f32(v);
}

/* five_bit: Q5_1 (24-byte blocks) rather than Q4_1 (20) */
static float oracle(bool five_bit, const uint8_t *x, const uint8_t *y, int nb)
{
    const size_t bb = five_bit ? 24 : 20;
    float lane[8] = {0}, summs = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t *b = x + (size_t)i * bb, *a = y + (size_t)i * 36;
        const uint8_t *qs = b + (five_bit ? 8 : 4);
        uint32_t qh = 0;
        if (five_bit) qh = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
        summs = fmaf(h(b + 2), h(a + 2), summs);
        const float dd = h(b) * h(a);
        for (int l = 0; l < 8; l++) {
            int p = 0;
            for (int j = 4 * l; j < 4 * l + 4; j++) {
                int q = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
                if (five_bit) q |= (int)((qh >> j) & 1u) << 4;
                p += q * (int8_t)a[4 + j];
            }
            lane[l] = fmaf(dd, (float)p, lane[l]);
        }
    }
    return (((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]))) +
           summs;
}

TEST(pairs_with_q8_1)
{
    CHECK(sl_type_get(SL_TYPE_Q4_1)->vec_dot_type == SL_TYPE_Q8_1);
    CHECK(sl_type_get(SL_TYPE_Q5_1)->vec_dot_type == SL_TYPE_Q8_1);
    CHECK(sl_matvec_act_type(SL_TYPE_Q4_1) == SL_TYPE_Q8_1);
}

TEST(kernels_match_formula)
{
    enum { NA = SL_VEC_DOT_N_MAX + 1, NBMAX = 40 };
    const sl_type types[2] = {SL_TYPE_Q4_1, SL_TYPE_Q5_1};
    int compared = 0;
    for (int k = 0; k < 2; k++)
        for (int rep = 0; rep < 8; rep++) {
            const int nb = 1 + (int)(rnd32() % NBMAX), n = SL_QK * nb;
            const size_t bb = k ? 24 : 20;
            uint8_t *x = malloc(bb * (size_t)nb);
            uint8_t *y = malloc(36 * (size_t)nb * NA);
            float *f = malloc(sizeof(float) * (size_t)n);
            if (rep % 2) {
                for (int i = 0; i < n; i++) f[i] = grand();
                sl_type_get(types[k])->from_float(f, x, n);
            } else {
                for (size_t i = 0; i < bb * (size_t)nb; i++) x[i] = (uint8_t)rnd32();
                for (int i = 0; i < nb; i++)
                    for (int s = 0; s < 2; s++) {
                        uint16_t v = (uint16_t)(((7 + rnd32() % 12) << 10) | (rnd32() & 0x3FF) |
                                                ((rnd32() & 1) << 15));
                        memcpy(x + (size_t)i * bb + 2 * s, &v, 2);
                    }
            }
            const void *ys[NA];
            float want[NA];
            for (int t = 0; t < NA; t++) {
                for (int i = 0; i < n; i++) f[i] = (float)(1 + t % 3) * grand() + (t == 2 ? 3.0f : 0.0f);
                sl_quant_from_float_isa(SL_TYPE_Q8_1, SL_ISA_SCALAR)(f, y + (size_t)t * nb * 36, n);
                ys[t] = y + (size_t)t * nb * 36;
                want[t] = oracle(k == 1, x, y + (size_t)t * nb * 36, nb);
            }
            for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
                sl_vec_dot_fn fn1 = sl_quant_vec_dot_isa(types[k], (sl_isa)isa);
                int max = 0;
                sl_vec_dot_n_fn fnn = sl_quant_vec_dot_n_isa(types[k], (sl_isa)isa, &max);
                if (!fn1) continue;
                CHECK(fnn != NULL && max >= 1);
                for (int t = 0; t < NA; t++) {
                    float got;
                    fn1(n, &got, x, ys[t]);
                    CHECK_MSG(memcmp(&got, &want[t], 4) == 0, "%s %s nb %d t %d: %.9g, formula %.9g",
                              k ? "q5_1" : "q4_1", sl_isa_name((sl_isa)isa), nb, t, (double)got,
                              (double)want[t]);
                    compared++;
                }
                for (int nt = 1; fnn && nt <= max; nt++)
                    for (int off = 0; off + nt <= NA; off += nt) {
                        float got[SL_VEC_DOT_N_MAX];
                        fnn(n, got, x, ys + off, nt);
                        for (int t = 0; t < nt; t++) {
                            CHECK_MSG(memcmp(&got[t], &want[off + t], 4) == 0,
                                      "%s %s vec_dot_n nt %d t %d: %.9g, formula %.9g",
                                      k ? "q5_1" : "q4_1", sl_isa_name((sl_isa)isa), nt, off + t,
                                      (double)got[t], (double)want[off + t]);
                            compared++;
                        }
                    }
            }
            free(x);
            free(y);
            free(f);
        }
    CHECK_MSG(compared >= 2 * 8 * 9, "%d comparisons", compared);
}

int main(void)
{
    RUN(pairs_with_q8_1);
    RUN(kernels_match_formula);
    return TEST_REPORT();
}
