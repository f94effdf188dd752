/*
 * common/cpu.c — the SIMD feature probe (see cpu.h).
 */
#include "common/cpu.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__aarch64__) && defined(__linux__) && !defined(PCB_FORCE_FALLBACKS)
#include <sys/auxv.h>
#define PCB_CPU_AUXV 1
/* The arm64 HWCAP bits (Linux's uapi asm/hwcap.h), spelled out so an older
 * libc's headers are enough. */
#define HWCAP_BIT_ASIMD (1ul << 1)
#define HWCAP_BIT_AES (1ul << 3)
#define HWCAP_BIT_PMULL (1ul << 4)
#define HWCAP_BIT_SHA1 (1ul << 5)
#define HWCAP_BIT_SHA2 (1ul << 6)
#define HWCAP_BIT_CPUID (1ul << 11)
#define HWCAP_BIT_SHA512 (1ul << 21)
#else
#define PCB_CPU_AUXV 0
#endif

#define CPU_DONE (1u << 31)

static unsigned g_features;
static uint64_t g_midr; /* read with g_features (published by its release store) */

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
    /* 512-bit VAES: libgcc's avx512f/bw/vl answers already include XGETBV;
     * checked here again (OSXSAVE, then XCR0 bits 1-2 and 5-7: xmm, ymm,
     * opmask, zmm0-15 upper halves, zmm16-31), as the floor's zmm loop needs
     * all of them saved across context switches. */
    if ((f & PCB_CPU_VAES) && (f & PCB_CPU_AVX512) && __builtin_cpu_supports("avx512vl")
        && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27))) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        (void)hi;
        if ((lo & 0xe6u) == 0xe6u)
            f |= PCB_CPU_VAES512;
    }
#elif PCB_CPU_AUXV
    unsigned long hw = getauxval(AT_HWCAP);
    f |= (hw & HWCAP_BIT_ASIMD) ? PCB_CPU_ASIMD : 0;
    f |= (hw & HWCAP_BIT_AES) ? PCB_CPU_ARM_AES : 0;
    f |= (hw & HWCAP_BIT_PMULL) ? PCB_CPU_ARM_PMULL : 0;
    f |= (hw & HWCAP_BIT_SHA1) ? PCB_CPU_ARM_SHA1 : 0;
    f |= (hw & HWCAP_BIT_SHA2) ? PCB_CPU_ARM_SHA2 : 0;
    f |= (hw & HWCAP_BIT_SHA512) ? PCB_CPU_ARM_SHA512 : 0;
    if (hw & HWCAP_BIT_CPUID) { /* the kernel emulates EL0 reads of the ID registers */
        uint64_t midr;
        __asm__ volatile("mrs %0, MIDR_EL1" : "=r"(midr));
        __atomic_store_n(&g_midr, midr, __ATOMIC_RELAXED);
    }
#elif defined(__aarch64__) && defined(__ARM_NEON)
    f |= PCB_CPU_ASIMD; /* part of the aarch64 ABI; crypto bits unknown without HWCAP */
#endif
    __atomic_store_n(&g_features, f, __ATOMIC_RELEASE);
    return f & ~CPU_DONE;
}

uint64_t pcb_cpu_midr(void)
{
    (void)pcb_cpu_features();
    return __atomic_load_n(&g_midr, __ATOMIC_RELAXED);
}

void pcb_cpu_feature_names(char *buf, unsigned cap)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {
        {PCB_CPU_SSSE3, "ssse3"}, {PCB_CPU_AVX2, "avx2"}, {PCB_CPU_AVX512, "avx512f avx512bw"},
        {PCB_CPU_AVX512VBMI, "avx512vbmi"}, {PCB_CPU_ARM_AES, "aes"}, {PCB_CPU_ARM_PMULL, "pmull"},
        {PCB_CPU_ARM_SHA1, "sha1"}, {PCB_CPU_ARM_SHA2, "sha2"}, {PCB_CPU_ARM_SHA512, "sha512"},
        {PCB_CPU_ASIMD, "asimd"},
    };
    unsigned f = pcb_cpu_features(), used = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(f & names[i].bit))
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? " " : "", names[i].name);
        if (n < 0 || (unsigned)n >= cap - used) {
            buf[used] = '\0'; /* no half name */
            break;
        }
        used += (unsigned)n;
    }
}
