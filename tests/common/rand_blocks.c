/* rand_blocks.c - see rand_blocks.h. */
#include "common/rand_blocks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant_internal.h"

uint32_t t_rng_u32(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 32);
}

float t_rng_gauss(uint64_t *state)
{
    double u1 = (t_rng_u32(state) + 0.5) / 4294967296.0;
    double u2 = (t_rng_u32(state) + 0.5) / 4294967296.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void t_fill_rp32(uint64_t *state, sl_type t, uint8_t *b, int nb, t_fill mode)
{
    const bool e8m0 = t == SL_TYPE_MXFP4;
    const size_t bb = e8m0 ? 17 : 18;
    if (mode == T_FILL_GAUSS) {
        float *x = malloc(sizeof(float) * SL_QK * (size_t)nb);
        if (!x) abort();
        for (int i = 0; i < SL_QK * nb; i++) x[i] = t_rng_gauss(state);
        sl_type_get(t)->from_float(x, b, SL_QK * nb);
        free(x);
        return;
    }
    if (mode == T_FILL_ZERO) {
        memset(b, 0, bb * (size_t)nb);
        return;
    }
    for (size_t i = 0; i < bb * (size_t)nb; i++) b[i] = (uint8_t)t_rng_u32(state);
    for (int i = 0; i < nb; i++) {
        uint8_t *p = b + (size_t)i * bb;
        if (e8m0) {
            p[0] = mode == T_FILL_HUGE_SCALE   ? (uint8_t)(200 + t_rng_u32(state) % 20)
                   : mode == T_FILL_TINY_SCALE ? (uint8_t)(t_rng_u32(state) % 3)
                                               : (uint8_t)(118 + t_rng_u32(state) % 16);
            continue;
        }
        uint16_t h;
        if (mode == T_FILL_HUGE_SCALE) {
            h = 0x7BFF;
        } else if (mode == T_FILL_TINY_SCALE) {
            h = (uint16_t)(1 + t_rng_u32(state) % 0x3FF);
        } else {
            const uint32_t e = 7 + t_rng_u32(state) % 12; /* the exponent drawn first */
            h = (uint16_t)((e << 10) | (t_rng_u32(state) & 0x3FF));
        }
        h |= (uint16_t)((t_rng_u32(state) & 1) << 15);
        memcpy(p, &h, 2);
    }
}

void t_make_act(uint64_t *state, sl_type at, void *y, int n, float scale, bool zeros)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    if (!x) abort();
    for (int i = 0; i < n; i++) x[i] = zeros ? 0.0f : scale * t_rng_gauss(state);
    sl_quant_from_float_isa(at, SL_ISA_SCALAR)(x, y, n);
    free(x);
}
