/*
 * common/status.h — how every C layer reports failure without Python.
 *
 * Owns: the error classes (pcb_err), the status record a failing call fills
 * in (pcb_status: class, errno, message), and the helpers that fill it:
 * printf-style, from errno, from OpenSSL's error queue, out of memory. The
 * Python glue (py/pyutil) maps each class to one exception; nothing here
 * knows Python, so fuzzers and C tests link it as is.
 *
 * Convention: a function that can fail takes a `pcb_status *st` last and
 * returns 1 on success or 0 with *st set, so `return pcb_fail(st, ...)` ends
 * a failing path. Thread safety: the helpers touch only *st (and the calling
 * thread's errno / OpenSSL error queue).
 */
#ifndef PCB_COMMON_STATUS_H
#define PCB_COMMON_STATUS_H

/* Error classes; py/pyutil maps each to one Python exception. */
typedef enum {
    PCB_OK = 0,
    PCB_E_VALUE,       /* ValueError */
    PCB_E_TYPE,        /* TypeError */
    PCB_E_UNSUPPORTED, /* UnsupportedCipherError */
    PCB_E_DECRYPT,     /* DecryptionError */
    PCB_E_OPENSSL,     /* OpenSSLError, with OpenSSL's reason text */
    PCB_E_MEMORY,      /* MemoryError */
    PCB_E_OS,          /* OSError with os_errno */
    PCB_E_PERMISSION,  /* PermissionError */
    PCB_E_FORMAT,      /* store.StoreFormatError */
    PCB_E_RESERVED,    /* store.ReservedNameError */
    PCB_E_INTERRUPTED  /* the embedder gave up a wait (common/wait.h): py/ raises the
                          signal handler's pending exception (KeyboardInterrupt) */
} pcb_err;

typedef struct {
    pcb_err code;
    int os_errno; /* PCB_E_OS */
    char msg[480];
} pcb_status;

/* Sets st and returns 0: `return pcb_fail(st, PCB_E_VALUE, "...", ...);` */
int pcb_fail(pcb_status *st, pcb_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* PCB_E_OS from the current errno: "<what>: <strerror>"; returns 0. */
int pcb_fail_os(pcb_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records OpenSSL's queued error (its reason text) with context, clears the
 * queue; returns 0. */
int pcb_fail_openssl(pcb_status *st, const char *what);
/* PCB_E_MEMORY; returns 0. */
int pcb_oom(pcb_status *st);

/* OpenSSL's reason text for its last queued error, never NULL (for
 * messages that are not failures of the call at hand). */
const char *pcb_openssl_reason(char *buf, unsigned long cap);

#endif /* PCB_COMMON_STATUS_H */
