/* cpu.h - what the CPU we run on can execute, asked once per process.
 *
 * The one place that talks to the hardware about instruction sets: x86
 * cpuid/xgetbv, Linux/Android getauxval(AT_HWCAP) on aarch64 (Apple's
 * sysctl would go here too), nothing elsewhere (every feature false). The
 * kernel dispatch (quant/quant.c, ops/attn_kernels.c) decides what to use
 * from these answers. */
#ifndef SL_UTIL_CPU_H
#define SL_UTIL_CPU_H

#include <stdbool.h>

typedef struct sl_cpu_features {
    bool avx2;      /* x86: AVX2 + FMA + F16C + BMI2, YMM state saved by the OS */
    bool avx512f;   /* x86: the above and AVX-512F, opmask and ZMM state saved */
    bool avx512bw;  /* x86: the above and AVX-512BW */
    bool avx512vnni; /* x86: the above and AVX512-VNNI (vpdpwssd / vpdpbusd on zmm) */
    bool fma_avx2;  /* x86: FMA and AVX2, YMM state saved (glibc's libm rule for its FMA forms) */
    bool neon;    /* aarch64: Advanced SIMD (always on ARMv8-A Linux, checked anyway) */
    bool dotprod; /* aarch64: SDOT/UDOT (ARMv8.2-A dot-product extension) */
    bool i8mm;    /* aarch64: SMMLA/USDOT (ARMv8.6-A int8 matrix multiply) */
} sl_cpu_features;

/* Fills *f with what this CPU and OS support (all false where the
 * platform has no way to ask). The hardware is asked once per process (in
 * a virtual machine cpuid traps to the hypervisor); later calls copy the
 * answers, so dispatch may call it freely, from any thread. Cannot fail. */
void sl_cpu_detect(sl_cpu_features *f);

#endif
