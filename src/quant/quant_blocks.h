/* quant_blocks.h - the on-disk block layouts of the quantised GGUF types.
 *
 * Owns: one struct per block type, with a static_assert pinning its size to
 * the bytes a GGUF file stores, and a drawing of where each bit lives. These
 * layouts are fixed by the file format (ggml's), so they may never change.
 * Must not know: files, models, kernels. Internal to src/quant/.
 *
 * Conventions in the drawings: offsets in bytes; "f16" is an IEEE half;
 * element i of a block is what dequantisation writes to y[i]; "lo(b)" is the
 * low nibble of byte b, "hi(b)" the high nibble. All multi-byte fields are
 * little-endian (GGUF is little-endian; we only build on little-endian). */
#ifndef SL_QUANT_QUANT_BLOCKS_H
#define SL_QUANT_QUANT_BLOCKS_H

#include <assert.h>
#include <stdint.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sluice reads GGUF blocks in place and needs a little-endian machine"
#endif

#define SL_QK 32   /* elements per block of the 32-element ("legacy") types */
#define SL_QK_K 256 /* elements per super-block of the K-quants and IQ types */

/* ---- 32-element blocks ---------------------------------------------------
 *
 * Q4_0 (18 bytes, x = d * (q - 8), q in 0..15)
 *   0      2                                   18
 *   +------+-----------------------------------+
 *   | d f16| qs[16]: element j = lo(qs[j]),    |
 *   |      |        element j+16 = hi(qs[j])   |
 *   +------+-----------------------------------+
 * The first half of the block lives in the low nibbles, the second half in
 * the high nibbles (not interleaved pairs). */
typedef struct {
    uint16_t d;
    uint8_t qs[SL_QK / 2];
} sl_block_q4_0;
static_assert(sizeof(sl_block_q4_0) == 18, "q4_0 block is 18 bytes");

/* Q4_1 (20 bytes, x = d * q + m, q in 0..15)
 *   0      2      4                            20
 *   +------+------+----------------------------+
 *   | d f16| m f16| qs[16] nibbles as in Q4_0  |
 *   +------+------+----------------------------+ */
typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t qs[SL_QK / 2];
} sl_block_q4_1;
static_assert(sizeof(sl_block_q4_1) == 20, "q4_1 block is 20 bytes");

/* Q5_0 (22 bytes, x = d * (q - 16), q in 0..31)
 *   0      2           6                       22
 *   +------+-----------+-----------------------+
 *   | d f16| qh u32 LE | qs[16] low 4 bits     |
 *   +------+-----------+-----------------------+
 * Bit 4 of element i is bit i of qh (the 32-bit word read little-endian):
 * element j (j < 16) = lo(qs[j]) | bit j << 4,
 * element j+16       = hi(qs[j]) | bit (j+16) << 4.
 * qh is 4 bytes, not a uint32_t, so the struct has no padding. */
typedef struct {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[SL_QK / 2];
} sl_block_q5_0;
static_assert(sizeof(sl_block_q5_0) == 22, "q5_0 block is 22 bytes");

/* Q5_1 (24 bytes, x = d * q + m, q in 0..31), high bits as in Q5_0
 *   0      2      4           8                24
 *   +------+------+-----------+----------------+
 *   | d f16| m f16| qh u32 LE | qs[16]         |
 *   +------+------+-----------+----------------+ */
typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[SL_QK / 2];
} sl_block_q5_1;
static_assert(sizeof(sl_block_q5_1) == 24, "q5_1 block is 24 bytes");

/* Q8_0 (34 bytes, x = d * q, q int8)
 *   0      2                                   34
 *   +------+-----------------------------------+
 *   | d f16| qs[32] int8, element i = qs[i]    |
 *   +------+-----------------------------------+ */
typedef struct {
    uint16_t d;
    int8_t qs[SL_QK];
} sl_block_q8_0;
static_assert(sizeof(sl_block_q8_0) == 34, "q8_0 block is 34 bytes");

/* Q8_1 (36 bytes): Q8_0 plus s = d * sum(qs), the activation of the offset
 * types (Q4_1, Q5_1), as in llama.cpp. s is stored in f16, so it overflows
 * to infinity (65504) once a block's activations sum past it, and the
 * product becomes inf/NaN there too, as llama.cpp's does.
 *   0      2      4                            36
 *   +------+------+----------------------------+
 *   | d f16| s f16| qs[32] int8                |
 *   +------+------+----------------------------+ */
typedef struct {
    uint16_t d;
    uint16_t s;
    int8_t qs[SL_QK];
} sl_block_q8_1;
static_assert(sizeof(sl_block_q8_1) == 36, "q8_1 block is 36 bytes");

/* IQ4_NL (18 bytes, x = d * K[q], K the 16-entry non-linear table below)
 *   0      2                                   18
 *   +------+-----------------------------------+
 *   | d f16| qs[16]: nibble order as in Q4_0   |
 *   +------+-----------------------------------+ */
typedef struct {
    uint16_t d;
    uint8_t qs[SL_QK / 2];
} sl_block_iq4_nl;
static_assert(sizeof(sl_block_iq4_nl) == 18, "iq4_nl block is 18 bytes");

/* MXFP4 (17 bytes, OCP microscaling FP4: x = 2^(e-127) * E2M1(q))
 *   0    1                                     17
 *   +----+-------------------------------------+
 *   | e  | qs[16]: nibble order as in Q4_0     |
 *   +----+-------------------------------------+
 * e is an E8M0 power of two. A nibble is s.e1e0.m (sign, 2-bit exponent,
 * 1-bit mantissa): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives. We keep
 * the table doubled (integers 0..12) and halve the scale: 2^(e-128). */
typedef struct {
    uint8_t e;
    uint8_t qs[SL_QK / 2];
} sl_block_mxfp4;
static_assert(sizeof(sl_block_mxfp4) == 17, "mxfp4 block is 17 bytes");

/* ---- 256-element super-blocks (K-quants) ----------------------------------
 *
 * Q2_K (84 bytes, 16 sub-blocks of 16; x = d*sc*q - dmin*m, q in 0..3)
 *   0            16                     80     82     84
 *   +------------+----------------------+------+------+
 *   | scales[16] | qs[64]               | d f16|dmin  |
 *   +------------+----------------------+------+------+
 * scales[k]: low nibble = sc, high nibble = m of sub-block k.
 * Elements go in two halves of 128, each using 32 bytes of qs. In half h,
 * element 128h + 32j + l (j = 0..3, l = 0..31) is bits 2j..2j+1 of
 * qs[32h + l], and belongs to sub-block 8h + 2j + (l >= 16). */
typedef struct {
    uint8_t scales[SL_QK_K / 16];
    uint8_t qs[SL_QK_K / 4];
    uint16_t d;
    uint16_t dmin;
} sl_block_q2_K;
static_assert(sizeof(sl_block_q2_K) == 84, "q2_K block is 84 bytes");

/* Q3_K (110 bytes, 16 sub-blocks of 16; x = d * (sc - 32) * q, q in -4..3)
 *   0          32               96          108    110
 *   +----------+----------------+-----------+------+
 *   | hmask[32]| qs[64] low 2b  | scales[12]| d f16|
 *   +----------+----------------+-----------+------+
 * Element 128h + 32j + l: low two bits are bits 2j..2j+1 of qs[32h + l];
 * q = low - 4 unless bit (4h + j) of hmask[l] is set (then q = low).
 * The sixteen 6-bit scales sc_k (k = 0..15) are packed in 12 bytes:
 *   low 4 bits : k < 8 ? lo(scales[k]) : hi(scales[k - 8])
 *   high 2 bits: bits 2*(k/4)..2*(k/4)+1 of scales[8 + k%4]
 *   bytes 0..7 : [ sc8..15 lo4 | sc0..7 lo4 ]   (hi nibble | lo nibble)
 *   bytes 8..11: [ hi2 of k=12+i | 8+i | 4+i | i ]  for byte 8+i
 * Element 128h + 32j + l belongs to sub-block 8h + 2j + (l >= 16). */
typedef struct {
    uint8_t hmask[SL_QK_K / 8];
    uint8_t qs[SL_QK_K / 4];
    uint8_t scales[12];
    uint16_t d;
} sl_block_q3_K;
static_assert(sizeof(sl_block_q3_K) == 110, "q3_K block is 110 bytes");

/* Q4_K (144 bytes, 8 sub-blocks of 32; x = d*sc*q - dmin*m, q in 0..15)
 *   0      2      4            16                          144
 *   +------+------+------------+---------------------------+
 *   | d f16|dmin  | scales[12] | qs[128]                   |
 *   +------+------+------------+---------------------------+
 * Eight 6-bit scales sc_k and eight 6-bit mins m_k in 12 bytes:
 *   k < 4:  sc_k = scales[k] & 63,      m_k = scales[k+4] & 63
 *   k >= 4: sc_k = lo(scales[k+4]) | (scales[k-4] >> 6) << 4
 *           m_k  = hi(scales[k+4]) | (scales[k]   >> 6) << 4
 *   byte:    0..3           4..7           8..11
 *          [sc4..7 hi2 |  [m4..7 hi2 |   [m4..7 lo4 (hi nibble) |
 *           sc0..3 (6b)]   m0..3 (6b)]    sc4..7 lo4 (lo nibble)]
 * Elements go in four chunks of 64 using 32 bytes of qs each: element
 * 64c + l = lo(qs[32c + l]) (sub-block 2c), 64c + 32 + l = hi(qs[32c + l])
 * (sub-block 2c + 1). */
typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[SL_QK_K / 2];
} sl_block_q4_K;
static_assert(sizeof(sl_block_q4_K) == 144, "q4_K block is 144 bytes");

/* Q5_K (176 bytes, as Q4_K with a fifth bit; q in 0..31)
 *   0      2      4            16          48                176
 *   +------+------+------------+-----------+-----------------+
 *   | d f16|dmin  | scales[12] | qh[32]    | qs[128]         |
 *   +------+------+------------+-----------+-----------------+
 * Low 4 bits as in Q4_K. Bit 4 of element 64c + l is bit 2c of qh[l]; of
 * element 64c + 32 + l it is bit 2c + 1 of qh[l]. */
typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[SL_QK_K / 8];
    uint8_t qs[SL_QK_K / 2];
} sl_block_q5_K;
static_assert(sizeof(sl_block_q5_K) == 176, "q5_K block is 176 bytes");

/* Q6_K (210 bytes, 16 sub-blocks of 16; x = d * sc * (q - 32), q in 0..63)
 *   0                128           192         208    210
 *   +----------------+-------------+-----------+------+
 *   | ql[128] low 4b | qh[64] hi 2b| sc[16] i8 | d f16|
 *   +----------------+-------------+-----------+------+
 * Two halves of 128 elements; half h uses ql[64h..64h+63], qh[32h..32h+31]
 * and sc[8h..8h+7]. Within a half, for l = 0..31 (ql, qh relative):
 *   element  l      = lo(ql[l])      | bits 0-1 of qh[l] << 4
 *   element  l + 32 = lo(ql[l + 32]) | bits 2-3 of qh[l] << 4
 *   element  l + 64 = hi(ql[l])      | bits 4-5 of qh[l] << 4
 *   element  l + 96 = hi(ql[l + 32]) | bits 6-7 of qh[l] << 4
 * and element e of the half uses sc[8h + e/16]. */
typedef struct {
    uint8_t ql[SL_QK_K / 2];
    uint8_t qh[SL_QK_K / 4];
    int8_t scales[SL_QK_K / 16];
    uint16_t d;
} sl_block_q6_K;
static_assert(sizeof(sl_block_q6_K) == 210, "q6_K block is 210 bytes");

/* Q8_K (292 bytes): activations for the K-quant dot products.
 *   0      4                          260              292
 *   +------+--------------------------+----------------+
 *   | d f32| qs[256] int8             | bsums[16] i16  |
 *   +------+--------------------------+----------------+
 * bsums[k] = sum of qs[16k..16k+15]: lets a kernel apply a sub-block min or
 * offset without touching the quants again. */
typedef struct {
    float d;
    int8_t qs[SL_QK_K];
    int16_t bsums[SL_QK_K / 16];
} sl_block_q8_K;
static_assert(sizeof(sl_block_q8_K) == 292, "q8_K block is 292 bytes");

/* IQ4_XS (136 bytes, 8 sub-blocks of 32; x = d * (ls - 32) * K[q])
 *   0      2          4            8                       136
 *   +------+----------+------------+-----------------------+
 *   | d f16| scales_h | scales_l[4]| qs[128]               |
 *   +------+----------+------------+-----------------------+
 * Sub-block k has a 6-bit scale ls_k:
 *   low 4 bits  = nibble (k % 2) of scales_l[k / 2] (even k: low nibble)
 *   high 2 bits = bits 2k..2k+1 of scales_h (u16 little-endian)
 * Sub-block k uses qs[16k..16k+15] in the Q4_0 nibble order. */
typedef struct {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[SL_QK_K / 64];
    uint8_t qs[SL_QK_K / 2];
} sl_block_iq4_xs;
static_assert(sizeof(sl_block_iq4_xs) == 136, "iq4_xs block is 136 bytes");

/* The types below are only sized (so that files holding them can be
 * inspected); sluice does not compute with them. Sizes per 256 elements:
 *   IQ2_XXS  66 = d f16 + 32 u16 grid/sign words
 *   IQ2_XS   74 = d f16 + 32 u16 + 8 scale bytes
 *   IQ2_S    82 = d f16 + 64 qs + 8 qh + 8 scales
 *   IQ3_XXS  98 = d f16 + 96 qs
 *   IQ3_S   110 = d f16 + 64 qs + 8 qh + 32 signs + 4 scales
 *   IQ1_S    50 = d f16 + 32 qs + 8 u16 qh
 *   IQ1_M    56 = 32 qs + 16 qh + 8 scales (scale spread over the scales)
 *   TQ1_0    54 = 48 base-3 bytes + 4 qh + d f16
 *   TQ2_0    66 = 64 qs + d f16 */

/* Non-linear 4-bit table of IQ4_NL / IQ4_XS (values fit in int8). */
extern const int8_t sl_iq4nl_values[16];
/* E2M1 values doubled, nibble order s.e1e0.m (MXFP4). */
extern const int8_t sl_mxfp4_values[16];

#endif
