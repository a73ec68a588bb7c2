/* cpu.c - instruction-set detection (see cpu.h). */
#include "util/cpu.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
/* bits of AT_HWCAP / AT_HWCAP2 (Linux arch/arm64 uapi hwcap.h), spelled out
 * so that an older libc's headers (bionic, musl) need not define them */
#define SL_HWCAP_ASIMD (1ul << 1)
#define SL_HWCAP_ASIMDDP (1ul << 20)
#define SL_HWCAP2_I8MM (1ul << 13)
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#if defined(__x86_64__)
/* AVX2, FMA, F16C and BMI2 present, and the OS saves the YMM registers.
 * Read from cpuid directly: not every compiler's __builtin_cpu_supports
 * knows "f16c". */
static bool x86_has_avx2(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28),
         f16c = c & (1u << 29);
    if (!(fma && osxsave && avx && f16c)) return false;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 6u) != 6u) return false; /* XMM and YMM state enabled */
    if (__get_cpuid_max(0, NULL) < 7) return false;
    __cpuid_count(7, 0, a, b, c, d);
    return (b & (1u << 5)) && (b & (1u << 8)); /* AVX2, BMI2 */
}

/* FMA and AVX2 usable: the test glibc's libm makes (ifunc-fma.h) to pick
 * its fused float functions, mirrored by util/libm_glibc.c. */
static bool x86_has_fma_avx2(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    if (!(c & (1u << 12)) || !(c & (1u << 27)) || !(c & (1u << 28))) return false;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 6u) != 6u || __get_cpuid_max(0, NULL) < 7) return false;
    __cpuid_count(7, 0, a, b, c, d);
    return (b & (1u << 5)) != 0;
}

/* AVX-512 foundation (and, in *bw, byte/word; in *vnni, BW and VNNI)
 * instructions present, and the OS saves the opmask and all 512-bit
 * register state (XCR0 bits 5-7). Asked only once AVX2 is known usable, so
 * leaf 7 and xgetbv exist. */
static void x86_avx512(bool *f, bool *bw, bool *vnni)
{
    unsigned a, b, c, d, xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 0xe6u) != 0xe6u) return; /* XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM */
    __cpuid_count(7, 0, a, b, c, d);
    *f = (b & (1u << 16)) != 0;
    *bw = *f && (b & (1u << 30)) != 0;
    *vnni = *bw && (c & (1u << 11)) != 0;
}
#endif

#if defined(__aarch64__) && defined(__APPLE__)
/* whether the integer sysctl `name` exists and is nonzero */
static bool apple_has(const char *name)
{
    int v = 0;
    size_t len = sizeof v;
    return sysctlbyname(name, &v, &len, NULL, 0) == 0 && v != 0;
}
#endif

/* What the hardware answered, asked once: in a virtual machine cpuid
 * traps to the hypervisor (microseconds), and kernel dispatch asks often. */
static void detect(sl_cpu_features *f)
{
    memset(f, 0, sizeof *f);
#if defined(__x86_64__)
    f->avx2 = x86_has_avx2();
    f->fma_avx2 = x86_has_fma_avx2();
    if (f->avx2) x86_avx512(&f->avx512f, &f->avx512bw, &f->avx512vnni);
#elif defined(__aarch64__) && defined(__linux__)
    const unsigned long hw = getauxval(AT_HWCAP);
    f->neon = (hw & SL_HWCAP_ASIMD) != 0;
    f->dotprod = f->neon && (hw & SL_HWCAP_ASIMDDP) != 0;
#if defined(AT_HWCAP2)
    f->i8mm = f->neon && (getauxval(AT_HWCAP2) & SL_HWCAP2_I8MM) != 0;
#endif
#elif defined(__aarch64__) && defined(__APPLE__)
    /* macOS on Apple silicon: no getauxval; the kernel answers feature
     * questions by sysctl (hw.optional.arm.FEAT_*, 1 when present; an
     * unknown name fails, read as absent). Not compiled here (no macOS
     * toolchain): see docs/ARCHITECTURE.md, "Platforms", "macOS (Apple silicon)". */
    f->neon = true;
    f->dotprod = apple_has("hw.optional.arm.FEAT_DotProd");
    f->i8mm = apple_has("hw.optional.arm.FEAT_I8MM");
#elif defined(__aarch64__)
    /* no way to ask (another OS): NEON is architectural on ARMv8-A, the
     * extensions are taken as absent */
    f->neon = true;
#endif
}

/* The answers packed as bits, with bit 31 set once they are known; any
 * thread may ask first (they all store the same value). */
enum { F_AVX2 = 1, F_AVX512F = 2, F_AVX512BW = 4, F_NEON = 8, F_DOTPROD = 16, F_I8MM = 32, F_FMA_AVX2 = 64,
       F_AVX512VNNI = 128, F_KNOWN = 1u << 31 };
static _Atomic unsigned g_features;

void sl_cpu_detect(sl_cpu_features *f)
{
    unsigned b = atomic_load_explicit(&g_features, memory_order_relaxed);
    if (!(b & F_KNOWN)) {
        sl_cpu_features d;
        detect(&d);
        b = F_KNOWN | (d.avx2 ? F_AVX2 : 0) | (d.avx512f ? F_AVX512F : 0) |
            (d.avx512bw ? F_AVX512BW : 0) | (d.neon ? F_NEON : 0) | (d.dotprod ? F_DOTPROD : 0) |
            (d.i8mm ? F_I8MM : 0) | (d.fma_avx2 ? F_FMA_AVX2 : 0) |
            (d.avx512vnni ? F_AVX512VNNI : 0);
        atomic_store_explicit(&g_features, b, memory_order_relaxed);
    }
    f->avx2 = b & F_AVX2;
    f->avx512f = b & F_AVX512F;
    f->avx512bw = b & F_AVX512BW;
    f->avx512vnni = b & F_AVX512VNNI;
    f->neon = b & F_NEON;
    f->dotprod = b & F_DOTPROD;
    f->i8mm = b & F_I8MM;
    f->fma_avx2 = b & F_FMA_AVX2;
}
