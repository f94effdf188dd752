/*
 * py/module.h — what the Python glue files (csrc/py) share.
 *
 * Owns: module_state, the per-module (so per-interpreter) state that every
 * glue file reads: the fetched-cipher cache and the TEA implementation chosen
 * at import, the exception types, the store's heap types. module.c creates
 * and frees it; no glue file keeps a static PyObject*. Also declares what each
 * glue file hands module.c: its function table or its types' exec step.
 *
 * Thread safety: the state is written only while the module executes
 * (import) and freed with it; afterwards it is read-only, and the cache may
 * be read without the GIL (crypto/evp.h). Everything else here needs the GIL.
 * Units: none of its own (the entry points' sizes are bytes, times ns).
 */
#ifndef PCB_PY_MODULE_H
#define PCB_PY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "crypto/cipher.h"
#include "store/store.h"

typedef struct {
    pcb_evp_cache cache;
    int cache_ready;
    pcb_tea_impl tea_impl; /* never AUTO once the module has executed */
    PyObject *CipherBenchError;
    PyObject *DecryptionError;
    PyObject *UnsupportedCipherError;
    PyObject *OpenSSLError;
    PyObject *StoreFormatError;
    PyObject *ReservedNameError;
    PyTypeObject *StoreType;
    PyTypeObject *EditorType;
    PyTypeObject *KernelType;
    PyTypeObject *StoreKernelType;
} module_state;

static inline module_state *pcb_module_state(PyObject *module)
{
    return (module_state *)PyModule_GetState(module);
}

/* cipher_py.c: ciphers, encrypt, decrypt, check_kernel, canary, tea_impls;
 * and the Kernel type (created into ms, added to the module; 0 or -1). */
extern PyMethodDef pcb_cipher_functions[];
int pcb_kernel_type_exec(PyObject *module, module_state *ms);

/* backend_py.c: backends(); the backend= argument: 1 a C library (*backend
 * set), or 0 with ValueError (unknown, or a "py:" library: those are the
 * Python package's, dispatched before _core is called). */
extern PyMethodDef pcb_backend_functions[];
int pcb_backend_arg(const char *name, int *backend);

/* store_py.c: creates the Store and Editor types into ms and adds them to
 * the module; 0, or -1 with an exception set. */
int pcb_store_types_exec(PyObject *module, module_state *ms);
/* store_py.c: the options Store() and store_bench() both take: the three
 * names chosen from their lists (ValueError naming the option otherwise) and
 * the flags, into *opt (its other fields zeroed). 1, or 0 with an exception. */
/* crypto_backend= by name into opt (ValueError listing the names). */
int pcb_crypto_backend_arg(const char *name, pcb_store_options *opt);
int pcb_store_options_arg(int encrypted, const char *key_encryption,
                          const char *value_encryption, const char *layout, int cache,
                          int faithful, pcb_store_options *opt);

/* inspect_py.c: store_inspect. */
extern PyMethodDef pcb_inspect_functions[];

/* store_bench_py.c: check_store_bench, and the StoreKernel type (created
 * into ms, added to the module; 0 or -1). */
extern PyMethodDef pcb_store_bench_functions[];
int pcb_store_kernel_type_exec(PyObject *module, module_state *ms);

#endif /* PCB_PY_MODULE_H */
