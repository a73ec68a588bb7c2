/* libm_win.c - the Windows build's expf, logf, powf, sinf, cosf, sincosf,
 * tanhf and expm1f are util/libm_glibc.c's twins of glibc 2.36's, so the
 * exe computes the Linux build's numbers (mingw-w64's round the double
 * result once, which differs from glibc in the last bit for some inputs
 * and changed the demo model's greedy text after a few tokens).
 *
 * Why at link time rather than a force-included macro (expf -> twin): a
 * definition here replaces the C runtime's for every caller in the exe,
 * including code that takes the function's address or calls through
 * <math.h> macros and builtins (clang may lower its own intrinsics to a
 * call of these names), and the engine's sources stay untouched. This
 * object sits in libsluice.a, which the link names before libmingwex
 * (-lm), so lld resolves these names here; a duplicate definition would
 * be a link error, not a silent choice. */
#include "util/libm_glibc.h"

#include <math.h>

float expf(float x) { return sl_glibc_expf(x); }
float logf(float x) { return sl_glibc_logf(x); }
float powf(float x, float y) { return sl_glibc_powf(x, y); }
float sinf(float x) { return sl_glibc_sinf(x); }
float cosf(float x) { return sl_glibc_cosf(x); }
float tanhf(float x) { return sl_glibc_tanhf(x); }
float expm1f(float x) { return sl_glibc_expm1f(x); }

/* not declared by mingw-w64's math.h; GCC's name for it on Linux */
void sincosf(float x, float *s, float *c);
void sincosf(float x, float *s, float *c) { sl_glibc_sincosf(x, s, c); }
