/*
 * store/mmkv.h — a MODEL of Tencent MMKV's storage design (issue 19), written from its
 * public documentation and format description; no MMKV code. It is what the store
 * designs benchmark compares with ESP, not a reader of MMKV files.
 *
 * Owns: the model's two files and the in-memory map over them.
 *   <path>      mmap'ed, a multiple of 4 KiB: [u32 LE actual size][content], the content
 *               a 4-byte item-size holder varint then protobuf-style records appended,
 *               [varint name_len][name][varint value_len][value]; a later record of a name
 *               wins, an empty value removes it. When an append does not fit, the live
 *               records are written again from the start (full write-back, the sequence
 *               number incremented, a fresh IV), the file doubled until they fit.
 *   <path>.crc  mmap'ed meta: [u32 CRC-32 of the content's used bytes][u32 version]
 *               [u32 sequence][16-byte AES IV][u32 actual size], little-endian.
 *   With a crypt key (1..16 bytes, zero-padded to AES-128) the content is AES-128-CFB
 *   encrypted in-stream (appends continue the stream); there is NO integrity
 *   protection beyond the CRC: the encryption is unauthenticated (a flipped ciphertext
 *   bit flips the plaintext bit; the CRC is over ciphertext and can be recomputed).
 *   Durability: writes land in the shared mapping (page cache); pcb_mmkv_sync msyncs.
 *
 * Failures of the mapped files (issue 25): a store into a page of a MAP_SHARED
 * file that no longer backs it kills the process with SIGBUS (MMKV itself
 * has this hazard). The model instead:
 *   - reserves every block whenever a file is sized (open, and each growth
 *     of a write-back: pcb_sys_fallocate), so a full disk or RLIMIT_FSIZE
 *     fails the grow (OSError ENOSPC / EFBIG naming the file) before any
 *     store; the put that needed it is not applied, the model and the file
 *     stay as they were, and the handle stays usable;
 *   - guards every access to the mappings (common/busguard.h: a
 *     thread-local sigsetjmp point armed around the accesses, a handler that
 *     jumps to it only for a fault inside that handle's mappings and
 *     otherwise chains to the previous handler, e.g. faulthandler's): a
 *     fault becomes OSError (ESTALE with the sizes when another process cut
 *     the file below its mapping, EIO otherwise), and the handle is broken:
 *     every later call but close raises OSError (reopen it). A put whose
 *     record faulted is not applied in memory; the file keeps its last
 *     complete record (the CRC, header and meta are written last) unless the
 *     fault cut a full write-back short (then a reopen refuses the CRC) or
 *     hit the append right after one (the write-back, which drops the
 *     name's old record, stands: the name is absent);
 *   - makes every call load the first byte of both files' mappings, and a
 *     get (contains) the first and last mapped bytes of the record it
 *     answers from, also where the encrypted model answers from its
 *     plaintext copy: a file cut below those pages faults, so is refused;
 *   - checks the files' sizes (fstat) where a system call is made anyway:
 *     before a write-back grows the data file, and before each msync (a cut file fails the sync with
 *     ESTALE rather than calling the lost records durable).
 *   Not a system call per get or put: MMKV's reads and writes are memory
 *   speed, and the designs benchmark measures that (an fstat costs more
 *   than a get). Residual risk, therefore: a cut that leaves the pages a call
 *   touches is not seen until the next sync or write-back; and a file cut
 *   in the middle of a page leaves the rest of that page reading as zeros
 *   without a fault, so a get of a record there (unencrypted) may say absent
 *   or return zeroed bytes, and a put landing there returns but its bytes
 *   never reach the file (the next sync says so).
 *   On a file system that cannot reserve blocks (pcb_sys_fallocate's sparse
 *   fallback) a full disk is a fault, handled as above. A SIGBUS handler
 *   installed after the last open (signal.signal, faulthandler.enable) sits
 *   on top of the guard's: the next open puts the guard back on top.
 *
 * Thread safety: a handle has a mutex; every call takes it, so a handle may be shared
 * between threads. Different handles on one file are not coordinated (MMKV's
 * multi-process mode is not modelled). Units: bytes.
 */
#ifndef PCB_STORE_MMKV_H
#define PCB_STORE_MMKV_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

typedef struct pcb_mmkv pcb_mmkv; /* opaque */

/* Opens (creating when absent) the model at path; key_len 0 is unencrypted. A CRC
 * mismatch or a malformed content is PCB_E_FORMAT (MMKV would discard or try to
 * recover; the model refuses). 1 with *out, or 0 with *st. */
int pcb_mmkv_open(const char *path, const uint8_t *key, size_t key_len, pcb_mmkv **out,
                  pcb_status *st);
/* 1 with *value (a malloc'ed copy; free it) and *value_len if name is present, 0 if
 * absent, -1 with *st (out of memory, a broken handle, a fault). */
int pcb_mmkv_get(pcb_mmkv *m, const uint8_t *name, size_t name_len, uint8_t **value,
                 size_t *value_len, pcb_status *st);
/* 1 if present, 0 if absent, -1 with *st (a broken handle, a fault). */
int pcb_mmkv_contains(pcb_mmkv *m, const uint8_t *name, size_t name_len, pcb_status *st);
/* Appends a record (value_len 0 removes the name); a full write-back when it does
 * not fit. 1, or 0 with *st. */
int pcb_mmkv_put(pcb_mmkv *m, const uint8_t *name, size_t name_len, const uint8_t *value,
                 size_t value_len, pcb_status *st);
/* msync of both mappings (MS_SYNC), after checking that neither file was cut
 * below its mapping (else OSError ESTALE: the records past the cut are lost,
 * and msync would call them durable). 1, or 0 with *st. */
int pcb_mmkv_sync(pcb_mmkv *m, pcb_status *st);
/* Live entries; the file's size; the content's used bytes. */
size_t pcb_mmkv_count(pcb_mmkv *m);
size_t pcb_mmkv_file_size(pcb_mmkv *m);
size_t pcb_mmkv_used(pcb_mmkv *m);
/* Unmaps, wipes the key and the plaintext copy, frees. NULL is a no-op. */
void pcb_mmkv_close(pcb_mmkv *m);

/* CRC-32 (zlib's polynomial), continuing from crc (0 to start). */
uint32_t pcb_crc32(uint32_t crc, const uint8_t *p, size_t n);

#endif /* PCB_STORE_MMKV_H */
