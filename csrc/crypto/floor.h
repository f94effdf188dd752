/*
 * crypto/floor.h — pycipherbench's own short-message AES-GCM and AES-SIV on
 * AES-NI + PCLMULQDQ: the hardware floor every library is measured against.
 *
 * Owns: the floor key states (AES round keys, GHASH powers H^1..H^8, and
 * up to H^32 for the VAES loops, CMAC subkeys and CMAC(K, 0^128), all
 * prepared once at key setup), one call per
 * whole message, and the CPU rule: the kernels run only where the CPU has
 * AES-NI, PCLMULQDQ and SSE4.1 and OPENSSL_ia32cap hides nothing (as
 * OpenSSL, the floor treats a set mask, even an empty one, as "no AES instructions": the
 * hw_aes=False child); pcb_floor_missing() says what is missing, and every
 * other function must not be called then. The x86 code is compiled
 * with per-function target attributes, so the rest of the build needs no
 * flags; off x86 the file compiles to the "missing" answer alone.
 *   GCM: AES-128/256, 12-byte IV, one associated-data string, 16-byte tag.
 *        Messages run through the AES rounds 8 blocks at a time on AES-NI;
 *        from 256 bytes on, 16 blocks per pass on 256-bit VAES/VPCLMULQDQ
 *        (common/cpu.h PCB_CPU_VAES); from 512 bytes on, all of the
 *        message after its first 112 bytes 32 blocks per pass on 512-bit
 *        ones (PCB_CPU_VAES512: AVX-512 F+BW+VL; the last pass masked).
 *        Messages under 512 bytes never touch zmm (no AVX-512 clock
 *        effects for them), under 256 not even ymm.
 *        The environment variable PCB_FLOOR_VAES, read at key setup, narrows
 *        the choice for tests and benchmarks: "512" (or unset, or any other
 *        value: the widest the CPU has), "256" (no zmm), "none" (AES-NI
 *        only; so does the older PCB_FLOOR_NO_VAES set to anything). It
 *        never widens it.
 *   SIV: RFC 5297 AES-SIV-CMAC with 32- or 64-byte keys (first half S2V,
 *        second half CTR); S2V as an accumulator like crypto/siv.h's, so a
 *        caller with constant associated data folds it in once.
 * Key states are opaque, heap-allocated (64-byte aligned) and wiped when
 * freed. Thread safety: a key state is read-only after setup, so one may be
 * shared by threads; pcb_floor_missing is safe from any thread. Lengths are
 * bytes; no time is measured here.
 */
#ifndef PCB_CRYPTO_FLOOR_H
#define PCB_CRYPTO_FLOOR_H

#include <stddef.h>
#include <stdint.h>

#define PCB_FLOOR_TAG 16
#define PCB_FLOOR_GCM_IV 12

/* NULL if this CPU runs the floor kernels; otherwise what it lacks
 * ("AES-NI, PCLMULQDQ", or "x86-64 (AES-NI and PCLMULQDQ); this build is for
 * aarch64"). */
const char *pcb_floor_missing(void);

/* The widest GCM loop a key set up now would run: 512 or 256 (VAES bits),
 * 128 (AES-NI), 0 when pcb_floor_missing(). */
int pcb_floor_gcm_loop_bits(void);

typedef struct pcb_floor_gcm pcb_floor_gcm;
typedef struct pcb_floor_siv pcb_floor_siv;

/* key_len 16 or 32; NULL on a bad length or no memory. */
pcb_floor_gcm *pcb_floor_gcm_new(const uint8_t *key, size_t key_len);
void pcb_floor_gcm_free(pcb_floor_gcm *k); /* wipes; NULL is fine */
/* out = ct || tag (len + 16 bytes); out may equal in. */
void pcb_floor_gcm_seal(const pcb_floor_gcm *k, const uint8_t iv[12], const uint8_t *aad,
                        size_t aad_len, const uint8_t *in, size_t len, uint8_t *out);
/* in = ct (len bytes), tag its 16-byte tag; out gets len bytes (may equal in).
 * 1 authentic; 0 not, out wiped. The tag compare is constant-time. */
int pcb_floor_gcm_open(const pcb_floor_gcm *k, const uint8_t iv[12], const uint8_t *aad,
                       size_t aad_len, const uint8_t *in, size_t len, const uint8_t tag[16],
                       uint8_t *out);

/* key_len 32 (AES-128 halves) or 64 (AES-256 halves); NULL otherwise. */
pcb_floor_siv *pcb_floor_siv_new(const uint8_t *key, size_t key_len);
void pcb_floor_siv_free(pcb_floor_siv *k);
/* S2V: pcb_floor_s2v_start gives d = CMAC(K1, 0^128); fold in each
 * associated-data component with pcb_floor_s2v_add. */
void pcb_floor_s2v_start(const pcb_floor_siv *k, uint8_t d[16]);
void pcb_floor_s2v_add(const pcb_floor_siv *k, uint8_t d[16], const uint8_t *ad, size_t len);
/* out = V || CTR(p) (len + 16 bytes); d = S2V state after the components. */
void pcb_floor_siv_seal(const pcb_floor_siv *k, const uint8_t d[16], const uint8_t *p,
                        size_t len, uint8_t *out);
/* in = V || C (len >= 16); out gets len - 16 bytes. 1 authentic; 0 not (out
 * wiped; constant-time compare). */
int pcb_floor_siv_open(const pcb_floor_siv *k, const uint8_t d[16], const uint8_t *in,
                       size_t len, uint8_t *out);

#endif /* PCB_CRYPTO_FLOOR_H */
