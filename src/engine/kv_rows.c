/* kv_rows.c - storing K/V rows by cache type (see kv_rows.h). */
#include "engine/kv_rows.h"

#include <math.h>
#include <string.h>

#include "quant/quant_blocks.h"

static const char *const names[] = {[SL_KV_F16] = "f16", [SL_KV_F32] = "f32",
                                    [SL_KV_Q8_0] = "q8_0", [SL_KV_Q4_0] = "q4_0"};

bool sl_kv_type_ok(int t) { return t >= SL_KV_F16 && t <= SL_KV_Q4_0; }

bool sl_kv_type_quantized(sl_kv_type t) { return t == SL_KV_Q8_0 || t == SL_KV_Q4_0; }

const char *sl_kv_type_name(sl_kv_type t) { return sl_kv_type_ok((int)t) ? names[t] : "?"; }

bool sl_kv_type_parse(const char *name, sl_kv_type *out)
{
    for (int t = SL_KV_F16; t <= SL_KV_Q4_0; t++)
        if (!strcmp(name, names[t])) {
            *out = (sl_kv_type)t;
            return true;
        }
    return false;
}

sl_type sl_kv_quant_type(sl_kv_type t)
{
    switch (t) {
    case SL_KV_F32: return SL_TYPE_F32;
    case SL_KV_Q8_0: return SL_TYPE_Q8_0;
    case SL_KV_Q4_0: return SL_TYPE_Q4_0;
    default: return SL_TYPE_F16;
    }
}

uint64_t sl_kv_row_bytes(sl_kv_type t, uint64_t n)
{
    switch (t) {
    case SL_KV_F32: return n * 4;
    case SL_KV_Q8_0: return n / SL_KV_BLOCK * sizeof(sl_block_q8_0);
    case SL_KV_Q4_0: return n / SL_KV_BLOCK * sizeof(sl_block_q4_0);
    default: return n * 2;
    }
}

/* Q4_0 as the reference's cache append computes it: the scale is the
 * signed value of largest magnitude over -8 (the first such value wins),
 * levels x / d + 8.5 truncated, capped at 15. Rounded product then sum, as
 * the reference's portable code computes (no fused multiply-add). */
static void store_q4_0(const float *x, sl_block_q4_0 *b, int n)
{
    for (int i = 0; i < n / SL_KV_BLOCK; i++, b++, x += SL_KV_BLOCK) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < SL_KV_BLOCK; j++)
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = sl_f32_to_fp16(d);
        for (int j = 0; j < SL_KV_BLOCK / 2; j++) {
            const float x0 = x[j] * id, x1 = x[j + SL_KV_BLOCK / 2] * id;
            const float y0 = x0 + 8.5f, y1 = x1 + 8.5f;
            const int l0 = (int8_t)y0, l1 = (int8_t)y1;
            b->qs[j] = (uint8_t)((l0 < 15 ? l0 : 15) | (l1 < 15 ? l1 : 15) << 4);
        }
    }
}

void sl_kv_row_store(sl_kv_type t, const float *x, void *dst, int n)
{
    switch (t) {
    case SL_KV_F32:
        memcpy(dst, x, (size_t)n * sizeof(float));
        break;
    case SL_KV_Q8_0: /* the activation quantiser: the reference's x86 rule */
        sl_type_get(SL_TYPE_Q8_0)->from_float(x, dst, n);
        break;
    case SL_KV_Q4_0:
        store_q4_0(x, dst, n);
        break;
    default:
        for (int i = 0; i < n; i++) ((uint16_t *)dst)[i] = sl_f32_to_fp16(x[i]);
        break;
    }
}
