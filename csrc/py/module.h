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

/* The store calls whose keyword arguments py/store_options_py parses. */
typedef enum { PCB_STORE_CALL_OPEN, PCB_STORE_CALL_KERNEL, PCB_STORE_N_CALLS } pcb_store_call;
#define PCB_STORE_MAX_OPTIONS 32

/* One call's options as read from pycipherbench._options.OPTIONS at import:
 * names and defaults in table order, the subject (positional) first, and
 * each one's conversion (an index into store_options_py's table). */
typedef struct {
    PyObject *names, *defaults; /* tuples */
    unsigned char conv[PCB_STORE_MAX_OPTIONS];
    int n;
} pcb_store_call_table;

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
    pcb_store_call_table store_calls[PCB_STORE_N_CALLS];
    PyObject *options_unexpected; /* pycipherbench._options.unexpected */
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
/* fault_py.c: _fault and _fault_calls, the tests' fault plan (common/sys.h). */
extern PyMethodDef pcb_fault_functions[];
/* mmkv_py.c: the MMKV design model's functions (a capsule handle; issue 19). */
extern PyMethodDef pcb_mmkv_functions[];
/* store_options_py.c: the store calls' keyword arguments. Their names and
 * defaults are pycipherbench._options.OPTIONS, which the package hands to
 * _core._load_store_options at import (ValueError if the table and the C
 * conversions disagree; _core itself imports no Python module);
 * traverse/clear are the module's. */
int pcb_store_options_traverse(module_state *ms, visitproc visit, void *arg);
void pcb_store_options_clear(module_state *ms);
extern PyMethodDef pcb_store_options_functions[]; /* _store_options, _load_store_options */

/* Every argument of either call, as converted (borrowed: valid while the
 * call's arguments live); the fields of the other call stay zero. */
typedef struct {
    PyObject *path;                                 /* open: the subject */
    const char *workload;                           /* kernel: the subject */
    PyObject *master_key_file, *passphrase, *scrypt_n; /* open */
    double lock_timeout;                            /* open */
    PyObject *directory, *n_keys, *key_len, *value_len, *batch; /* kernel */
    const char *value_type;                         /* kernel */
    int use_passphrase;                             /* kernel: passphrase= */
    int encrypted, cache, faithful;
    const char *key_encryption, *value_encryption, *layout, *crypto_backend;
} pcb_store_kwargs;
/* Binds args (at most the subject) and kwargs to `call`'s options, the
 * table's defaults for the others, and converts each (bool: any truth value;
 * str: a str without NUL; float: PyFloat_AsDouble). Unknown names raise
 * _options.unexpected's TypeError (with a did-you-mean). func names the
 * call in messages. 1, or 0 with an exception set. */
int pcb_store_kwargs_parse(module_state *ms, pcb_store_call call, const char *func, PyObject *args,
                           PyObject *kwargs, pcb_store_kwargs *out);

/* The options Store() and store_bench() both take: the three names chosen
 * from their lists (ValueError naming the option otherwise) and the flags,
 * into *opt (its other fields zeroed). 1, or 0 with an exception. */
int pcb_store_options_arg(int encrypted, const char *key_encryption,
                          const char *value_encryption, const char *layout, int cache,
                          int faithful, pcb_store_options *opt);
/* crypto_backend= by name into opt (ValueError listing the names). */
int pcb_crypto_backend_arg(const char *name, pcb_store_options *opt);
/* scrypt_n=: 0 for the default, else a power of two in [2, PCB_SCRYPT_N_MAX];
 * NULL is the default. */
int pcb_scrypt_arg(PyObject *obj, uint64_t *out);
/* master_key_file=: None (*out NULL) or a non-empty path-like, as a new
 * reference to its filesystem-encoded bytes. */
int pcb_key_file_arg(PyObject *obj, PyObject **out);
/* passphrase=: None (*pw NULL) or a non-empty str (UTF-8) or bytes; *pw
 * lives as long as obj. */
int pcb_passphrase_arg(PyObject *obj, const char **pw, size_t *len);

/* Store()'s arguments: the options, and the paths as fs-encoded bytes. */
typedef struct {
    pcb_store_options opt;
    PyObject *path, *mk; /* new references; mk NULL without a key file */
} pcb_store_open_args;
/* 1, or 0 with an exception set; release a->path and a->mk either way. */
int pcb_store_open_parse(module_state *ms, PyObject *args, PyObject *kwargs, pcb_store_open_args *a);

/* inspect_py.c: store_inspect. */
extern PyMethodDef pcb_inspect_functions[];

/* store_bench_py.c: check_store_bench, and the StoreKernel type (created
 * into ms, added to the module; 0 or -1). */
extern PyMethodDef pcb_store_bench_functions[];
int pcb_store_kernel_type_exec(PyObject *module, module_state *ms);

#endif /* PCB_PY_MODULE_H */
