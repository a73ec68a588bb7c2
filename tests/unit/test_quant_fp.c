/* test_quant_fp.c - IEEE half and bfloat16 conversions, and the traits
 * table's sizes, names and byte counts.
 *
 * Expected values come from the IEEE 754 binary16 layout (1 sign, 5 exponent
 * bits biased by 15, 10 mantissa bits; exponent 0 = subnormal with unit
 * 2^-24) and bfloat16 (the top 16 bits of a binary32), worked by hand in the
 * comments, and from an independent decoder written here with ldexp. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quant/quant.h"
#include "test.h"

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Independent binary16 decoder: (-1)^s * 2^(e-15) * (1 + m/1024), or
 * 2^-14 * m/1024 when e == 0. Returns double; NaN/inf handled by caller. */
static double half_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp((double)m, -24) : ldexp(1024.0 + m, e - 25);
    return s ? -v : v;
}

TEST(fp16_decode_known)
{
    CHECK(sl_fp16_to_f32(0x3C00) == 1.0f);          /* e=15, m=0: 2^0 */
    CHECK(sl_fp16_to_f32(0x3800) == 0.5f);          /* e=14 */
    CHECK(sl_fp16_to_f32(0xC000) == -2.0f);         /* s=1, e=16 */
    CHECK(sl_fp16_to_f32(0x3E00) == 1.5f);          /* m=512: 1 + 1/2 */
    CHECK(sl_fp16_to_f32(0x7BFF) == 65504.0f);      /* e=30, m=1023 */
    CHECK(sl_fp16_to_f32(0x0400) == ldexpf(1, -14)); /* smallest normal */
    CHECK(sl_fp16_to_f32(0x0001) == ldexpf(1, -24)); /* smallest subnormal */
    CHECK(sl_fp16_to_f32(0x03FF) == ldexpf(1023, -24));
    CHECK(sl_fp16_to_f32(0x8001) == -ldexpf(1, -24));
    float nz = sl_fp16_to_f32(0x8000);
    CHECK(nz == 0.0f && signbit(nz));
    CHECK(isinf(sl_fp16_to_f32(0x7C00)) && sl_fp16_to_f32(0x7C00) > 0);
    CHECK(isinf(sl_fp16_to_f32(0xFC00)) && sl_fp16_to_f32(0xFC00) < 0);
    CHECK(isnan(sl_fp16_to_f32(0x7E00)));
    CHECK(isnan(sl_fp16_to_f32(0xFC01)));
}

TEST(fp16_decode_exhaustive)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        int e = (h >> 10) & 31;
        float f = sl_fp16_to_f32((uint16_t)h);
        if (e == 31) {
            if ((h & 1023) ? !isnan(f) : !isinf(f)) bad++;
            continue;
        }
        if ((double)f != half_value((uint16_t)h)) bad++;
        if ((signbit(f) != 0) != ((h >> 15) != 0)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(fp16_encode_known)
{
    CHECK_EQ_INT(sl_f32_to_fp16(1.0f), 0x3C00);
    CHECK_EQ_INT(sl_f32_to_fp16(-2.0f), 0xC000);
    CHECK_EQ_INT(sl_f32_to_fp16(0.0f), 0x0000);
    CHECK_EQ_INT(sl_f32_to_fp16(-0.0f), 0x8000);
    CHECK_EQ_INT(sl_f32_to_fp16(65504.0f), 0x7BFF);
    /* 65519.996 is below the midpoint 65520 between 65504 and 2^16 */
    CHECK_EQ_INT(sl_f32_to_fp16(bitsf(fbits(65520.0f) - 1)), 0x7BFF);
    /* 65520 is a tie; 65504 has odd mantissa 1023, so it goes to 2^16 = inf */
    CHECK_EQ_INT(sl_f32_to_fp16(65520.0f), 0x7C00);
    CHECK_EQ_INT(sl_f32_to_fp16(1e9f), 0x7C00);
    CHECK_EQ_INT(sl_f32_to_fp16(-INFINITY), 0xFC00);
    uint16_t nan = sl_f32_to_fp16(NAN);
    CHECK((nan & 0x7C00) == 0x7C00 && (nan & 0x3FF) != 0);
    /* 1 + 2^-11 is halfway between 1 (m=0, even) and 1 + 2^-10: -> 1 */
    CHECK_EQ_INT(sl_f32_to_fp16(1.0f + ldexpf(1, -11)), 0x3C00);
    /* 1 + 3*2^-11 is halfway between m=1 (odd) and m=2 (even): -> m=2 */
    CHECK_EQ_INT(sl_f32_to_fp16(1.0f + 3 * ldexpf(1, -11)), 0x3C02);
    /* just above the tie rounds up */
    CHECK_EQ_INT(sl_f32_to_fp16(bitsf(fbits(1.0f + ldexpf(1, -11)) + 1)), 0x3C01);
    /* subnormals, unit 2^-24: 2^-25 is a tie between 0 (even) and 1 -> 0 */
    CHECK_EQ_INT(sl_f32_to_fp16(ldexpf(1, -25)), 0x0000);
    CHECK_EQ_INT(sl_f32_to_fp16(bitsf(fbits(ldexpf(1, -25)) + 1)), 0x0001);
    CHECK_EQ_INT(sl_f32_to_fp16(ldexpf(1, -24)), 0x0001);
    /* 1.5 units: tie between 1 (odd) and 2 (even) -> 2 */
    CHECK_EQ_INT(sl_f32_to_fp16(ldexpf(3, -25)), 0x0002);
    /* 1023.5 units: tie between 0x03FF (odd) and 0x0400 (the smallest
     * normal, even mantissa) -> 0x0400 */
    CHECK_EQ_INT(sl_f32_to_fp16(ldexpf(2047, -25)), 0x0400);
    CHECK_EQ_INT(sl_f32_to_fp16(-ldexpf(5, -24)), 0x8005);
    CHECK_EQ_INT(sl_f32_to_fp16(1e-30f), 0x0000);
    CHECK_EQ_INT(sl_f32_to_fp16(ldexpf(1, -14)), 0x0400);
}

TEST(fp16_roundtrip_exhaustive)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if (((h >> 10) & 31) == 31 && (h & 1023)) continue; /* NaN payloads */
        if (sl_f32_to_fp16(sl_fp16_to_f32((uint16_t)h)) != h) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

/* For many floats: the result must be one of the two binary16 neighbours
 * (found with the independent decoder), the nearer one, ties to even. */
TEST(fp16_encode_nearest_even)
{
    uint32_t state = 12345;
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        state = state * 1664525u + 1013904223u;
        /* exponents spread over the half range and a bit beyond */
        uint32_t e = 100 + (state >> 8) % 45;   /* 2^-27 .. 2^17 */
        uint32_t u = (state & 0x80000000u) | e << 23 | ((state * 2654435761u) & 0x7FFFFFu);
        float f = bitsf(u);
        uint16_t h = sl_f32_to_fp16(f);
        double a = fabs((double)f);
        if (a >= 65520.0) {
            if ((h & 0x7FFF) != 0x7C00) bad++;
            continue;
        }
        uint16_t hm = h & 0x7FFF;
        double v = half_value(hm);
        double lo = hm > 0 ? half_value((uint16_t)(hm - 1)) : -1.0;
        double hi = half_value((uint16_t)(hm + 1));
        double err = fabs(v - a);
        if (err > fabs(lo - a) || err > fabs(hi - a)) bad++;
        if ((err == fabs(lo - a) || err == fabs(hi - a)) && (hm & 1)) bad++; /* tie: even */
        if (((h >> 15) != 0) != (f < 0)) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(bf16_conversions)
{
    CHECK(sl_bf16_to_f32(0x3F80) == 1.0f); /* top half of 0x3F800000 */
    CHECK(sl_bf16_to_f32(0xC040) == -3.0f);
    CHECK_EQ_INT(sl_f32_to_bf16(1.0f), 0x3F80);
    /* 1 + 2^-8: halfway between 0x3F80 (even) and 0x3F81 -> 0x3F80 */
    CHECK_EQ_INT(sl_f32_to_bf16(1.0f + ldexpf(1, -8)), 0x3F80);
    /* 1 + 3*2^-8: halfway between 0x3F81 (odd) and 0x3F82 -> 0x3F82 */
    CHECK_EQ_INT(sl_f32_to_bf16(1.0f + 3 * ldexpf(1, -8)), 0x3F82);
    CHECK_EQ_INT(sl_f32_to_bf16(INFINITY), 0x7F80);
    CHECK_EQ_INT(sl_f32_to_bf16(-INFINITY), 0xFF80);
    /* largest float rounds up past the top bf16 to infinity (correct RNE) */
    CHECK_EQ_INT(sl_f32_to_bf16(bitsf(0x7F7FFFFFu)), 0x7F80);
    /* a NaN whose payload sits only in the low 16 bits must stay NaN */
    uint16_t n = sl_f32_to_bf16(bitsf(0x7F800001u));
    CHECK((n & 0x7F80) == 0x7F80 && (n & 0x7F) != 0);
    /* subnormal 0x000116C2: low half 0x16C2 < 0x8000 rounds down -> 0x0001 */
    CHECK_EQ_INT(sl_f32_to_bf16(bitsf(0x000116C2u)), 0x0001);
    CHECK_EQ_INT(sl_f32_to_bf16(bitsf(0x00018000u)), 0x0002); /* tie, odd -> up */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7F80) == 0x7F80 && (h & 0x7F)) continue;
        if (sl_f32_to_bf16(sl_bf16_to_f32((uint16_t)h)) != h) bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

TEST(traits_sizes)
{
    /* bytes per block, from the block layouts (quant_blocks.h / GGUF) */
    static const struct { uint32_t t; uint32_t bs, ts; const char *name; } want[] = {
        {SL_TYPE_F32, 1, 4, "f32"},        {SL_TYPE_F16, 1, 2, "f16"},
        {SL_TYPE_Q4_0, 32, 18, "q4_0"},    {SL_TYPE_Q4_1, 32, 20, "q4_1"},
        {SL_TYPE_Q5_0, 32, 22, "q5_0"},    {SL_TYPE_Q5_1, 32, 24, "q5_1"},
        {SL_TYPE_Q8_0, 32, 34, "q8_0"},    {SL_TYPE_Q8_1, 32, 36, "q8_1"},
        {SL_TYPE_Q2_K, 256, 84, "q2_K"},   {SL_TYPE_Q3_K, 256, 110, "q3_K"},
        {SL_TYPE_Q4_K, 256, 144, "q4_K"},  {SL_TYPE_Q5_K, 256, 176, "q5_K"},
        {SL_TYPE_Q6_K, 256, 210, "q6_K"},  {SL_TYPE_Q8_K, 256, 292, "q8_K"},
        {SL_TYPE_IQ2_XXS, 256, 66, "iq2_xxs"}, {SL_TYPE_IQ2_XS, 256, 74, "iq2_xs"},
        {SL_TYPE_IQ3_XXS, 256, 98, "iq3_xxs"}, {SL_TYPE_IQ1_S, 256, 50, "iq1_s"},
        {SL_TYPE_IQ4_NL, 32, 18, "iq4_nl"}, {SL_TYPE_IQ3_S, 256, 110, "iq3_s"},
        {SL_TYPE_IQ2_S, 256, 82, "iq2_s"}, {SL_TYPE_IQ4_XS, 256, 136, "iq4_xs"},
        {SL_TYPE_I8, 1, 1, "i8"},          {SL_TYPE_I16, 1, 2, "i16"},
        {SL_TYPE_I32, 1, 4, "i32"},        {SL_TYPE_I64, 1, 8, "i64"},
        {SL_TYPE_F64, 1, 8, "f64"},        {SL_TYPE_IQ1_M, 256, 56, "iq1_m"},
        {SL_TYPE_BF16, 1, 2, "bf16"},      {SL_TYPE_TQ1_0, 256, 54, "tq1_0"},
        {SL_TYPE_TQ2_0, 256, 66, "tq2_0"}, {SL_TYPE_MXFP4, 32, 17, "mxfp4"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const sl_type_traits *tr = sl_type_get(want[i].t);
        CHECK_MSG(tr != NULL, "type %u", want[i].t);
        if (!tr) continue;
        CHECK_MSG(tr->block_size == want[i].bs && tr->type_size == want[i].ts,
                  "%s: %u/%u", want[i].name, tr->block_size, tr->type_size);
        CHECK_STR_CONTAINS(tr->name, want[i].name);
        CHECK(strcmp(sl_type_name(want[i].t), want[i].name) == 0);
    }
    /* removed or unassigned ids */
    uint32_t gone[] = {4, 5, 31, 32, 33, 36, 37, 38, 40, 1000, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        CHECK(sl_type_get(gone[i]) == NULL);
        CHECK(strcmp(sl_type_name(gone[i]), "unknown") == 0);
    }
}

TEST(traits_dequant_and_kernels_present)
{
    /* the types issue 2 requires, each dequantisable and with a dot kernel */
    uint32_t need[] = {SL_TYPE_F32,  SL_TYPE_F16,  SL_TYPE_BF16, SL_TYPE_Q4_0,   SL_TYPE_Q4_1,
                       SL_TYPE_Q5_0, SL_TYPE_Q5_1, SL_TYPE_Q8_0, SL_TYPE_Q2_K,   SL_TYPE_Q3_K,
                       SL_TYPE_Q4_K, SL_TYPE_Q5_K, SL_TYPE_Q6_K, SL_TYPE_IQ4_NL, SL_TYPE_IQ4_XS,
                       SL_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        const sl_type_traits *tr = sl_type_get(need[i]);
        CHECK(tr && tr->to_float && tr->from_float && tr->vec_dot);
        const sl_type_traits *at = tr ? sl_type_get(tr->vec_dot_type) : NULL;
        CHECK(at && (tr->vec_dot_type == SL_TYPE_F32 || at->from_float));
    }
    CHECK(sl_type_get(SL_TYPE_IQ2_XXS)->to_float == NULL);
    CHECK(sl_type_get(SL_TYPE_Q8_K)->from_float != NULL);
}

TEST(type_names_and_nbytes)
{
    sl_type t;
    CHECK(sl_type_from_name("Q4_K", &t) && t == SL_TYPE_Q4_K);
    CHECK(sl_type_from_name("q4_k", &t) && t == SL_TYPE_Q4_K);
    CHECK(sl_type_from_name("F16", &t) && t == SL_TYPE_F16);
    CHECK(sl_type_from_name("mxfp4", &t) && t == SL_TYPE_MXFP4);
    CHECK(sl_type_from_name("IQ4_XS", &t) && t == SL_TYPE_IQ4_XS);
    CHECK(!sl_type_from_name("q4_2", &t));
    CHECK(!sl_type_from_name("", &t));
    CHECK(!sl_type_from_name(NULL, &t));
    uint64_t b = 0;
    CHECK(sl_type_nbytes(SL_TYPE_Q4_K, 4096, &b) && b == 16 * 144); /* 4096/256 blocks */
    CHECK(sl_type_nbytes(SL_TYPE_F32, 10, &b) && b == 40);
    CHECK(sl_type_nbytes(SL_TYPE_MXFP4, 64, &b) && b == 34);
    CHECK(!sl_type_nbytes(SL_TYPE_Q4_K, 100, &b));  /* not a multiple of 256 */
    CHECK(!sl_type_nbytes(4, 32, &b));               /* removed id */
    /* 2^64 - 256 elements of q4_K: (2^56 - 1) * 144 < 2^64 still fits;
     * of q8_K: (2^56 - 1) * 292 > 2^64 overflows */
    CHECK(sl_type_nbytes(SL_TYPE_Q4_K, UINT64_MAX - 255, &b) && b == (UINT64_MAX >> 8) * 144);
    CHECK(!sl_type_nbytes(SL_TYPE_Q8_K, UINT64_MAX - 255, &b));
    CHECK(!sl_type_nbytes(SL_TYPE_F64, UINT64_MAX / 4, &b));
}

int main(void)
{
    RUN(fp16_decode_known);
    RUN(fp16_decode_exhaustive);
    RUN(fp16_encode_known);
    RUN(fp16_roundtrip_exhaustive);
    RUN(fp16_encode_nearest_even);
    RUN(bf16_conversions);
    RUN(traits_sizes);
    RUN(traits_dequant_and_kernels_present);
    RUN(type_names_and_nbytes);
    return TEST_REPORT();
}
