/* test_fwht.c - sl_fwht_rows, the Walsh-Hadamard rotation of quantised
 * attention caches: each block becomes H x with H Sylvester's orthonormal
 * Hadamard matrix, H[i][j] = (-1)^popcount(i & j) / sqrt(n) (computed here
 * in double from that definition); the blocks are independent; rotating
 * twice gives the rows back (H H = I) up to rounding; and the arithmetic is
 * llama.cpp's (scale first, butterflies of growing span, each rounded
 * once), pinned on a block where the order shows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "test.h"

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

TEST(rows_become_hadamard_times_x)
{
    unsigned s = 3;
    for (int n = 64; n <= 512; n *= 2) {
        enum { ROWS = 3 };
        float *x = malloc(sizeof(float) * ROWS * n), *y = malloc(sizeof(float) * ROWS * n);
        for (int i = 0; i < ROWS * n; i++) x[i] = 4.0f * frand(&s);
        memcpy(y, x, sizeof(float) * ROWS * n);
        sl_fwht_rows(y, ROWS, n);
        double worst = 0.0;
        for (int r = 0; r < ROWS; r++)
            for (int i = 0; i < n; i++) {
                double want = 0.0;
                for (int j = 0; j < n; j++)
                    want += (__builtin_popcount((unsigned)(i & j)) & 1 ? -1.0 : 1.0) * x[r * n + j];
                want /= sqrt((double)n);
                worst = fmax(worst, fabs(want - y[r * n + i]));
            }
        CHECK_MSG(worst < 1e-4, "n %d: off by %g", n, worst);
        sl_fwht_rows(y, ROWS, n); /* H H = I */
        worst = 0.0;
        for (int i = 0; i < ROWS * n; i++) worst = fmax(worst, fabs(y[i] - x[i]));
        CHECK_MSG(worst < 1e-5, "n %d: twice is off by %g", n, worst);
        free(x);
        free(y);
    }
}

/* The butterflies (u + v, u - v) of spans 1, 2, ..., n/2 over y, in place. */
static void butterflies(float *y, int n)
{
    for (int len = 1; len < n; len *= 2)
        for (int i = 0; i < n; i += 2 * len)
            for (int j = i; j < i + len; j++) {
                const float u = y[j], v = y[j + len];
                y[j] = u + v;
                y[j + len] = u - v;
            }
}

TEST(arithmetic_is_llama_cpps)
{
    /* n = 128 (1/sqrt(n) not a power of two), the scaled values' butterflies
     * written out span by span */
    enum { N = 128 };
    unsigned s = 11;
    float x[N], y[N], want[N];
    for (int i = 0; i < N; i++) x[i] = (i % 7 == 0 ? 1e4f : 1.0f) * frand(&s);
    for (int i = 0; i < N; i++) want[i] = x[i] * (1.0f / sqrtf((float)N));
    butterflies(want, N);
    memcpy(y, x, sizeof x);
    sl_fwht_rows(y, 1, N);
    CHECK(memcmp(y, want, sizeof y) == 0);
    /* and the scale is not applied last: that order gives other bits here */
    float late[N];
    memcpy(late, x, sizeof x);
    butterflies(late, N);
    for (int i = 0; i < N; i++) late[i] *= 1.0f / sqrtf((float)N);
    CHECK(memcmp(late, want, sizeof late) != 0);
}

int main(void)
{
    RUN(rows_become_hadamard_times_x);
    RUN(arithmetic_is_llama_cpps);
    return TEST_REPORT();
}
