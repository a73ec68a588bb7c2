/* cr_float_libm.c - an LD_PRELOAD library for tests/cli/windows.sh: the
 * float functions the engine calls (expf, logf, powf, tanhf, sinf, cosf,
 * sincosf), each computed in double and rounded once, as mingw-w64's C
 * runtime computes them in the Windows exe. glibc's own float versions are
 * not correctly rounded (they differ from these in 0.06 % of inputs for
 * expf, 1.3 % for sinf / cosf, 18 % for tanhf, measured), so the Linux
 * build run with this library is the one the exe must equal bit for bit. */
#include <math.h>

float expf(float x) { return (float)exp((double)x); }
float logf(float x) { return (float)log((double)x); }
float powf(float x, float y) { return (float)pow((double)x, (double)y); }
float tanhf(float x) { return (float)tanh((double)x); }
float sinf(float x) { return (float)sin((double)x); }
float cosf(float x) { return (float)cos((double)x); }
void sincosf(float x, float *s, float *c)
{
    *s = (float)sin((double)x);
    *c = (float)cos((double)x);
}
