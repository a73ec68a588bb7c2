/* test_quant_dequant.c - dequantisation of hand-built blocks.
 *
 * Every block here is assembled byte by byte from the published layout
 * (drawn in src/quant/quant_blocks.h, after ggml's block definitions) and
 * every expected value is worked out in the comment next to it. f16
 * constants used: 0x3C00 = 1.0, 0x3800 = 0.5, 0x3400 = 0.25, 0xBC00 = -1.0,
 * 0x4000 = 2.0. The tests go through the traits table (to_float), which is
 * what the rest of sluice calls. */
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"
#include "test.h"
#include "util/status.h"

static void deq(sl_type t, const void *blk, float *out, int n)
{
    const sl_type_traits *tr = sl_type_get(t);
    SL_ASSERT(tr && tr->to_float);
    tr->to_float(blk, out, n);
}

#define CHECK_VAL(arr, i, v) CHECK_MSG((arr)[i] == (float)(v), "y[%d] = %.9g, want %.9g", \
                                        (int)(i), (double)(arr)[i], (double)(v))

TEST(q4_0)
{
    sl_block_q4_0 b;
    b.d = 0x3800; /* 0.5 */
    memset(b.qs, 0x88, sizeof b.qs); /* both nibbles 8 -> 8-8 = 0 -> 0.0 */
    b.qs[0] = 0x21;  /* y0 = lo 1 -> (1-8)*0.5 = -3.5 ; y16 = hi 2 -> -6*0.5 = -3.0 */
    b.qs[15] = 0xF0; /* y15 = lo 0 -> -8*0.5 = -4.0 ; y31 = hi 15 -> 7*0.5 = 3.5 */
    float y[32];
    deq(SL_TYPE_Q4_0, &b, y, 32);
    CHECK_VAL(y, 0, -3.5);
    CHECK_VAL(y, 16, -3.0);
    CHECK_VAL(y, 15, -4.0);
    CHECK_VAL(y, 31, 3.5);
    CHECK_VAL(y, 1, 0.0);
    CHECK_VAL(y, 17, 0.0);
}

TEST(q4_1)
{
    sl_block_q4_1 b;
    b.d = 0x3800;  /* 0.5 */
    b.m = 0xBC00;  /* -1.0 */
    memset(b.qs, 0, sizeof b.qs); /* q = 0 -> 0.5*0 - 1 = -1.0 */
    b.qs[0] = 0x21; /* y0 = 0.5*1 - 1 = -0.5 ; y16 = 0.5*2 - 1 = 0.0 */
    b.qs[3] = 0xF0; /* y3 = 0.5*0 - 1 = -1.0 ; y19 = 0.5*15 - 1 = 6.5 */
    float y[32];
    deq(SL_TYPE_Q4_1, &b, y, 32);
    CHECK_VAL(y, 0, -0.5);
    CHECK_VAL(y, 16, 0.0);
    CHECK_VAL(y, 3, -1.0);
    CHECK_VAL(y, 19, 6.5);
    CHECK_VAL(y, 5, -1.0);
}

TEST(q5_0)
{
    sl_block_q5_0 b;
    b.d = 0x3400; /* 0.25 */
    memset(b.qs, 0, sizeof b.qs);
    /* qh as a little-endian u32: bit i is bit 4 of element i.
     * Set bits 0, 8, 17, 31: qh[0] = 0x01 (bit 0), qh[1] = 0x01 (bit 8),
     * qh[2] = 0x02 (bit 17), qh[3] = 0x80 (bit 31). */
    b.qh[0] = 0x01;
    b.qh[1] = 0x01;
    b.qh[2] = 0x02;
    b.qh[3] = 0x80;
    b.qs[0] = 0x3F;  /* y0 = 15 | 16 = 31 -> (31-16)*0.25 = 3.75 ;
                        y16 = 3, bit 16 clear -> (3-16)*0.25 = -3.25 */
    b.qs[1] = 0x5A;  /* y1 = 10, bit 1 clear -> -6*0.25 = -1.5 ;
                        y17 = 5 | 16 = 21 -> 5*0.25 = 1.25 */
    b.qs[15] = 0x70; /* y15 = 0, bit 15 clear -> -16*0.25 = -4.0 ;
                        y31 = 7 | 16 = 23 -> 7*0.25 = 1.75 */
                     /* qs[8] = 0: y8 = 0 | 16 -> 0.0 ; y24 = 0, bit 24 clear -> -4.0 */
    float y[32];
    deq(SL_TYPE_Q5_0, &b, y, 32);
    CHECK_VAL(y, 0, 3.75);
    CHECK_VAL(y, 16, -3.25);
    CHECK_VAL(y, 1, -1.5);
    CHECK_VAL(y, 17, 1.25);
    CHECK_VAL(y, 15, -4.0);
    CHECK_VAL(y, 31, 1.75);
    CHECK_VAL(y, 8, 0.0);
    CHECK_VAL(y, 24, -4.0);
}

TEST(q5_1)
{
    sl_block_q5_1 b;
    b.d = 0x3800; /* 0.5 */
    b.m = 0x3C00; /* 1.0 */
    memset(b.qs, 0, sizeof b.qs);
    memset(b.qh, 0, sizeof b.qh);
    b.qh[0] = 0x01;  /* bit 0 */
    b.qh[3] = 0x40;  /* bit 30 */
    b.qs[0] = 0x1F;  /* y0 = 15 | 16 = 31 -> 0.5*31 + 1 = 16.5 ; y16 = 1 -> 1.5 */
    b.qs[14] = 0x20; /* y14 = 0 -> 1.0 ; y30 = 2 | 16 = 18 -> 10.0 */
    float y[32];
    deq(SL_TYPE_Q5_1, &b, y, 32);
    CHECK_VAL(y, 0, 16.5);
    CHECK_VAL(y, 16, 1.5);
    CHECK_VAL(y, 14, 1.0);
    CHECK_VAL(y, 30, 10.0);
}

TEST(q8_0_and_q8_1)
{
    sl_block_q8_0 b;
    b.d = 0x3400; /* 0.25 */
    memset(b.qs, 0, sizeof b.qs);
    b.qs[0] = -128; /* -32.0 */
    b.qs[5] = -1;   /* -0.25 */
    b.qs[31] = 127; /* 31.75 */
    float y[32];
    deq(SL_TYPE_Q8_0, &b, y, 32);
    CHECK_VAL(y, 0, -32.0);
    CHECK_VAL(y, 5, -0.25);
    CHECK_VAL(y, 31, 31.75);
    CHECK_VAL(y, 6, 0.0);

    sl_block_q8_1 c;
    c.d = 0x4000; /* 2.0 */
    c.s = 0x3C00; /* s is for dot products only; dequantisation ignores it */
    memset(c.qs, 0, sizeof c.qs);
    c.qs[2] = -7; /* -14.0 */
    deq(SL_TYPE_Q8_1, &c, y, 32);
    CHECK_VAL(y, 2, -14.0);
    CHECK_VAL(y, 3, 0.0);
}

TEST(q2_K)
{
    sl_block_q2_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3C00;    /* 1.0 */
    b.dmin = 0x3800; /* 0.5 */
    /* scales[k]: low nibble sc, high nibble m; x = d*sc*q - dmin*m */
    b.scales[0] = 0x21; /* sub 0 (y0..15):  sc 1, m 2 -> x = q - 1 */
    b.scales[1] = 0x03; /* sub 1 (y16..31): sc 3, m 0 -> x = 3q */
    b.scales[2] = 0x11; /* sub 2 (y32..47): sc 1, m 1 -> x = q - 0.5 */
    b.scales[9] = 0xF2; /* sub 9 (y144..159): sc 2, m 15 -> x = 2q - 7.5 */
    /* element 128h + 32j + l is bits 2j..2j+1 of qs[32h + l] */
    b.qs[0] = 0xE4;  /* bits 0-1 = 0 -> y0 = -1 ; bits 2-3 = 1 -> y32 = 0.5 ;
                        bits 4-5 = 2 -> y64 (sub 4, sc 0 m 0) = 0 ;
                        bits 6-7 = 3 -> y96 (sub 6) = 0 */
    b.qs[16] = 0x03; /* y16 = 3 -> 9.0 */
    b.qs[48] = 0x02; /* h=1, l=16, j=0: y144 = 2 -> 2*2 - 7.5 = -3.5 */
    float y[256];
    deq(SL_TYPE_Q2_K, &b, y, 256);
    CHECK_VAL(y, 0, -1.0);
    CHECK_VAL(y, 32, 0.5);
    CHECK_VAL(y, 64, 0.0);
    CHECK_VAL(y, 96, 0.0);
    CHECK_VAL(y, 16, 9.0);
    CHECK_VAL(y, 17, 0.0);
    CHECK_VAL(y, 144, -3.5);
    CHECK_VAL(y, 145, -7.5); /* q 0 in sub 9 */
    CHECK_VAL(y, 1, -1.0);   /* q 0 in sub 0 */
    CHECK_VAL(y, 33, -0.5);  /* q 0 in sub 2 */
}

TEST(q3_K)
{
    sl_block_q3_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800; /* 0.5 */
    /* Scale codes u_k (sc = u - 32). Default u = 32 = 0b10'0000: low 4 bits
     * 0, high 2 bits 2, so bytes 0..7 = 0 and each of bytes 8..11 carries
     * "10" in all four 2-bit fields = 0xAA. Changes:
     *  sub 0:  u = 33 (sc 1):  lo4 1 -> byte 0 low nibble = 1 -> 0x01;
     *                          hi2 2 (byte 8 bits 0-1, unchanged)
     *  sub 13: u = 63 (sc 31): lo4 15 -> byte 13-8 = 5, high nibble -> 0xF0;
     *                          hi2 3 -> byte 8 + 13%4 = 9, bits 2*(13/4) = 6-7:
     *                          0xAA | 0xC0 = 0xEA
     *  sub 10: u = 0 (sc -32): lo4 0 (byte 2 high nibble stays 0);
     *                          hi2 0 -> byte 10, bits 4-5 cleared: 0x8A */
    const uint8_t sc[12] = {0x01, 0, 0, 0, 0, 0xF0, 0, 0, 0xAA, 0xEA, 0x8A, 0xAA};
    memcpy(b.scales, sc, 12);
    /* Element 128h + 32j + l: low 2 bits = bits 2j of qs[32h + l], and
     * q = low - 4 unless bit 4h + j of hmask[l] is set. */
    b.qs[0] = 0x03;     /* y0 (sub 0): low 3 */
    b.hmask[0] = 0x21;  /* bit 0 set -> y0 q = 3 -> 0.5*1*3 = 1.5 ;
                           bit 5 (h1, j1) set, see y160 */
    b.qs[1] = 0x01;     /* y1: low 1, hmask[1] bit 0 clear -> q = -3 -> -1.5 */
                        /* y2: low 0, clear -> q = -4 -> 0.5*1*-4 = -2.0 */
    b.qs[32] = 0x04;    /* y160 = h1 j1 l0 (sub 10): low = bits 2-3 = 1, hmask
                           bit 5 set -> q 1 -> 0.5*-32*1 = -16.0 */
    b.qs[48] = 0x20;    /* y208 = h1 j2 l16 (sub 13): bits 4-5 = 2, hmask[16]
                           bit 6 clear -> q = -2 -> 0.5*31*-2 = -31.0 */
    b.qs[49] = 0x30;    /* y209: bits 4-5 = 3 */
    b.hmask[17] = 0x40; /* bit 6 set -> q 3 -> 0.5*31*3 = 46.5 */
    float y[256];
    deq(SL_TYPE_Q3_K, &b, y, 256);
    CHECK_VAL(y, 0, 1.5);
    CHECK_VAL(y, 1, -1.5);
    CHECK_VAL(y, 2, -2.0);
    CHECK_VAL(y, 160, -16.0);
    CHECK_VAL(y, 208, -31.0);
    CHECK_VAL(y, 209, 46.5);
    CHECK_VAL(y, 16, 0.0);  /* sub 1, sc 0 */
    CHECK_VAL(y, 161, 64.0); /* sub 10, low 0, hmask[1] bit 5 clear: q -4 -> 0.5*-32*-4 */
}

/* Q4_K / Q5_K share the 12-byte scale packing. Chosen codes:
 *   sc0 = 1, m0 = 2; sc5 = 42 = 0b10'1010 (lo4 0xA, hi2 2);
 *   m5 = 17 = 0b01'0001 (lo4 1, hi2 1); all others 0.
 * Packing (k < 4): byte k = sc_k | (sc_{k+4} >> 4) << 6,
 *                  byte k+4 = m_k | (m_{k+4} >> 4) << 6,
 *                  byte k+8 = (sc_{k+4} & 15) | (m_{k+4} & 15) << 4
 *   byte 0 = 1 ; byte 1 = 0 | 2 << 6 = 0x80 ; byte 4 = 2 ;
 *   byte 5 = 0 | 1 << 6 = 0x40 ; byte 9 = 0xA | 1 << 4 = 0x1A. */
static const uint8_t k4_scales[12] = {0x01, 0x80, 0, 0, 0x02, 0x40, 0, 0, 0, 0x1A, 0, 0};

TEST(q4_K)
{
    sl_block_q4_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800;    /* 0.5 */
    b.dmin = 0x3400; /* 0.25 */
    memcpy(b.scales, k4_scales, 12);
    /* sub 0 = y0..31, low nibbles of qs[0..31]: x = 0.5*1*q - 0.25*2 = 0.5q - 0.5
     * sub 1 = y32..63, high nibbles of qs[0..31]: sc 0, m 0 -> 0
     * sub 5 = y160..191, high nibbles of qs[64..95]: x = 0.5*42*q - 0.25*17
     *       = 21q - 4.25 */
    b.qs[0] = 0x0F;  /* y0 = 7.5 - 0.5 = 7.0 ; y32 = 0 */
    b.qs[64] = 0x30; /* y160 = 3*21 - 4.25 = 58.75 ; y128 (sub 4) = 0 */
                     /* y161: q 0 -> -4.25 ; y1: q 0 -> -0.5 */
    float y[256];
    deq(SL_TYPE_Q4_K, &b, y, 256);
    CHECK_VAL(y, 0, 7.0);
    CHECK_VAL(y, 32, 0.0);
    CHECK_VAL(y, 160, 58.75);
    CHECK_VAL(y, 128, 0.0);
    CHECK_VAL(y, 161, -4.25);
    CHECK_VAL(y, 1, -0.5);
}

TEST(q5_K)
{
    sl_block_q5_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800;
    b.dmin = 0x3400;
    memcpy(b.scales, k4_scales, 12);
    /* bit 4 of y(64c + l) is bit 2c of qh[l]; of y(64c + 32 + l), bit 2c+1 */
    b.qs[0] = 0x0F;  /* y0 low 15 */
    b.qs[64] = 0x30; /* y160 low 3 */
    b.qh[0] = 0x21;  /* bit 0 -> y0 = 31 -> 0.5*31 - 0.5 = 15.0 ;
                        bit 5 (c 2, high half) -> y160 = 19 -> 19*21 - 4.25 = 394.75 */
    b.qh[1] = 0x20;  /* y161 = 0 | 16 -> 16*21 - 4.25 = 331.75 */
    b.qs[1] = 0x01;  /* y1 = 1, qh[1] bit 0 clear -> 0.5 - 0.5 = 0.0 */
    float y[256];
    deq(SL_TYPE_Q5_K, &b, y, 256);
    CHECK_VAL(y, 0, 15.0);
    CHECK_VAL(y, 160, 394.75);
    CHECK_VAL(y, 161, 331.75);
    CHECK_VAL(y, 1, 0.0);
    CHECK_VAL(y, 2, -0.5);
}

TEST(q6_K)
{
    sl_block_q6_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800; /* 0.5 */
    b.scales[0] = 1;
    b.scales[1] = -2;
    b.scales[2] = 4;
    b.scales[6] = 3;
    b.scales[13] = -1;
    /* half 0, l = 0:
     *   y0  = lo(ql[0])  | qh[0] bits 0-1 << 4, scale sc[0]
     *   y32 = lo(ql[32]) | qh[0] bits 2-3 << 4, scale sc[2]
     *   y64 = hi(ql[0])  | qh[0] bits 4-5 << 4, scale sc[4]
     *   y96 = hi(ql[32]) | qh[0] bits 6-7 << 4, scale sc[6] */
    b.ql[0] = 0x2F;  /* lo 15, hi 2 */
    b.ql[32] = 0x50; /* lo 0, hi 5 */
    b.qh[0] = 0x87;  /* 10'00'01'11: bits0-1 = 3, bits2-3 = 1, bits4-5 = 0, bits6-7 = 2 */
    /* y0 = 15 | 48 = 63 -> 31 -> 0.5*1*31 = 15.5
     * y32 = 0 | 16 -> -16 -> 0.5*4*-16 = -32.0
     * y64 = 2 | 0 -> -30 -> sc[4] = 0 -> 0.0
     * y96 = 5 | 32 = 37 -> 5 -> 0.5*3*5 = 7.5
     * y16: all zero bits -> q 0 - 32 = -32 -> 0.5*-2*-32 = 32.0 */
    /* half 1, y208 = 128 + 80: group 3 (hi nibble of ql[64 + 16]), qh[32 + 16]
     * bits 4-5, scale sc[8 + 80/16] = sc[13] = -1 */
    b.ql[80] = 0x10;  /* hi 1 */
    b.qh[48] = 0x30;  /* bits 4-5 = 3 -> q = 1 | 48 = 49 -> 17 -> 0.5*-1*17 = -8.5 */
    float y[256];
    deq(SL_TYPE_Q6_K, &b, y, 256);
    CHECK_VAL(y, 0, 15.5);
    CHECK_VAL(y, 32, -32.0);
    CHECK_VAL(y, 64, 0.0);
    CHECK_VAL(y, 96, 7.5);
    CHECK_VAL(y, 16, 32.0);
    CHECK_VAL(y, 208, -8.5);
}

TEST(q8_K)
{
    sl_block_q8_K b;
    memset(&b, 0, sizeof b);
    b.d = 0.125f;
    b.qs[0] = -127; /* -15.875 */
    b.qs[255] = 5;  /* 0.625 */
    float y[256];
    deq(SL_TYPE_Q8_K, &b, y, 256);
    CHECK_VAL(y, 0, -15.875);
    CHECK_VAL(y, 255, 0.625);
    CHECK_VAL(y, 100, 0.0);
}

TEST(iq4_nl)
{
    /* table: -127 -104 -83 -65 -49 -35 -22 -10 1 13 25 38 53 69 89 113 */
    sl_block_iq4_nl b;
    b.d = 0x3800; /* 0.5 */
    memset(b.qs, 0x88, sizeof b.qs); /* index 8 -> 1 -> 0.5 */
    b.qs[0] = 0x8F;  /* y0 = K[15] = 113 -> 56.5 ; y16 = K[8] = 1 -> 0.5 */
    b.qs[15] = 0x70; /* y15 = K[0] = -127 -> -63.5 ; y31 = K[7] = -10 -> -5.0 */
    float y[32];
    deq(SL_TYPE_IQ4_NL, &b, y, 32);
    CHECK_VAL(y, 0, 56.5);
    CHECK_VAL(y, 16, 0.5);
    CHECK_VAL(y, 15, -63.5);
    CHECK_VAL(y, 31, -5.0);
    CHECK_VAL(y, 3, 0.5);
}

TEST(iq4_xs)
{
    sl_block_iq4_xs b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400; /* 0.25 */
    /* ls_k = nibble k%2 of scales_l[k/2] | bits 2k..2k+1 of scales_h << 4;
     * sub-block scale = d * (ls - 32). Default ls = 32 (lo4 0, hi2 2):
     * scales_l = 0, scales_h = 0b10 in every field = 0xAAAA. Changes:
     *   ls_0 = 33: lo4 1 -> scales_l[0] low nibble = 1
     *   ls_3 = 0:  lo4 0 ; hi2 0 -> bits 6-7 cleared: 0xAAAA -> 0xAA2A
     *   ls_6 = 63: lo4 15 -> scales_l[3] low nibble = 0xF ; hi2 3 -> bits
     *              12-13 set: 0xAA2A | 0x3000 = 0xBA2A */
    b.scales_l[0] = 0x01;
    b.scales_l[3] = 0x0F;
    b.scales_h = 0xBA2A;
    memset(b.qs, 0x88, sizeof b.qs);
    b.qs[0] = 0x8F;  /* sub 0 (scale 0.25*1): y0 = 113*0.25 = 28.25 ; y16 = 1*0.25 */
    b.qs[48] = 0x00; /* sub 3 (scale 0.25*-32 = -8): y96 = y112 = -127*-8 = 1016 */
    b.qs[96] = 0x1E; /* sub 6 (scale 0.25*31 = 7.75): y192 = K[14] = 89 -> 689.75 ;
                        y208 = K[1] = -104 -> -806 */
    float y[256];
    deq(SL_TYPE_IQ4_XS, &b, y, 256);
    CHECK_VAL(y, 0, 28.25);
    CHECK_VAL(y, 16, 0.25);
    CHECK_VAL(y, 96, 1016.0);
    CHECK_VAL(y, 112, 1016.0);
    CHECK_VAL(y, 192, 689.75);
    CHECK_VAL(y, 208, -806.0);
    CHECK_VAL(y, 32, 0.0);   /* sub 1: ls 32 -> scale 0 */
    CHECK_VAL(y, 97, -8.0);  /* sub 3, index 8 -> 1 * -8 */
}

TEST(mxfp4)
{
    /* value = 2^(e-127) * E2M1(nibble); E2M1 nibble s.e1e0.m:
     * 0:0 1:0.5 2:1 3:1.5 4:2 5:3 6:4 7:6, 8..15 the negatives */
    sl_block_mxfp4 b[4];
    memset(b, 0, sizeof b);
    b[0].e = 128;     /* 2^1 */
    b[0].qs[0] = 0xF7; /* y0 = 6 * 2 = 12 ; y16 = nibble 15 = -6 -> -12 */
    b[0].qs[1] = 0x19; /* y1 = nibble 9 = -0.5 -> -1 ; y17 = nibble 1 = 0.5 -> 1 */
    b[1].e = 125;     /* 2^-2 */
    b[1].qs[0] = 0x85; /* y32 = 3 * 0.25 = 0.75 ; y48 = nibble 8 = -0 -> 0 */
    b[2].e = 0;       /* 2^-127: E2M1 0.5 -> 2^-128 (a float subnormal) */
    b[2].qs[0] = 0x01; /* y64 = 2^-128 ; y80 = 0 */
    b[3].e = 254;     /* 2^127: nibble 1 -> 0.5 * 2^127 = 2^126 */
    b[3].qs[0] = 0x01;
    float y[128];
    deq(SL_TYPE_MXFP4, b, y, 128);
    CHECK_VAL(y, 0, 12.0);
    CHECK_VAL(y, 16, -12.0);
    CHECK_VAL(y, 1, -1.0);
    CHECK_VAL(y, 17, 1.0);
    CHECK_VAL(y, 32, 0.75);
    CHECK(y[48] == 0.0f);
    CHECK_VAL(y, 64, ldexpf(1.0f, -128));
    CHECK_VAL(y, 80, 0.0);
    CHECK_VAL(y, 96, ldexpf(1.0f, 126));
}

TEST(fp_rows)
{
    uint16_t h[4] = {0x3C00, 0xC000, 0x0001, 0x7C00}; /* 1, -2, 2^-24, inf */
    float y[4];
    deq(SL_TYPE_F16, h, y, 4);
    CHECK_VAL(y, 0, 1.0);
    CHECK_VAL(y, 1, -2.0);
    CHECK_VAL(y, 2, ldexpf(1, -24));
    CHECK(isinf(y[3]));
    uint16_t bf[2] = {0x3F80, 0x4049}; /* 1.0 ; 0x40490000 = 3.140625 */
    deq(SL_TYPE_BF16, bf, y, 2);
    CHECK_VAL(y, 0, 1.0);
    CHECK_VAL(y, 1, 3.140625);
    float f[2] = {1.5f, -0.0f};
    deq(SL_TYPE_F32, f, y, 2);
    CHECK_VAL(y, 0, 1.5);
    CHECK(y[1] == 0.0f && signbit(y[1]));
}

TEST(multi_block_rows)
{
    /* a row of three Q8_0 blocks: each block uses its own scale */
    sl_block_q8_0 b[3];
    memset(b, 0, sizeof b);
    b[0].d = 0x3C00; b[0].qs[0] = 3;  /* y0 = 3 */
    b[1].d = 0x4000; b[1].qs[0] = 3;  /* y32 = 6 */
    b[2].d = 0x3800; b[2].qs[31] = 3; /* y95 = 1.5 */
    float y[96];
    deq(SL_TYPE_Q8_0, b, y, 96);
    CHECK_VAL(y, 0, 3.0);
    CHECK_VAL(y, 32, 6.0);
    CHECK_VAL(y, 95, 1.5);
}

int main(void)
{
    RUN(q4_0);
    RUN(q4_1);
    RUN(q5_0);
    RUN(q5_1);
    RUN(q8_0_and_q8_1);
    RUN(q2_K);
    RUN(q3_K);
    RUN(q4_K);
    RUN(q5_K);
    RUN(q6_K);
    RUN(q8_K);
    RUN(iq4_nl);
    RUN(iq4_xs);
    RUN(mxfp4);
    RUN(fp_rows);
    RUN(multi_block_rows);
    return TEST_REPORT();
}
