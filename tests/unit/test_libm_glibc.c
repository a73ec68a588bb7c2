/* test_libm_glibc.c - util/libm_glibc.c returns glibc 2.36's bits.
 *
 * On x86-64 Linux with glibc 2.36 (the oracle) the twins are compared with
 * the C library's expf, logf, sinf, cosf, sincosf, tanhf, expm1f on a
 * stride of all 2^32 floats (every float with SLUICE_LIBM_EXHAUSTIVE=1:
 * about a minute per function and variant in the release build), and
 * powf on every x for the exponents the engine's rope uses (-2/d; a
 * stride of x for 12 head sizes, every x for 64 and 128 when exhaustive)
 * and on 2 million (exhaustive: 100 million) random pairs; the fused variant when glibc runs its FMA forms, then the
 * plain one in a child run with GLIBC_TUNABLES turning FMA and AVX2 off
 * (glibc then picks its SSE2 forms). Everywhere else (notably the Windows
 * exe under wine) the twins, and in the Windows build the plain names the
 * engine calls, are checked against tests/data/libm/glibc236.txt, rows
 * of inputs with glibc's fused and plain results written by this test on
 * the oracle machine (SLUICE_LIBM_WRITE=FILE; the rows come from glibc,
 * never from the twins); on the oracle the committed file is checked
 * against glibc too. */
#include "test.h"
#include "util/libm_glibc.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GLIBC__)
#include <gnu/libc-version.h>
#include <unistd.h>
#define ORACLE_POSSIBLE 1
#else
#define ORACLE_POSSIBLE 0
#endif

/* glibc declares it under _GNU_SOURCE; mingw-w64 does not (the Windows
 * build defines it, src/compat/win/libm_win.c) */
void sincosf(float x, float *s, float *c);

#define TUNABLE_PLAIN "glibc.cpu.hwcaps=-AVX2,-FMA"

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* results as bits; NaNs compare by pattern too (payload and sign) */
typedef enum { F_EXP, F_LOG, F_SIN, F_COS, F_SINCOS_S, F_SINCOS_C, F_TANH, F_EXPM1, F_POW, F_N } fn_id;
static const char *const FN_NAME[F_N] = {"expf",      "logf",  "sinf",   "cosf", "sincosf.s",
                                         "sincosf.c", "tanhf", "expm1f", "powf"};

static float twin(fn_id f, float x, float y)
{
    float s, c;
    switch (f) {
    case F_EXP: return sl_glibc_expf(x);
    case F_LOG: return sl_glibc_logf(x);
    case F_SIN: return sl_glibc_sinf(x);
    case F_COS: return sl_glibc_cosf(x);
    case F_SINCOS_S: sl_glibc_sincosf(x, &s, &c); return s;
    case F_SINCOS_C: sl_glibc_sincosf(x, &s, &c); return c;
    case F_TANH: return sl_glibc_tanhf(x);
    case F_EXPM1: return sl_glibc_expm1f(x);
    case F_POW: return sl_glibc_powf(x, y);
    default: return 0;
    }
}

#if ORACLE_POSSIBLE || defined(_WIN32)
/* the C library's function of the same name: glibc on Linux, the twins
 * again in the Windows build (src/compat/win/posix_win.h routes them) */
static float libc(fn_id f, float x, float y)
{
    float s, c;
    switch (f) {
    case F_EXP: return expf(x);
    case F_LOG: return logf(x);
    case F_SIN: return sinf(x);
    case F_COS: return cosf(x);
    case F_SINCOS_S: sincosf(x, &s, &c); return s;
    case F_SINCOS_C: sincosf(x, &s, &c); return c;
    case F_TANH: return tanhf(x);
    case F_EXPM1: return expm1f(x);
    case F_POW: return powf(x, y);
    default: return 0;
    }
}
#endif

static const char *data_dir(void)
{
    const char *d = getenv("SLUICE_TEST_DATA");
    return d ? d : "tests/data";
}

/* ---- the committed table -------------------------------------------------- */

typedef struct {
    int fn;
    uint32_t x, y, fused, plain;
} row;

static row *rows;
static size_t n_rows;

static void load_table(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/libm/glibc236.txt", data_dir());
    FILE *f = fopen(path, "r");
    if (!f) return;
    char name[32];
    row r;
    size_t cap = 0;
    while (fscanf(f, "%31s %" SCNx32 " %" SCNx32 " %" SCNx32 " %" SCNx32, name, &r.x, &r.y,
                  &r.fused, &r.plain) == 5) {
        r.fn = -1;
        for (int i = 0; i < F_N; i++)
            if (!strcmp(name, FN_NAME[i])) r.fn = i;
        if (r.fn < 0) continue;
        if (n_rows == cap) {
            cap = cap ? 2 * cap : 4096;
            rows = realloc(rows, cap * sizeof *rows);
            if (!rows) abort();
        }
        rows[n_rows++] = r;
    }
    fclose(f);
}

/* bit for bit; except that off x86-64 (the twins' target is the x86-64
 * exe) a NaN matches any NaN: the default NaN's sign is the hardware's */
static bool same_result(uint32_t got, uint32_t want)
{
#if defined(__x86_64__)
    return got == want;
#else
    return got == want || (isnan(u2f(got)) && isnan(u2f(want)));
#endif
}

/* The twins give the table's fused column when fused and its plain column
 * when forced plain; so do the plain names where they are the twins. */
TEST(twins_match_committed_glibc_table)
{
    CHECK_MSG(n_rows > 4000, "%zu rows in tests/data/libm/glibc236.txt", n_rows);
    const int modes[2] = {1, 0};
    for (int m = 0; m < (sl_glibc_libm_fused() ? 2 : 1); m++) {
        const int fused = sl_glibc_libm_fused() ? modes[m] : 0;
        sl_glibc_libm_force(fused);
        int bad = 0;
        for (size_t i = 0; i < n_rows; i++) {
            const row *r = &rows[i];
            const uint32_t want = fused ? r->fused : r->plain;
            const uint32_t got = f2u(twin((fn_id)r->fn, u2f(r->x), u2f(r->y)));
            if (!same_result(got, want) && bad++ < 5)
                CHECK_MSG(0, "%s(%08x, %08x) %s: %08x, glibc %08x", FN_NAME[r->fn], r->x, r->y,
                          fused ? "fused" : "plain", got, want);
        }
        CHECK_EQ_INT(bad, 0);
    }
    sl_glibc_libm_force(-1);
#ifdef _WIN32
    /* the exe's expf & co are the twins: called by name as the engine
     * calls them (posix_win.h's macros), and through the symbols */
    int bad = 0;
    const bool fused = sl_glibc_libm_fused();
    float (*volatile by_addr[])(float) = {expf, logf, sinf, cosf, tanhf, expm1f};
    const fn_id addr_fn[] = {F_EXP, F_LOG, F_SIN, F_COS, F_TANH, F_EXPM1};
    float (*volatile pow_addr)(float, float) = powf;
    for (size_t i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        const uint32_t want = fused ? r->fused : r->plain;
        const uint32_t got = f2u(libc((fn_id)r->fn, u2f(r->x), u2f(r->y)));
        if (got != want && bad++ < 5)
            CHECK_MSG(0, "C runtime %s(%08x, %08x): %08x", FN_NAME[r->fn], r->x, r->y, got);
        for (int k = 0; k < 6; k++)
            if ((fn_id)r->fn == addr_fn[k] && f2u(by_addr[k](u2f(r->x))) != want && bad++ < 5)
                CHECK_MSG(0, "%s(%08x) through its address", FN_NAME[r->fn], r->x);
        if (r->fn == F_POW && f2u(pow_addr(u2f(r->x), u2f(r->y))) != want && bad++ < 5)
            CHECK_MSG(0, "powf(%08x, %08x) through its address", r->x, r->y);
    }
    CHECK_EQ_INT(bad, 0);
#endif
}

#if ORACLE_POSSIBLE
/* ---- against glibc itself --------------------------------------------------- */

static bool oracle(void) { return !strcmp(gnu_get_libc_version(), "2.36"); }

/* whether this process's glibc runs its FMA forms: it does when the CPU
 * allows, unless the tunable of the child run said otherwise */
static bool glibc_fused(void)
{
    sl_glibc_libm_force(-1);
    const char *t = getenv("GLIBC_TUNABLES");
    return sl_glibc_libm_fused() && !(t && strstr(t, "-FMA"));
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* the floats a sweep takes in full: the smallest subnormals, around 1,
 * the largest finite values, infinity and the first NaNs */
static bool full_range(uint32_t i)
{
    const uint32_t a = i & 0x7fffffffu;
    return a < 0x1000 || (a >= 0x3f7ff000u && a < 0x3f801000u) ||
           (a >= 0x7f7ff000u && a < 0x7f801000u);
}

/* every stride-th float (all of them for stride 1) and the full ranges
 * above; returns the mismatches, reporting a few */
static long sweep(fn_id f, uint32_t stride)
{
    long bad = 0;
    for (uint64_t i = 0; i < (1ull << 32); i += full_range((uint32_t)i) ? 1 : stride) {
        const float x = u2f((uint32_t)i);
        const uint32_t a = f2u(twin(f, x, 0)), b = f2u(libc(f, x, 0));
        if (a != b && bad++ < 3)
            fprintf(stderr, "  %s(%08x): twin %08x, glibc %08x\n", FN_NAME[f], (uint32_t)i, a, b);
    }
    return bad;
}

static uint32_t sweep_stride(void)
{
    return getenv("SLUICE_LIBM_EXHAUSTIVE") ? 1 : 9973;
}

TEST(float_functions_equal_glibc_over_the_floats)
{
    if (!oracle()) return;
    sl_glibc_libm_force(glibc_fused());
    for (int f = 0; f < F_POW; f++) CHECK_MSG(sweep((fn_id)f, sweep_stride()) == 0, "%s", FN_NAME[f]);
    sl_glibc_libm_force(-1);
}

/* powf: every x >= 0 (a stride of them unless exhaustive) for the rope's
 * exponents -2/d, the specials of both arguments, random pairs */
TEST(powf_equals_glibc)
{
    if (!oracle()) return;
    sl_glibc_libm_force(glibc_fused());
    long bad = 0;
    const uint32_t stride = getenv("SLUICE_LIBM_EXHAUSTIVE") ? 1 : 997;
    const int dims[] = {64, 128, 16, 32, 48, 80, 96, 112, 160, 192, 256, 512};
    /* exhaustive: every x for the common head sizes 64 and 128 */
    const size_t n_dims = getenv("SLUICE_LIBM_EXHAUSTIVE") ? 2 : sizeof dims / sizeof dims[0];
    for (size_t d = 0; d < n_dims; d++) {
        const float y = -2.0f / (float)dims[d];
        for (uint64_t i = 0; i <= 0x7f800000u; i += stride) {
            const float x = u2f((uint32_t)i);
            const uint32_t a = f2u(sl_glibc_powf(x, y)), b = f2u(powf(x, y));
            if (a != b && bad++ < 3) fprintf(stderr, "  powf(%08x, %08x): %08x vs %08x\n", (uint32_t)i, f2u(y), a, b);
        }
    }
    static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, 3.0f, -3.0f,
                                    INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1e38f, -1e38f,
                                    0x1p-126f, 126.0f, 150.0f, -150.0f, 0.25f, 1e4f, 1e6f};
    const size_t ns = sizeof special / sizeof special[0];
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < ns; j++) {
            const uint32_t a = f2u(sl_glibc_powf(special[i], special[j]));
            const uint32_t b = f2u(powf(special[i], special[j]));
            if (a != b && bad++ < 6) fprintf(stderr, "  powf(%g, %g): %08x vs %08x\n", special[i], special[j], a, b);
        }
    const long pairs = getenv("SLUICE_LIBM_EXHAUSTIVE") ? 100000000L : 2000000L;
    for (long k = 0; k < pairs; k++) {
        /* random x over all floats; y random, or a small integer, or near 0 */
        const float x = u2f(rnd());
        const uint32_t sel = rnd() % 4;
        const float y = sel == 0 ? (float)((int)(rnd() % 65) - 32) : sel == 1 ? u2f(rnd() & 0xbf7fffffu) : u2f(rnd());
        const uint32_t a = f2u(sl_glibc_powf(x, y)), b = f2u(powf(x, y));
        if (a != b && bad++ < 9) fprintf(stderr, "  powf(%08x, %08x): %08x vs %08x\n", f2u(x), f2u(y), a, b);
    }
    CHECK_EQ_INT(bad, 0);
    sl_glibc_libm_force(-1);
}

/* the committed table is glibc's output (this variant's column) */
TEST(committed_table_is_glibcs)
{
    if (!oracle()) return;
    const bool fused = glibc_fused();
    int bad = 0;
    for (size_t i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        const uint32_t got = f2u(libc((fn_id)r->fn, u2f(r->x), u2f(r->y)));
        if (got != (fused ? r->fused : r->plain) && bad++ < 5)
            CHECK_MSG(0, "glibc %s(%08x, %08x) = %08x", FN_NAME[r->fn], r->x, r->y, got);
    }
    CHECK_EQ_INT(bad, 0);
}

/* SLUICE_LIBM_WRITE=FILE: the table's rows from glibc, both variants (the
 * plain column from a child under the tunable, which answers on stdout) */
/* the value rounded once from double: what a C runtime that evaluates in
 * double gives (mingw-w64's did) */
static float rounded_once(fn_id f, float x, float y)
{
    switch (f) {
    case F_EXP: return (float)exp(x);
    case F_LOG: return (float)log(x);
    case F_SIN: case F_SINCOS_S: return (float)sin(x);
    case F_COS: case F_SINCOS_C: return (float)cos(x);
    case F_TANH: return (float)tanh(x);
    case F_EXPM1: return (float)expm1(x);
    case F_POW: return (float)pow(x, y);
    default: return 0;
    }
}

/* An input of the ranges the engine feeds: |x| < 100 for exp and tanh,
 * (0, 1e4) for log, |x| < 1e4 for sin and cos (rope angles); powf's y
 * is a rope exponent -2/d or random. */
static void random_input(fn_id f, uint32_t *x, uint32_t *y)
{
    const uint32_t sel = rnd() % 4;
    float v = (float)(rnd() % 2000000) / 10000.0f - 100.0f;
    if (sel == 3) v *= 100.0f;
    *x = sel == 0 ? rnd() : f2u(v);
    if (f == F_LOG || f == F_POW) *x &= 0x7fffffffu;
    *y = f == F_POW ? (rnd() % 2 ? f2u(-2.0f / (float)(16 * (1 + rnd() % 32))) : rnd()) : 0;
}

/* n inputs for f: fixed specials, then inputs where the two variants
 * differ (found with the twins; the table's values still come from
 * glibc), then where glibc differs from the once-rounded value, then
 * random ones */
static void pick_inputs(fn_id f, uint32_t *xs, uint32_t *ys, int n)
{
    int k = 0;
    static const float fixed[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 10.0f, -10.0f, 88.0f, 88.7f,
                                  89.0f, -103.5f, -104.0f, 120.0f, -120.0f, 1e10f, 22.0f, 1e-40f,
                                  INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && k < n; i++, k++) {
        xs[k] = f2u(fixed[i]);
        ys[k] = f2u(-2.0f / 128.0f);
    }
    /* the only two floats whose expf differs between glibc's variants
     * (found by comparing the twins' variants over every float) */
    if (f == F_EXP) {
        xs[k] = 0x4202422fu, ys[k++] = 0;
        xs[k] = 0xc27c65d9u, ys[k++] = 0;
    }
    for (int want = 0; want < 2; want++)
        for (long tries = 0, got = 0; got < n / 4 && tries < 4000000L; tries++) {
            uint32_t x, y;
            random_input(f, &x, &y);
            bool hit;
            if (want == 0) {
                sl_glibc_libm_force(1);
                const uint32_t a = f2u(twin(f, u2f(x), u2f(y)));
                sl_glibc_libm_force(0);
                hit = a != f2u(twin(f, u2f(x), u2f(y)));
                sl_glibc_libm_force(-1);
            } else {
                hit = f2u(libc(f, u2f(x), u2f(y))) != f2u(rounded_once(f, u2f(x), u2f(y)));
            }
            if (!hit) continue;
            xs[k] = x;
            ys[k] = y;
            k++;
            got++;
        }
    while (k < n) {
        random_input(f, &xs[k], &ys[k]);
        k++;
    }
}

static int write_table(const char *path)
{
    const int per_fn = 512;
    static uint32_t xs[F_N][512], ys[F_N][512];
    if (!oracle() || !glibc_fused()) {
        fprintf(stderr, "the table needs glibc 2.36 running its FMA forms\n");
        return 1;
    }
    for (int f = 0; f < F_N; f++) pick_inputs((fn_id)f, xs[f], ys[f], per_fn);
    /* plain column: a child under the tunable prints its results */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "GLIBC_TUNABLES=" TUNABLE_PLAIN " /proc/%d/exe --print-plain", (int)getpid());
    FILE *child = popen(cmd, "r");
    FILE *out = fopen(path, "w");
    if (!child || !out) return 1;
    for (int f = 0; f < F_N; f++)
        for (int i = 0; i < per_fn; i++) {
            uint32_t plain = 0;
            if (fscanf(child, "%" SCNx32, &plain) != 1) return 1;
            fprintf(out, "%s %08" PRIx32 " %08" PRIx32 " %08" PRIx32 " %08" PRIx32 "\n", FN_NAME[f], xs[f][i], ys[f][i],
                    f2u(libc((fn_id)f, u2f(xs[f][i]), u2f(ys[f][i]))), plain);
        }
    pclose(child);
    return fclose(out) != 0;
}

static int print_plain(void)
{
    const int per_fn = 512;
    static uint32_t xs[F_N][512], ys[F_N][512];
    for (int f = 0; f < F_N; f++) pick_inputs((fn_id)f, xs[f], ys[f], per_fn);
    for (int f = 0; f < F_N; f++)
        for (int i = 0; i < per_fn; i++) printf("%08" PRIx32 "\n", f2u(libc((fn_id)f, u2f(xs[f][i]), u2f(ys[f][i]))));
    return 0;
}

/* the plain variant: this binary again with glibc's FMA forms turned off */
TEST(plain_variant_in_a_child)
{
    if (!oracle() || !sl_glibc_libm_fused() || getenv("GLIBC_TUNABLES")) return;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "GLIBC_TUNABLES=" TUNABLE_PLAIN " /proc/%d/exe >/dev/null", (int)getpid());
    CHECK_EQ_INT(system(cmd), 0);
}
#endif

int main(int argc, char **argv)
{
#if ORACLE_POSSIBLE
    if (argc > 1 && !strcmp(argv[1], "--print-plain")) return print_plain();
    if (getenv("SLUICE_LIBM_WRITE")) return write_table(getenv("SLUICE_LIBM_WRITE"));
#endif
    (void)argc;
    (void)argv;
    load_table();
    RUN(twins_match_committed_glibc_table);
#if ORACLE_POSSIBLE
    RUN(float_functions_equal_glibc_over_the_floats);
    RUN(powf_equals_glibc);
    RUN(committed_table_is_glibcs);
    RUN(plain_variant_in_a_child);
#endif
    free(rows);
    return TEST_REPORT();
}
