/* libm_glibc.h - float functions that return, for every input, the bits
 * glibc 2.36's libm returns on x86-64 (Debian 12, the reference llama.cpp
 * runs on): expf, logf, powf, sinf, cosf, sincosf, tanhf, expm1f.
 *
 * The Windows build routes the engine's calls of those names here
 * (src/compat/win/libm_win.c), so sluice.exe computes Linux's numbers;
 * the Linux build keeps calling glibc, and tests/unit/test_libm_glibc.c
 * compares the two over every float. Like glibc, the x86-64 forms pick
 * their fused (FMA) variant when the CPU has FMA and AVX2 and the OS saves
 * YMM state (glibc's ifunc rule), the plain one otherwise; the
 * results differ between the two in the last bit for some inputs, as
 * glibc's do. Pure functions of their inputs, thread-safe, cannot fail. */
#ifndef SL_UTIL_LIBM_GLIBC_H
#define SL_UTIL_LIBM_GLIBC_H

#include <stdbool.h>

float sl_glibc_expf(float x);
float sl_glibc_logf(float x);
float sl_glibc_powf(float x, float y);
float sl_glibc_sinf(float x);
float sl_glibc_cosf(float x);
void sl_glibc_sincosf(float x, float *s, float *c);
float sl_glibc_tanhf(float x);
float sl_glibc_expm1f(float x);

/* Which variant the functions above use: true for the fused one. The
 * test hook forces one (0 plain, 1 fused, -1 back to the CPU's answer) so
 * both can be compared with glibc run under the matching
 * GLIBC_TUNABLES; forcing the fused one on a CPU without FMA faults. */
bool sl_glibc_libm_fused(void);
void sl_glibc_libm_force(int fused);

#endif
