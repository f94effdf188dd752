/*
 * common/cpu.h — the one probe of the CPU's SIMD features.
 *
 * Owns: which instruction-set extensions this process may use (CPU support
 * and the OS saving the register state: libgcc's checks include XGETBV),
 * probed once on first use. The TEA kernels, the Base64 decoder and the
 * floor kernels (crypto/floor) pick their code from it; nothing else asks the CPU. Thread-safe: racing first
 * calls compute and publish the same word.
 */
#ifndef PCB_COMMON_CPU_H
#define PCB_COMMON_CPU_H

enum {
    PCB_CPU_SSSE3 = 1 << 0,
    PCB_CPU_AVX2 = 1 << 1,
    PCB_CPU_AVX512 = 1 << 2,     /* AVX-512 F and BW */
    PCB_CPU_AVX512VBMI = 1 << 3, /* and VBMI */
    PCB_CPU_AES_CLMUL = 1 << 4,  /* AES-NI, PCLMULQDQ and SSE4.1 (crypto/floor) */
    PCB_CPU_VAES = 1 << 5,       /* VAES and VPCLMULQDQ on 256 bits (with AVX2) */
};

/* The PCB_CPU_* bits this CPU and OS support (0 off x86). */
unsigned pcb_cpu_features(void);

#endif /* PCB_COMMON_CPU_H */
