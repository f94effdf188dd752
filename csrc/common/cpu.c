/*
 * common/cpu.c — the SIMD feature probe (see cpu.h).
 */
#include "common/cpu.h"

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
#endif
    __atomic_store_n(&g_features, f, __ATOMIC_RELEASE);
    return f & ~CPU_DONE;
}
