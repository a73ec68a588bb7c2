/* libm_win.c - the Windows build's expf, logf, powf, sinf, cosf, sincosf,
 * tanhf and expm1f are util/libm_glibc.c's twins of glibc 2.36's, so the
 * exe computes the Linux build's numbers (mingw-w64's round the double
 * result once, which differs from glibc in the last bit for some inputs
 * and changed the demo model's greedy text after a few tokens).
 *
 * Sluice's own calls reach the twins through the macros of the
 * force-included posix_win.h: clang, for this target, compiles expf(x),
 * powf and tanhf as calls of the double functions, so definitions alone
 * would not be called. These definitions, ahead of libmingwex's in the
 * link (libsluice.a comes first; a clash would be a duplicate-symbol
 * error, not a silent choice), serve everything else that names them:
 * calls through their addresses and code built without the header. The
 * parenthesised names keep the macros from expanding here. */
#include "util/libm_glibc.h"

#include <math.h>

float(expf)(float x) { return sl_glibc_expf(x); }
float(logf)(float x) { return sl_glibc_logf(x); }
float(powf)(float x, float y) { return sl_glibc_powf(x, y); }
float(sinf)(float x) { return sl_glibc_sinf(x); }
float(cosf)(float x) { return sl_glibc_cosf(x); }
float(tanhf)(float x) { return sl_glibc_tanhf(x); }
float(expm1f)(float x) { return sl_glibc_expm1f(x); }

/* not declared by mingw-w64's math.h; GCC's name for it on Linux */
void sincosf(float x, float *s, float *c);
void sincosf(float x, float *s, float *c) { sl_glibc_sincosf(x, s, c); }
