/*
 * common/cpu.c — the SIMD feature probe (see cpu.h).
 */
#include "common/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#define CPU_DONE (1u << 31)

static unsigned g_features;

unsigned pcb_cpu_features(void)
{
    unsigned f = __atomic_load_n(&g_features, __ATOMIC_ACQUIRE);
    if (f & CPU_DONE)
        return f & ~CPU_DONE;
    f = CPU_DONE;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("ssse3"))
        f |= PCB_CPU_SSSE3;
    if (__builtin_cpu_supports("avx2"))
        f |= PCB_CPU_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
        f |= PCB_CPU_AVX512;
        if (__builtin_cpu_supports("avx512vbmi"))
            f |= PCB_CPU_AVX512VBMI;
    }
    if (__builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul")
        && __builtin_cpu_supports("sse4.1"))
        f |= PCB_CPU_AES_CLMUL;
    unsigned a, b, c, d; /* CPUID.7.0:ECX bits 9 (VAES), 10 (VPCLMULQDQ); older compilers' */
    if ((f & PCB_CPU_AVX2) && (f & PCB_CPU_AES_CLMUL) /* __builtin_cpu_supports lack them */
        && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 9)) && (c & (1u << 10)))
        f |= PCB_CPU_VAES;
#endif
    __atomic_store_n(&g_features, f, __ATOMIC_RELEASE);
    return f & ~CPU_DONE;
}
