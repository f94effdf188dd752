/*
 * common/cpu.h — the one probe of the CPU's SIMD and crypto features.
 *
 * Owns: which instruction-set extensions this process may use (x86: CPU
 * support and the OS saving the register state, libgcc's checks include
 * XGETBV; aarch64: the kernel's HWCAP word, getauxval(AT_HWCAP)), and on
 * aarch64 the Main ID register (MIDR_EL1: implementer and part number),
 * read with MRS where the kernel emulates it (HWCAP_CPUID). Probed once on
 * first use. The TEA kernels, the Base64 decoder and the floor kernels
 * (crypto/floor) pick their code from it; the fingerprint (pcb.machine()) reports it. Thread-safe: racing
 * first calls compute and publish the same words.
 */
#ifndef PCB_COMMON_CPU_H
#define PCB_COMMON_CPU_H

#include <stdint.h>

enum {
    PCB_CPU_SSSE3 = 1 << 0,
    PCB_CPU_AVX2 = 1 << 1,
    PCB_CPU_AVX512 = 1 << 2,     /* AVX-512 F and BW */
    PCB_CPU_AVX512VBMI = 1 << 3, /* and VBMI */
    PCB_CPU_AES_CLMUL = 1 << 4,  /* AES-NI, PCLMULQDQ and SSE4.1 (crypto/floor) */
    PCB_CPU_VAES = 1 << 5,       /* VAES and VPCLMULQDQ on 256 bits (with AVX2) */
    PCB_CPU_VAES512 = 1 << 6,    /* and on 512 bits: AVX-512 F, BW, VL, the OS saving the
                                    opmask and zmm state (XCR0 bits 5-7) */
    /* aarch64 (from HWCAP) */
    PCB_CPU_ASIMD = 1 << 8,      /* Advanced SIMD (NEON) */
    PCB_CPU_ARM_AES = 1 << 9,    /* ARMv8 Crypto Extensions: AESE/AESD */
    PCB_CPU_ARM_PMULL = 1 << 10, /* 64x64 carry-less multiply (GCM's GHASH) */
    PCB_CPU_ARM_SHA1 = 1 << 11,
    PCB_CPU_ARM_SHA2 = 1 << 12,
    PCB_CPU_ARM_SHA512 = 1 << 13,
};

/* The PCB_CPU_* bits this CPU and OS support. With PCB_FORCE_FALLBACKS
 * defined at build time (setup.py's PCB_FORCE_FALLBACKS=1) the aarch64
 * probe is the portable one: no getauxval, NEON assumed (the aarch64 ABI
 * has it) and no crypto bits. */
unsigned pcb_cpu_features(void);

/* The feature names of pcb_cpu_features() as Linux's /proc/cpuinfo spells
 * them ("aes", "pmull", "sha1", "sha2", "sha512", "asimd"; x86: "ssse3",
 * "avx2", ...), space-separated, into buf (always terminated). */
void pcb_cpu_feature_names(char *buf, unsigned cap);

/* aarch64: MIDR_EL1 (implementer << 24 | variant << 20 | architecture << 16
 * | part << 4 | revision), 0 where unreadable or not aarch64. */
uint64_t pcb_cpu_midr(void);

#endif /* PCB_COMMON_CPU_H */
