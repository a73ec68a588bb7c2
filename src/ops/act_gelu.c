/* act_gelu.c - GeGLU's tanh GELU as llama.cpp's CPU backend computes it:
 * the input rounded to f16 and looked up in a table of f16 GELU values
 * (ggml's GGML_GELU_FP16 path), with x <= -10 giving 0 and x >= 10 giving x.
 * The table entry for an f16 input h is fp16(gelu(h)), computed here when
 * needed rather than stored (the same bits, and no 128 KiB table). */
#include <math.h>

#include "ops/ops.h"
#include "quant/quant.h"

/* The tanh form in the reference's float order: its compiler fuses
 * 1 + a x x into one multiply-add. */
static float gelu_tanh(float x)
{
    const float a = 0.044715f, s = 0.79788456080286535587989211986876f;
    return 0.5f * x * (1.0f + tanhf(s * x * fmaf(a * x, x, 1.0f)));
}

float sl_gelu_f16(float x)
{
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    const float h = sl_fp16_to_f32(sl_f32_to_fp16(x));
    return sl_fp16_to_f32(sl_f32_to_fp16(gelu_tanh(h)));
}

void sl_geglu(float *x, const float *g, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        x[i] = v >= 10.0f ? v * g[i] : sl_gelu_f16(v) * g[i];
    }
}
