/* rope_sections.c - IMROPE's section rule (qwen35moe's multi-section rope,
 * ../shared/ARCHS.md section 1): which rotated pairs take the fourth ("e")
 * position. For text llama.cpp feeds the positions (p, p, p, 0), so the
 * t, h and w pairs rotate exactly as NeoX does and the e pairs by angle 0. */
#include "ops/ops.h"

bool sl_rope_pair_at_zero(const sl_rope *r, int pair)
{
    const int *s = r->sections;
    const int sum = s[0] + s[1] + s[2] + s[3];
    if (sum <= 0) return false;
    const int sector = pair % sum;
    switch (sector % 3) {
    case 0: return sector >= 3 * s[0];
    case 1: return sector >= 3 * s[1];
    default: return sector >= 3 * s[2];
    }
}
